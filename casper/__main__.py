"""`casper` and `python -m casper` (the service's auto-start spawns `python -m casper serve`).

The read commands a person runs most (`search`, `show`, `stats`, `contacts`, `chats`) take the
thin path when it understands their arguments (casper/cli/thin.py): no typer, no command
modules. Everything else, `--help` included, is the full typer app.
"""

from __future__ import annotations

import sys

from casper.cli.thin import run


def main() -> None:
    """The console entry point."""
    code = run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    # here, not at the top: `app` is built on first use (casper.cli.__getattr__), typer and
    # every command module with it, which the thin path never needs
    from casper.cli import app

    app(prog_name="casper")


if __name__ == "__main__":
    main()
