"""`casper stats`: one person's precomputed stats, or computed for a --since/--until range."""

from __future__ import annotations

from typing import Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, guarded


@app.command()
@guarded
def stats(
    person: Annotated[str, typer.Argument(help="name, handle or id")],
    since: Annotated[str | None, typer.Option("--since", help="ISO date or phrase")] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="ISO date or phrase (whole day)")
    ] = None,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """One person's stats (precomputed; computed for the range with --since/--until)."""
    from casper.cli import reads

    reads.stats(person, since=since, until=until, home=home, json=json, no_service=no_service)
