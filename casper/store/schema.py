"""DDL of Casper's SQLite store and its ordered migrations (llm's `_migrations` pattern).

Imports: sqlite3, casper.errors.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from casper.errors import StoreOutdated


def _script(conn: sqlite3.Connection, sql: str) -> None:
    """Run statements one by one: `executescript` would commit the migration's transaction."""
    statement = ""
    for line in sql.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""


def _m001_initial(conn: sqlite3.Connection) -> None:
    """The store as it is today. Every release's stores carry this migration's name; a store
    written before the stats columns existed (layout 1, no release) is refused in `migrate`.

    guid uniqueness is a named index so a bulk load can drop it and rebuild it once (random
    GUIDs cost ~7 µs per insert in a live index).
    """
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
            rowid INTEGER PRIMARY KEY, guid TEXT NOT NULL, chat_id INTEGER NOT NULL,
            sender TEXT NOT NULL, ts REAL NOT NULL, text TEXT NOT NULL, kind TEXT NOT NULL,
            edited INTEGER NOT NULL DEFAULT 0, reply_to TEXT, attachments TEXT, event TEXT,
            service TEXT,
            lday INTEGER, -- local date as YYYYMMDD, in the zone meta.local_tz names
            lhour INTEGER, -- local hour 0-23, same zone
            emoji TEXT -- the emoji in `text`, space-separated; NULL when none
        );
        CREATE UNIQUE INDEX messages_guid ON messages(guid);
        CREATE INDEX messages_chat_ts ON messages(chat_id, ts);
        CREATE INDEX messages_sender_ts ON messages(sender, ts);
        CREATE INDEX messages_ts ON messages(ts);
        -- system rows are few: this keeps counting them (every run's report) off a table scan
        CREATE INDEX messages_system ON messages(kind) WHERE kind = 'system';
        CREATE TABLE reactions (
            guid TEXT PRIMARY KEY, target_guid TEXT NOT NULL, sender TEXT NOT NULL,
            kind INTEGER NOT NULL, emoji TEXT, ts REAL NOT NULL
        );
        CREATE INDEX reactions_target ON reactions(target_guid);
        -- state: what the stats are made of (casper.stats.StatsState as JSON): new messages fold in
        CREATE TABLE contact_stats (person_id TEXT PRIMARY KEY, data TEXT NOT NULL, state TEXT);
        -- chats whose search chunks must be rebuilt; cleared only after the index is written,
        -- so a crash between the two stores is repaired by the next run
        CREATE TABLE dirty_chats (chat_id INTEGER PRIMARY KEY, full INTEGER NOT NULL DEFAULT 0);
        """,
    )


def _m002_sender_chat_index(conn: sqlite3.Connection) -> None:
    """Who-did-I-talk-to-most counts as one GROUP BY over an index (no table rows read)."""
    _script(conn, "CREATE INDEX messages_sender_chat ON messages(sender, chat_id, ts);")


def _m003_person_names(conn: sqlite3.Connection) -> None:
    """Every name on a person's AddressBook card (first, last, nickname, organization, full),
    so a question that says "Sammy" or "Rivera" finds Sam Rivera's chats.

    A store from before this migration keeps its data; `names_pending` makes the next
    `casper index` re-read the people even when chat.db has nothing new (that run would
    otherwise be a no-op and the table would stay empty until the AddressBook changed).
    """
    _script(
        conn,
        """
        CREATE TABLE person_names (
            person_id TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
            PRIMARY KEY (person_id, kind, name)
        );
        INSERT OR REPLACE INTO meta(key, value) VALUES ('names_pending', '1');
        """,
    )


# In order, never edited once released. A chat.db column carried into the store
# (ingest.columns) gets its column in a migration of its own:
# `ALTER TABLE messages ADD COLUMN <name> <type>` (docs/development.md, "Adding a chat.db column").
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _m001_initial,
    _m002_sender_chat_index,
    _m003_person_names,
]


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migrations this store has not seen yet, each in its own transaction.

    `conn` must be in autocommit mode (isolation_level=None), as Store.open makes it.
    """
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    if done:  # refuse an early layout before later migrations try to build on it
        _refuse_early_layout(conn)
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
    _refuse_early_layout(conn)


def _refuse_early_layout(conn: sqlite3.Connection) -> None:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    if "lday" not in columns:
        raise StoreOutdated("this store was written by an early development build of Casper")
