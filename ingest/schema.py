"""Which tables and columns this chat.db has: the schema drifts across macOS versions."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

_PROBED_TABLES = ("message", "attachment", "chat", "handle")


def table_columns(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    """Column names of `table` (empty when the table does not exist)."""
    return frozenset(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The live schema, probed once per connection; queries are composed from it."""

    tables: frozenset[str]
    message_columns: frozenset[str]
    attachment_columns: frozenset[str] = frozenset()
    chat_columns: frozenset[str] = frozenset()
    handle_columns: frozenset[str] = frozenset()

    @classmethod
    def probe(cls, conn: sqlite3.Connection) -> Capabilities:
        """Read sqlite_master and PRAGMA table_info; no message rows are touched."""
        tables = frozenset(
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        )
        cols = {t: table_columns(conn, t) if t in tables else frozenset() for t in _PROBED_TABLES}
        return cls(
            tables=tables,
            message_columns=cols["message"],
            attachment_columns=cols["attachment"],
            chat_columns=cols["chat"],
            handle_columns=cols["handle"],
        )

    def has_table(self, name: str) -> bool:
        return name in self.tables

    def has_column(self, name: str, table: str = "message") -> bool:
        columns = {
            "message": self.message_columns,
            "attachment": self.attachment_columns,
            "chat": self.chat_columns,
            "handle": self.handle_columns,
        }[table]
        return name in columns

    @property
    def has_attachments(self) -> bool:
        return "message_attachment_join" in self.tables and "attachment" in self.tables

    @property
    def has_recoverable(self) -> bool:
        """Ventura+ 'Recently Deleted': rows still in `message`, parked in this join table."""
        return "chat_recoverable_message_join" in self.tables

    @property
    def has_deleted_messages(self) -> bool:
        return "deleted_messages" in self.tables

    @property
    def has_edits(self) -> bool:
        return "date_edited" in self.message_columns or "date_retracted" in self.message_columns

    @property
    def has_chat_join(self) -> bool:
        return "chat_message_join" in self.tables
