"""`casper chats`: list chats with the ids that `search --chat` takes."""

from __future__ import annotations

from casper.cli.base import Home, Json, Verbose, app, config, guarded
from casper.dates.zones import local_tz


@app.command()
@guarded
def chats(home: Home = None, json: Json = False, verbose: Verbose = False) -> None:
    """Chats with their ids, kind, message counts and last activity, newest first."""
    from casper.app.chats import list_chats
    from casper.app.runtime import open_store
    from casper.cli.base import print_json
    from casper.cli.render import chats_table, console

    cfg = config(home)
    if not cfg.store_path.exists():
        from casper.cli.invocation import missing_index

        raise missing_index(cfg)
    rows = list_chats(open_store(cfg), local_tz(cfg.timezone))
    if json:
        print_json(rows)
        return
    out = console()
    out.print(chats_table(rows))
