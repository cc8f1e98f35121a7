"""DDL of Casper's SQLite store and its ordered migrations (llm's `_migrations` pattern).

Imports: sqlite3 only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

STORE_VERSION = 2


def _script(conn: sqlite3.Connection, sql: str) -> None:
    """Run statements one by one: `executescript` would commit the migration's transaction."""
    statement = ""
    for line in sql.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""


def _m001_initial(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE people (
            id TEXT PRIMARY KEY, name TEXT NOT NULL, contact_key TEXT
        );
        CREATE TABLE handles (
            address TEXT PRIMARY KEY, person_id TEXT NOT NULL, raw TEXT
        );
        CREATE INDEX handles_person ON handles(person_id);
        CREATE TABLE chats (
            id INTEGER PRIMARY KEY, guid TEXT NOT NULL, name TEXT NOT NULL,
            is_group INTEGER NOT NULL, members TEXT NOT NULL
        );
        CREATE TABLE messages (
            rowid INTEGER PRIMARY KEY, guid TEXT NOT NULL UNIQUE, chat_id INTEGER NOT NULL,
            sender TEXT NOT NULL, ts REAL NOT NULL, text TEXT NOT NULL, kind TEXT NOT NULL,
            edited INTEGER NOT NULL DEFAULT 0, reply_to TEXT, attachments TEXT, event TEXT,
            service TEXT
        );
        CREATE INDEX messages_chat_ts ON messages(chat_id, ts);
        CREATE INDEX messages_sender_ts ON messages(sender, ts);
        CREATE INDEX messages_ts ON messages(ts);
        CREATE TABLE reactions (
            guid TEXT PRIMARY KEY, target_guid TEXT NOT NULL, sender TEXT NOT NULL,
            kind INTEGER NOT NULL, emoji TEXT, ts REAL NOT NULL
        );
        CREATE INDEX reactions_target ON reactions(target_guid);
        CREATE TABLE contact_stats (person_id TEXT PRIMARY KEY, data TEXT NOT NULL);
        -- chats whose search chunks must be rebuilt; cleared only after the index is written,
        -- so a crash between the two stores is repaired by the next run
        CREATE TABLE dirty_chats (chat_id INTEGER PRIMARY KEY, full INTEGER NOT NULL DEFAULT 0);
        """,
    )


def _m002_stats_columns(conn: sqlite3.Connection) -> None:
    """Per-message fields for stats (local day/hour, emoji); guid uniqueness as a named index.

    The named UNIQUE index can be dropped during a bulk load and rebuilt once (random GUIDs
    cost ~7 µs per insert in a live index). lday/lhour/emoji start NULL here: the next index
    run fills them (the meta key `local_tz` is unset) and stats derive them until then.
    """
    _script(
        conn,
        """
        CREATE TABLE messages_v2 (
            rowid INTEGER PRIMARY KEY, guid TEXT NOT NULL, chat_id INTEGER NOT NULL,
            sender TEXT NOT NULL, ts REAL NOT NULL, text TEXT NOT NULL, kind TEXT NOT NULL,
            edited INTEGER NOT NULL DEFAULT 0, reply_to TEXT, attachments TEXT, event TEXT,
            service TEXT,
            lday INTEGER, -- local date as YYYYMMDD, in the zone meta.local_tz names
            lhour INTEGER, -- local hour 0-23, same zone
            emoji TEXT -- the emoji in `text`, space-separated; NULL when none
        );
        INSERT INTO messages_v2 (rowid, guid, chat_id, sender, ts, text, kind, edited, reply_to,
                                 attachments, event, service)
            SELECT rowid, guid, chat_id, sender, ts, text, kind, edited, reply_to, attachments,
                   event, service FROM messages;
        DROP TABLE messages;
        ALTER TABLE messages_v2 RENAME TO messages;
        CREATE UNIQUE INDEX messages_guid ON messages(guid);
        CREATE INDEX messages_chat_ts ON messages(chat_id, ts);
        CREATE INDEX messages_sender_ts ON messages(sender, ts);
        CREATE INDEX messages_ts ON messages(ts);
        -- system rows are few: this keeps counting them (every run's report) off a table scan
        CREATE INDEX messages_system ON messages(kind) WHERE kind = 'system';
        DELETE FROM meta WHERE key = 'local_tz';
        -- what the stats are made of (casper.stats.StatsState as JSON): new messages fold in
        ALTER TABLE contact_stats ADD COLUMN state TEXT;
        """,
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_m001_initial, _m002_stats_columns]


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migrations this store has not seen yet, each in its own transaction.

    `conn` must be in autocommit mode (isolation_level=None), as Store.open makes it.
    """
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            fn(conn)
            conn.execute("INSERT INTO _migrations(name) VALUES (?)", (fn.__name__,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
