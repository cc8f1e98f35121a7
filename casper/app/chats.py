"""`casper chats`: every chat with its id, members and message counts (for `--chat ID`).

Imports: casper.store, casper.dates.zones, casper.app.documents.
"""

from __future__ import annotations

from datetime import tzinfo

from casper.app.documents import ChatJson
from casper.dates.zones import iso
from casper.store.db import Store


def list_chats(store: Store, tz: tzinfo) -> list[ChatJson]:
    """Chats, most recently active first; `messages` counts texts (system events excluded)."""
    counts = {
        chat_id: (n, first, last)
        for chat_id, n, first, last in store.conn.execute(
            "SELECT chat_id, count(*), min(ts), max(ts) FROM messages "
            "WHERE kind != 'system' GROUP BY chat_id"
        )
    }
    names = store.names()
    rows: list[ChatJson] = []
    for chat in store.chats():
        n, first, last = counts.get(chat.id, (0, None, None))
        if chat.id == 0 and not n:
            continue  # the placeholder for orphan messages, when there are none
        rows.append(
            {
                "id": chat.id,
                "name": chat.name,
                "is_group": chat.is_group,
                "members": [names.get(p, p) for p in chat.members],
                "messages": n,
                "first": iso(first, tz),
                "last": iso(last, tz),
            }
        )
    rows.sort(key=lambda r: (r["last"] or "", r["id"]), reverse=True)
    return rows
