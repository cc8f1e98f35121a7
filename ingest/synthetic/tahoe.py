"""chat.db and AddressBook files as macOS Sequoia and Tahoe leave them, made from older ones.

Since Sequoia, Messages' chat.db holds triggers in syntax only Apple's SQLite build parses; stock
SQLite (Python's `sqlite3`) stops at the first query with `malformed database schema
(chat_service_on_insert_chat_message_join) - near "ON": syntax error` (the error other chat.db
readers report from real Macs, 2026). The real fixtures are older, so the tests and the
benchmark add such an entry themselves: a row inserted into `sqlite_master` with writable_schema,
as a Tahoe database has it. Apple's exact trigger text is not public; this one has the reported
name and table, and stock SQLite answers it with the reported error, word for word (the tests
assert it). Writes to the given file: only ever call it on a copy.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

TRIGGER_NAME = "chat_service_on_insert_chat_message_join"
TRIGGER_SQL = (
    f"CREATE TRIGGER {TRIGGER_NAME} AFTER INSERT ON chat_message_join BEGIN "
    "UPDATE chat SET service_name = (SELECT service FROM message WHERE ROWID = NEW.message_id) "
    "ON CONFLICT IGNORE WHERE ROWID = NEW.chat_id; END"
)
REPORTED_ERROR = f'malformed database schema ({TRIGGER_NAME}) - near "ON": syntax error'
CONTACTS_TRIGGER_NAME = "zabcdrecord_on_update_apple"
CONTACTS_TRIGGER_SQL = (
    f"CREATE TRIGGER {CONTACTS_TRIGGER_NAME} AFTER UPDATE ON ZABCDRECORD BEGIN "
    "UPDATE ZABCDRECORD SET Z_OPT = Z_OPT + 1 ON CONFLICT IGNORE WHERE Z_PK = NEW.Z_PK; END"
)
# Columns and tables newer than both fixtures, which Casper's readers must tolerate present or
# absent: `message.filter_action` / `filter_sub_action` (SMS filter categories, which
# imessage-exporter reads since its macOS 27 / iOS 27 release), and tables named like Tahoe's new
# triggers (message_index_state_*, index_metrics_*). Tahoe's other additions (polls, live
# translation, chat backgrounds) live in existing columns: balloon_bundle_id,
# associated_message_type 4000, message_summary_info, chat.properties.
NEWER_COLUMNS = {
    "message": ("filter_action INTEGER DEFAULT 0", "filter_sub_action INTEGER DEFAULT 0"),
}
NEWER_TABLES = (
    "CREATE TABLE IF NOT EXISTS message_index_state (message_id INTEGER PRIMARY KEY, "
    "state INTEGER)",
    "CREATE TABLE IF NOT EXISTS index_metrics (key TEXT PRIMARY KEY, value INTEGER)",
)


def add_trigger(db: Path, name: str = TRIGGER_NAME, table: str = "chat_message_join",
                sql: str = TRIGGER_SQL) -> None:  # fmt: skip
    """Insert one trigger stock SQLite cannot parse into `db`'s schema, and bump the schema
    cookie so a connection already open re-reads it (as after a macOS update's migration)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA writable_schema=ON")
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.execute(
            "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) "
            "VALUES ('trigger', ?, ?, 0, ?)",
            (name, table, sql),
        )
        conn.execute(f"PRAGMA schema_version={version + 1}")
    finally:
        conn.close()


def add_contacts_trigger(abcddb: Path) -> None:
    add_trigger(abcddb, CONTACTS_TRIGGER_NAME, "ZABCDRECORD", CONTACTS_TRIGGER_SQL)


def add_newer_schema(db: Path) -> None:
    """Add the columns and tables newer macOS versions have (where the table exists)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA writable_schema=ON")  # the file may already hold a trigger
        for table, columns in NEWER_COLUMNS.items():
            have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            for column in columns:
                if have and column.split()[0] not in have:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        for ddl in NEWER_TABLES:
            conn.execute(ddl)
    finally:
        conn.close()
