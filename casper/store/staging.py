"""Staging files: the rows an ingest worker process read, in the store's own table layout, copied
into the store by one `INSERT … SELECT` per table (inside SQLite: no Python per row).

A worker writes its staging file alone and closes it; only then does the store ATTACH it (inside
the ingest transaction, which SQLite ≥ 3.21 allows) and copy it in. SQLite cannot DETACH a file
the open transaction has read, so the files stay attached until it ends (`detach`).

Imports: sqlite3, casper.store.db.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from casper.store.db import put_message_rows, put_reaction_rows

# ATTACH inside a transaction needs SQLite 3.21; SQLite allows 10 attached files at once
# (SQLITE_MAX_ATTACHED's default), and the store keeps one slot for anything else.
ATTACH_IN_TRANSACTION = sqlite3.sqlite_version_info >= (3, 21, 0)
MAX_STAGED = 8


def staging_schema(conn: sqlite3.Connection) -> tuple[str, ...]:
    """The CREATE statements of a staging file, read from the store: its messages and reactions
    tables as they are (so `SELECT *` lines up column for column) and the one messages index a
    bulk load keeps (with the same indexes on both sides SQLite copies whole records)."""
    rows = conn.execute(
        "SELECT sql FROM main.sqlite_master WHERE sql IS NOT NULL AND ("
        "(type = 'table' AND name IN ('messages', 'reactions')) "
        "OR (type = 'index' AND name = 'messages_system')) ORDER BY type DESC, name"
    ).fetchall()
    return tuple(sql for (sql,) in rows)


class StagingWriter:
    """One worker's staging file: created owner-only, written in one transaction, no journal
    (a failed run throws the whole file away)."""

    def __init__(self, path: Path, schema: Sequence[str]) -> None:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=OFF")
        self.conn.execute("PRAGMA synchronous=OFF")
        for sql in schema:
            self.conn.execute(sql)
        self.conn.execute("BEGIN")

    def put(
        self, full: Sequence[tuple], plain: Sequence[tuple], reactions: Sequence[tuple]
    ) -> None:
        """Message rows (FULL_COLS / PLAIN_COLS) and reaction rows, as the store takes them."""
        put_message_rows(self.conn, full, plain)
        put_reaction_rows(self.conn, reactions)

    def close(self) -> None:
        self.conn.execute("COMMIT")
        self.conn.close()


def copy_in(conn: sqlite3.Connection, path: Path, alias: str) -> None:
    """Attach a finished staging file as `alias` and copy its rows into the store's tables, in
    ROWID order, as the store's own inserts would (a message the store already holds under
    that ROWID is replaced)."""
    conn.execute(f"ATTACH DATABASE ? AS {alias}", (str(path),))
    first = conn.execute(f"SELECT min(rowid) FROM {alias}.messages").fetchone()[0]
    stored = conn.execute("SELECT max(rowid) FROM main.messages").fetchone()[0]
    unique = any(row[2] for row in conn.execute("PRAGMA main.index_list(messages)"))
    # a plain INSERT lets SQLite move whole records (its transfer optimisation); REPLACE is
    # needed when a staged row may meet a stored one: the same ROWID, or (while the guid
    # index is live, outside a bulk load) the same guid
    fresh = first is None or stored is None or stored < first
    verb = "INSERT" if fresh and not unique else "INSERT OR REPLACE"
    conn.execute(f"{verb} INTO main.messages SELECT * FROM {alias}.messages")
    conn.execute(
        f"INSERT OR REPLACE INTO main.reactions SELECT * FROM {alias}.reactions ORDER BY rowid"
    )


def detach(conn: sqlite3.Connection, aliases: Sequence[str]) -> None:
    """Detach staging files once the ingest transaction is over (committed or rolled back)."""
    attached = {row[1] for row in conn.execute("PRAGMA database_list")}
    for alias in aliases:
        if alias in attached:
            conn.execute(f"DETACH DATABASE {alias}")
