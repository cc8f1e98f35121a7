"""A rewritten history read again, keeping what did not change.

When chat.db no longer matches the store by ROWID and guid (casper.indexer.identity), the run
empties the store and reads chat.db whole, as `--rebuild` does, so every figure is what a clean
build of that chat.db gives. What it keeps is the search index: before the reset the store's
messages are copied aside (`snapshot`), and after the read they are compared by guid
(`settle`): only the chats whose messages or labels differ are chunked again, and a chunk
whose text did not change finds its vector again by its content hash, so unchanged messages
are never embedded twice.

Imports: casper.store (its connection, inside the run's transaction), ingest.columns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ingest.columns import SEARCHED

if TYPE_CHECKING:
    from casper.store.db import Store

LAST = "last_reconciled"  # store meta: the last rewrite found and what reading it again did
# what a message says (its chunks' text follows from these: the searched carried columns
# too) and where it is
_SAYS = ("sender", "ts", "text", "kind", *(c.name for c in SEARCHED))
_CONTENT = ", ".join(("chat_id", *_SAYS))


@dataclass(frozen=True, slots=True)
class Reconciled:
    """What reading a rewritten history again found, by message guid."""

    reason: str
    vanished: int  # held before, gone from chat.db
    new: int  # in chat.db, not held before
    renumbered: int  # the same message under another ROWID (its own, or its chat's)
    changed: int  # the same message with other text, time or sender
    kept: int  # the same message saying the same (its chunks' vectors are found again)
    chats: frozenset[int] = field(default_factory=frozenset)  # to chunk again (old ids and new)

    def to_dict(self) -> dict[str, str | int]:
        return {
            "reason": self.reason, "vanished": self.vanished, "new": self.new,
            "renumbered": self.renumbered, "changed": self.changed, "kept": self.kept,
            "chats_rechunked": len(self.chats),
        }  # fmt: skip


def snapshot(store: Store) -> None:
    """Copy the messages, chats and pending chats aside (temporary tables of this connection),
    inside the run's transaction and before the store is emptied."""
    conn = store.conn
    for name in ("before_messages", "before_chats", "before_dirty"):
        conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    conn.execute(
        f"CREATE TEMP TABLE before_messages AS SELECT rowid AS r, guid, {_CONTENT} FROM messages"
    )
    conn.execute("CREATE INDEX temp.before_guid ON before_messages(guid)")
    conn.execute("CREATE TEMP TABLE before_chats AS SELECT id, name, members FROM chats")
    conn.execute("CREATE TEMP TABLE before_dirty AS SELECT chat_id, full FROM dirty_chats")


def settle(store: Store, reason: str) -> Reconciled:
    """Compare the history just read with the snapshot; the chats that differ, with the counts.
    The chats an earlier run left to chunk are marked again (the reset cleared them)."""
    conn = store.conn

    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    vanished = one(
        "SELECT count(*) FROM temp.before_messages b "
        "WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.guid = b.guid)"
    )
    new = one(
        "SELECT count(*) FROM messages m "
        "WHERE NOT EXISTS (SELECT 1 FROM temp.before_messages b WHERE b.guid = m.guid)"
    )
    both = "FROM messages m JOIN temp.before_messages b ON b.guid = m.guid"
    same = " AND ".join(f"m.{c} IS b.{c}" for c in _SAYS)
    renumbered = one(f"SELECT count(*) {both} WHERE m.rowid != b.r OR m.chat_id != b.chat_id")
    kept = one(f"SELECT count(*) {both} WHERE {same}")
    changed = one(f"SELECT count(*) {both}") - kept
    now = f"SELECT rowid, guid, {_CONTENT} FROM messages"
    before = f"SELECT r, guid, {_CONTENT} FROM temp.before_messages"
    chats_now = "SELECT id, name, members FROM chats"
    chats_before = "SELECT id, name, members FROM temp.before_chats"
    differ = {
        c
        for (c,) in conn.execute(
            f"SELECT chat_id FROM ({before} EXCEPT {now}) "
            f"UNION SELECT chat_id FROM ({now} EXCEPT {before}) "
            f"UNION SELECT id FROM ({chats_before} EXCEPT {chats_now}) "
            f"UNION SELECT id FROM ({chats_now} EXCEPT {chats_before})"
        )
    }
    conn.execute(
        "INSERT INTO dirty_chats(chat_id, full) SELECT chat_id, full FROM temp.before_dirty "
        "WHERE true ON CONFLICT(chat_id) DO UPDATE SET full = max(full, excluded.full)"
    )
    for name in ("before_messages", "before_chats", "before_dirty"):
        conn.execute(f"DROP TABLE temp.{name}")
    return Reconciled(reason, vanished, new, renumbered, changed, kept, frozenset(differ))


def remember_reconciled(store: Store, figures: Mapping[str, object]) -> None:
    """Keep the last reconciliation's figures (and when) in the store, for `casper doctor`."""
    store.set_meta(LAST, json.dumps({**figures, "at": time.time()}))


def last_reconciled(store: Store) -> dict[str, Any] | None:
    """What `remember_reconciled` kept, or None."""
    try:
        found = json.loads(store.get_meta(LAST) or "null")
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
