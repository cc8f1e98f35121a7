"""`casper stats`: the figures and pictures of a person, a chat or group, or the owner overall
(all time, or computed for a --since/--until range); `--png` draws them into a file.

The options are parsed here (the request is checked in casper.app.requests); the body is
casper.cli.reads.stats, which the thin path runs too."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, guarded

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def stats(
    person: Annotated[
        str | None,
        typer.Argument(help="a person (name, handle or id), a group chat's name, or me"),
    ] = None,
    chat: Annotated[str | None, typer.Option("--chat", help="a chat: its id or name")] = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO date or phrase")] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="ISO date or phrase (whole day)")
    ] = None,
    by: Annotated[
        str | None, typer.Option("--by", help="messages over time by week or month")
    ] = None,
    png: Annotated[
        Path | None, typer.Option("--png", help="also draw the charts into this PNG file")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="replace an existing --png file (or a link there)")
    ] = False,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """Stats and pictures of a person, a chat or group, or you overall (no name, or `me`):
    messages over time, when (hour × weekday), streaks, reply times, who starts, quiet gaps."""
    from casper.cli import reads

    reads.stats(person, chat=chat, since=since, until=until, by=by, png=png, force=force,
                home=home, json=json, no_service=no_service)  # fmt: skip
