"""ChatDbWriter: explicit, low-level writes of Apple-shaped rows into a real chat.db schema."""

from __future__ import annotations

import random
import sqlite3
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from ingest.body import decode_attributed_body, encode_attributed_body
from ingest.synthetic import apple
from ingest.synthetic.apple import ORC, Body, apple_ns, apple_seconds
from ingest.synthetic.mutations import MessageMutations

OWNER_EMAIL = "casey.owner@example.com"


def _noop(*_args: Any) -> None:
    return None


class ChatDbWriter(MessageMutations):
    """Opens (creating from Apple's DDL if needed) a chat.db and writes rows like Messages does."""

    def __init__(
        self,
        path: Path | str,
        schema_sql: str | None = None,
        *,
        seed: int = 0,
        owner: str = OWNER_EMAIL,
        skip_unparsable: bool = False,
    ) -> None:
        self.path = Path(path)
        self.owner = owner
        self.conn = sqlite3.connect(self.path)
        if skip_unparsable:
            # Messages' own SQLite parses the triggers a chat.db holds since macOS Sequoia;
            # stock SQLite does not: this stand-in for Messages skips them (they never fire)
            self.conn.execute("PRAGMA writable_schema=ON")
        for name in apple.TRIGGER_FUNCTIONS:
            self.conn.create_function(name, -1, _noop, deterministic=True)
        # A scratch file: skipping fsyncs turns seconds of DDL and inserts into milliseconds.
        self.conn.execute("PRAGMA synchronous=OFF")
        if not self._has_table("message"):
            ddl = schema_sql if schema_sql is not None else apple.load_schema()
            self.conn.executescript(f"BEGIN;\n{ddl.rstrip().rstrip(';')};\nCOMMIT;")
        # Reopening an existing file must not replay the guids it already holds.
        state = self.conn.execute("SELECT group_concat(name || seq) FROM sqlite_sequence")
        self._rng = random.Random(f"chatdb-writer:{seed}:{state.fetchone()[0] or ''}")
        self.columns = {t: self._columns(t) for t in ("message", "chat", "handle", "attachment")}
        self._sql_cache: dict[tuple[str, tuple[str, ...]], str] = {}
        self._styles: dict[int, int] = {}
        self._members: dict[int, list[int]] = {}
        self._last_in_chat: dict[int, str | None] = {}
        self._account_guid = self.new_guid()

    def __enter__(self) -> ChatDbWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.conn.commit()
        else:
            self.conn.rollback()
        self.conn.close()

    def _has_table(self, name: str) -> bool:
        sql = "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?"
        return self.conn.execute(sql, (name,)).fetchone() is not None

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}

    def insert(self, table: str, values: dict[str, Any]) -> int:
        """Insert one row, silently dropping columns this schema version lacks; returns ROWID."""
        known = self.columns.get(table)
        cols = tuple(k for k in values if known is None or k in known)
        key = (table, cols)
        sql = self._sql_cache.get(key)
        if sql is None:
            marks = ", ".join("?" * len(cols))
            sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})"
            self._sql_cache[key] = sql
        cur = self.conn.execute(sql, [values[c] for c in cols])
        return int(cur.lastrowid or 0)

    def new_guid(self) -> str:
        """A deterministic upper-case UUID4 string, as Messages uses for guids."""
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4)).upper()

    # -- handles and chats -------------------------------------------------------------

    def add_handle(
        self,
        address: str,
        service: str = "iMessage",
        country: str = "us",
        person_centric_id: str | None = None,
    ) -> int:
        """A `handle` row; `address` is E.164 (+14155550132) or an email, as Messages stores it."""
        raw = address.lstrip("+") if address.startswith("+") else None
        return self.insert(
            "handle",
            {
                "id": address,
                "country": country,
                "service": service,
                "uncanonicalized_id": raw,
                "person_centric_id": person_centric_id,
            },
        )

    def _handle(self, rowid: int) -> tuple[str, str]:
        row = self.conn.execute("SELECT id, service FROM handle WHERE ROWID=?", (rowid,)).fetchone()
        if row is None:
            raise KeyError(f"no handle {rowid}")
        return row[0], row[1]

    def add_chat(
        self,
        handles: Sequence[int],
        display_name: str | None = None,
        group: bool | None = None,
        service: str | None = None,
    ) -> int:
        """A 1:1 (style 45) or group (style 43) chat with its `chat_handle_join` rows."""
        is_group = len(handles) > 1 if group is None else group
        first, first_service = self._handle(handles[0])
        service = service or first_service
        ident = f"chat{self._rng.randrange(10**17, 10**18)}" if is_group else first
        group_id = self.new_guid()
        rowid = self.insert(
            "chat",
            {
                "guid": f"{service};{'+' if is_group else '-'};{ident}",
                "style": 43 if is_group else 45,
                "state": 3,
                "account_id": self._account_guid,
                "chat_identifier": ident,
                "service_name": service,
                "room_name": ident if is_group else None,
                "account_login": f"E:{self.owner}",
                "is_archived": 0,
                "last_addressed_handle": self.owner,
                "display_name": display_name or "",
                "group_id": group_id,
                "is_filtered": 0,
                "successful_query": 1,
                "original_group_id": group_id,
            },
        )
        for handle in handles:
            self.add_chat_member(rowid, handle)
        return rowid

    def add_chat_member(self, chat: int, handle: int) -> None:
        """Add a participant to `chat_handle_join` (the owner is never listed)."""
        sql = "INSERT OR IGNORE INTO chat_handle_join (chat_id, handle_id) VALUES (?, ?)"
        self.conn.execute(sql, (chat, handle))
        self._members.pop(chat, None)

    def remove_chat_member(self, chat: int, handle: int) -> None:
        """Drop a participant, as Messages does when someone leaves a group."""
        sql = "DELETE FROM chat_handle_join WHERE chat_id=? AND handle_id=?"
        self.conn.execute(sql, (chat, handle))
        self._members.pop(chat, None)

    def set_chat_name(self, chat: int, name: str | None) -> None:
        """Set the group's `display_name` (pair it with a rename system event)."""
        self.conn.execute("UPDATE chat SET display_name=? WHERE ROWID=?", (name or "", chat))

    def _chat_handles(self, chat: int) -> list[int]:
        if chat not in self._members:
            sql = "SELECT handle_id FROM chat_handle_join WHERE chat_id=? ORDER BY handle_id"
            self._members[chat] = [r[0] for r in self.conn.execute(sql, (chat,))]
        return self._members[chat]

    def _chat_style(self, chat: int) -> int:
        style = self._styles.get(chat)
        if style is None:
            row = self.conn.execute("SELECT style FROM chat WHERE ROWID=?", (chat,)).fetchone()
            if row is None:
                raise KeyError(f"no chat {chat}")
            style = self._styles[chat] = int(row[0])
        return style

    # -- messages --------------------------------------------------------------------

    def _previous_guid(self, chat: int) -> str | None:
        if chat not in self._last_in_chat:
            sql = (
                "SELECT m.guid FROM chat_message_join j JOIN message m ON m.ROWID = j.message_id"
                " WHERE j.chat_id=? ORDER BY j.message_date DESC, m.ROWID DESC LIMIT 1"
            )
            row = self.conn.execute(sql, (chat,)).fetchone()
            self._last_in_chat[chat] = row[0] if row else None
        return self._last_in_chat[chat]

    def _sender(self, chat: int, from_me: bool, handle: int | None) -> int:
        if handle is not None:
            return handle if not (from_me and self._chat_style(chat) == 43) else 0
        if from_me and self._chat_style(chat) == 45:
            members = self._chat_handles(chat)
            return members[0] if members else 0
        if from_me:
            return 0
        raise ValueError("a received message needs its sender's handle")

    def add_message(
        self,
        chat: int | None,
        text: str,
        *,
        from_me: bool,
        handle: int | None = None,
        ts: datetime | float,
        body: Body = "text",
        guid: str | None = None,
        reply_to_guid: str | None = None,
        attachments: Sequence[tuple[str, str | None]] = (),
        service: str = "iMessage",
        date_edited: datetime | float | None = None,
        summary_info: bytes | None = None,
        **extra: Any,
    ) -> tuple[int, str]:
        """One message row (+ chat/attachment joins). `chat=None` writes an orphan message."""
        guid = guid or self.new_guid()
        full = ORC * len(attachments) + text
        date = apple_ns(ts)
        handle_id = self._sender(chat, from_me, handle) if chat is not None else (handle or 0)
        values: dict[str, Any] = {
            "guid": guid,
            "text": full if body in ("text", "both") else None,
            "attributedBody": encode_attributed_body(full)
            if body in ("attributed", "both")
            else None,
            "handle_id": handle_id,
            "service": service,
            "account": f"E:{self.owner}",
            "account_guid": self._account_guid,
            "date": date,
            "date_read": 0 if from_me else date + 45_000_000_000,
            "date_delivered": date + 2_000_000_000 if from_me else 0,
            "is_delivered": 1,
            "is_finished": 1,
            "is_from_me": int(from_me),
            "is_read": int(not from_me),
            "is_sent": int(from_me),
            "type": 0,
            "version": 10,
            "destination_caller_id": self.owner,
            "message_summary_info": summary_info
            if summary_info is not None
            else apple.DEFAULT_SUMMARY,
            "part_count": len(apple.split_parts(full)) or 1,
            "ck_sync_state": 0,
            "date_edited": apple_ns(date_edited) if date_edited is not None else 0,
            "date_retracted": 0,
            # Apple fills reply_to_guid on ordinary rows; it is NOT the inline-reply target.
            "reply_to_guid": self._previous_guid(chat) if chat is not None else None,
        }
        if reply_to_guid is not None:
            target = self.message_text(reply_to_guid) or ""
            parts = apple.split_parts(target) or [""]
            values["thread_originator_guid"] = reply_to_guid
            values["thread_originator_part"] = f"{len(parts) - 1}:0:{apple.utf16_len(parts[-1])}"
        values.update(extra)
        rowid = self.insert("message", values)
        if chat is not None:
            sql = "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?,?,?)"
            self.conn.execute(sql, (chat, rowid, date))
            self._last_in_chat[chat] = guid
        for name, mime in attachments:
            self._add_attachment(rowid, name, mime, ts, from_me)
        return rowid, guid

    def _add_attachment(
        self, message: int, name: str, mime: str | None, ts: datetime | float, from_me: bool
    ) -> int:
        guid = self.new_guid()
        created = int(apple_seconds(ts))
        d1, d2 = self._rng.randrange(256), self._rng.randrange(256)
        rowid = self.insert(
            "attachment",
            {
                "guid": guid,
                "created_date": created,
                "start_date": created + 2,
                "filename": f"~/Library/Messages/Attachments/{d1:02x}/{d2:02x}/{guid}/{name}",
                "uti": apple.uti_for(mime),
                "mime_type": mime,
                "transfer_state": 5,
                "is_outgoing": int(from_me),
                "transfer_name": name,
                "total_bytes": self._rng.randrange(80_000, 4_000_000),
                "is_sticker": 0,
                "hide_attachment": 0,
                "original_guid": guid,
            },
        )
        sql = "INSERT INTO message_attachment_join (message_id, attachment_id) VALUES (?, ?)"
        self.conn.execute(sql, (message, rowid))
        return rowid

    def message_text(self, guid_or_rowid: str | int) -> str | None:
        """The current body of a message as this writer stored it (attributedBody first)."""
        col = "ROWID" if isinstance(guid_or_rowid, int) else "guid"
        sql = f"SELECT text, attributedBody FROM message WHERE {col}=?"
        row = self.conn.execute(sql, (guid_or_rowid,)).fetchone()
        if row is None:
            return None
        decoded = decode_attributed_body(row[1])
        return decoded if decoded is not None else row[0]
