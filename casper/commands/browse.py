"""`casper chats`: list chats with the ids that `search --chat` takes."""

from __future__ import annotations

from casper.commands.base import Home, Json, Verbose, app, config, guarded
from casper.timeutil import local_tz


@app.command()
@guarded
def chats(home: Home = None, json: Json = False, verbose: Verbose = False) -> None:
    """Chats with their ids, kind, message counts and last activity, newest first."""
    from casper.chat_list import list_chats
    from casper.commands.base import print_json
    from casper.render_text import chats_table, console
    from casper.runtime import open_store

    cfg = config(home)
    rows = list_chats(open_store(cfg), local_tz(cfg.timezone))
    if json:
        print_json(rows)
        return
    out = console()
    out.print(chats_table(rows))
