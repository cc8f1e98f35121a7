"""`casper show`: a message with its surrounding conversation."""

from __future__ import annotations

from typing import Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, guarded

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def show(
    ref: Annotated[str, typer.Argument(metavar="ID", help="message guid or rowid")],
    before: Annotated[int, typer.Option("--before", help="messages before")] = 5,
    after: Annotated[int, typer.Option("--after", help="messages after")] = 5,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """A message with its surrounding conversation."""
    from casper.cli import reads

    reads.show(ref, before=before, after=after, home=home, json=json, no_service=no_service)
