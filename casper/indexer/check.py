"""The cheap check an ingest run starts with: has anything changed since the last run?

A run with nothing new must cost milliseconds (it runs before every index refresh), so this
compares the store's saved watermarks and counts with chat.db's, and reads only the few older
rows edited or unsent since then. Imports: ingest, casper.store, casper.stats. Split from
`casper.indexer.pipeline` (the run's control flow stays there).
"""

from __future__ import annotations

from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

import ingest
from casper.stats import zone_id
from casper.store.db import Store
from ingest.dates import APPLE_EPOCH_OFFSET
from ingest.records import Message

if TYPE_CHECKING:
    import sqlite3


def contacts_signature(path: Path | None) -> str:
    """A cheap fingerprint of the AddressBook files (names change → people are rebuilt)."""
    if path is None or not path.exists():
        return "none"
    files = [path] if path.is_file() else sorted(path.glob("**/*.abcddb"))
    return ";".join(f"{f}:{f.stat().st_mtime_ns}:{f.stat().st_size}" for f in files if f.is_file())


def changed_since_last_run(
    store: Store, conn: sqlite3.Connection, caps: ingest.Capabilities, watermark: int
) -> list[Message]:
    """Rows up to `watermark` (already stored) edited or unsent since the last run."""
    edited_after = store.meta_float("edited_after")
    last_date = store.meta_float("last_date")
    return (
        ingest.read_changed(
            conn,
            caps,
            upto_rowid=watermark,
            since_date_unix=last_date,
            # never before Apple's epoch: an unset date_edited (0) must not match
            edited_after_unix=max(edited_after, APPLE_EPOCH_OFFSET),
        )
        if watermark
        else []
    )


def nothing_to_do(
    store: Store,
    state: ingest.SourceState,
    *,
    rebuild: bool,
    watermark: int,
    changed: list[Message],
    contacts_sig: str,
    tz: tzinfo,
    indexing: bool,
) -> bool:
    """True when the store (and, with `indexing`, the search index) is already up to date."""
    return (
        not rebuild
        and watermark == state.max_rowid
        and not changed
        and int(store.meta_float("source_count")) == state.message_count
        and int(store.meta_float("deleted_rowid")) == state.max_deleted_rowid
        and int(store.meta_float("recoverable_count")) == state.recoverable_count
        and store.get_meta("contacts_sig") == contacts_sig
        and not store.names_pending()  # a migrated store: read the cards' names
        and store.get_meta("local_tz") == zone_id(tz)
        # dirty chats only matter when this run also maintains the search index
        and not (indexing and store.dirty_chats())
    )
