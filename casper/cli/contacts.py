"""`casper contacts`: the people in the index, with their handles and message counts."""

from __future__ import annotations

from casper.cli.base import Home, Json, NoService, Verbose, app, guarded

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def contacts(
    home: Home = None, json: Json = False, no_service: NoService = False, verbose: Verbose = False
) -> None:
    """People with handles and message counts."""
    from casper.cli import reads

    reads.contacts(home=home, json=json, no_service=no_service)
