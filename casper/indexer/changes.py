"""What an ingest run does to rows it stored before: apply later edits and unsends, remove
deleted rows (tombstoned, in Recently Deleted, or gone without a trace).

These are the rare paths that change history (the common run only appends), so they also
report what must be redone: the chats to re-chunk whole and the people whose stats are read
back from the store.

Imports: ingest, casper.store, casper.stats, casper.indexer (rows, identity), casper.records.
Split from `casper.indexer.pipeline` (the run's control flow stays there).
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING

import ingest
from casper.indexer.identity import Comparison
from casper.indexer.rows import Accumulator, to_stored
from casper.records import ME
from casper.stats import LocalClock
from casper.store.db import Store
from ingest.records import Message

if TYPE_CHECKING:
    import sqlite3


def apply_changed(
    store: Store,
    tz: tzinfo,
    changed: list[Message],
    handle_person: dict[int, str],
    owner: dict[int, str],
    acc: Accumulator,
) -> tuple[set[int], set[str]]:
    """Store edited/unsent messages; returns the chats to re-chunk whole and the people
    whose stats must be recomputed from the store."""
    clock = LocalClock(tz)
    dirty_full: set[int] = set()
    edited_people: set[str] = set()
    for m in changed:
        stored = to_stored(m, handle_person)
        store.upsert_messages([stored], local=clock)
        dirty_full.add(stored.chat_id)
        edited_people.update((stored.sender, owner.get(stored.chat_id, ME)))
        acc.max_edit = max(acc.max_edit, m.date_edited or 0.0, m.date_retracted or 0.0)
    return dirty_full, edited_people


def delete_gone(
    store: Store,
    conn: sqlite3.Connection,
    caps: ingest.Capabilities,
    compared: Comparison | None,
    senders: set[str],
) -> tuple[set[int], int]:
    """Remove tombstoned, recently deleted and vanished rows (those `compared` found: rows gone
    without a trace, and tapbacks); returns the chats they were in and the new tombstone
    watermark (their authors are added to `senders`)."""
    deleted_guids, deleted_rowid = ingest.load_deleted_guids(
        conn, caps, after_rowid=int(store.meta_float("deleted_rowid"))
    )
    gone_chats = store.delete_messages(deleted_guids, senders)
    recently = sorted(ingest.load_recently_deleted_rowids(conn, caps))
    gone_chats |= store.delete_rowids(recently, senders)
    if compared is not None and not compared.rewritten:
        gone_chats |= store.delete_rowids(compared.vanished, senders)
        store.delete_messages(compared.vanished_reactions)  # tapbacks: no chat to re-chunk
    return gone_chats, deleted_rowid
