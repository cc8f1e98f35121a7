"""`casper show`: a message with its surrounding conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from casper.cli.base import Home, Json, NoService, Verbose, app, config, guarded, print_json
from casper.dates.zones import local_tz

if TYPE_CHECKING:
    from casper.app.documents import ShowDoc


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
    from casper.cli.transport import execute

    args = {"ref": ref, "before": before, "after": after}
    cfg = config(home)
    data: ShowDoc = execute("show", args, cfg, no_service=no_service)
    if json:
        print_json(data)
        return
    from rich.text import Text

    from casper.cli.render import console, conversation_view, messages_from_doc

    out = console()
    out.print(Text(data["chat"]["name"] or "Unknown chat", style="bold"))
    tz = local_tz(cfg.timezone)  # the zone the document's timestamps were written in
    view = conversation_view(
        messages_from_doc(data["context"]), {}, tz, target=data["message"]["rowid"]
    )
    out.print(view)
