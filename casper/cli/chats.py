"""`casper chats`: list chats with the ids that `search --chat` takes."""

from __future__ import annotations

from casper.cli.base import Home, Json, Verbose, app, guarded

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def chats(home: Home = None, json: Json = False, verbose: Verbose = False) -> None:
    """Chats with their ids, kind, message counts and last activity, newest first."""
    from casper.cli import reads

    reads.chats(home=home, json=json)
