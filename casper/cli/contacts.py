"""`casper contacts`: the people in the index, with their handles and message counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from casper.cli.base import Home, Json, NoService, Verbose, app, config, guarded, print_json

if TYPE_CHECKING:
    from casper.app.documents import ContactJson


@app.command()
@guarded
def contacts(
    home: Home = None, json: Json = False, no_service: NoService = False, verbose: Verbose = False
) -> None:
    """People with handles and message counts."""
    from casper.cli.transport import execute

    rows: list[ContactJson] = execute("contacts", {}, config(home), no_service=no_service)
    if json:
        print_json(rows)
        return
    from rich.text import Text

    from casper.cli.render import console, contacts_notes, contacts_table

    out = console()
    out.print(contacts_table(rows, out.width))
    for note in contacts_notes(rows):
        out.print(Text(note, style="dim"))
