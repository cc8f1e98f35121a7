"""CLI commands, registered on `casper.cli.app`."""
