"""Tapbacks, edits, unsends, system rows and deletions: the row changes Messages makes later."""

from __future__ import annotations

import plistlib
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ingest.body import decode_attributed_body, encode_attributed_body
from ingest.synthetic import apple
from ingest.synthetic.apple import ORC, Body, apple_ns, apple_seconds


class MessageMutations:
    """Mixed into ChatDbWriter; relies on its `conn`, `add_message` and `message_text`."""

    conn: sqlite3.Connection
    _last_in_chat: dict[int, str | None]

    if TYPE_CHECKING:
        # ChatDbWriter's, word for word: mypy checks the override, so the two cannot drift apart
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
        ) -> tuple[int, str]: ...

        def message_text(self, guid_or_rowid: str | int) -> str | None: ...

    def _first_mime(self, guid: str) -> str | None:
        sql = (
            "SELECT a.mime_type FROM message m JOIN message_attachment_join j"
            " ON j.message_id = m.ROWID JOIN attachment a ON a.ROWID = j.attachment_id"
            " WHERE m.guid=? ORDER BY a.ROWID LIMIT 1"
        )
        row = self.conn.execute(sql, (guid,)).fetchone()
        return row[0] if row else None

    # -- reactions, edits, unsends ------------------------------------------------------

    def add_reaction(
        self,
        target_guid: str,
        kind: int = 2000,
        *,
        from_me: bool,
        handle: int | None = None,
        ts: datetime | float,
        chat: int,
        emoji: str | None = None,
        part: int | None = None,
        body: Body = "both",
    ) -> tuple[int, str]:
        """A tapback row (2000–2007; 3000–3007 removes) pointing at `p:<part>/<target guid>`."""
        target = self.message_text(target_guid) or ""
        parts = apple.split_parts(target) or [""]
        index = len(parts) - 1 if part is None else part
        quoted = apple.quote_of(parts[index], self._first_mime(target_guid))
        fallback = apple.tapback_text(kind, quoted, emoji)
        return self.add_message(
            chat,
            fallback,
            from_me=from_me,
            handle=handle,
            ts=ts,
            body=body,
            associated_message_guid=f"p:{index}/{target_guid}",
            associated_message_type=kind,
            associated_message_range_location=0,
            associated_message_range_length=apple.utf16_len(parts[index]),
            associated_message_emoji=emoji if kind % 1000 == 6 else None,
            reply_to_guid=None,
        )

    def remove_reaction(
        self,
        target_guid: str,
        kind: int = 2000,
        *,
        from_me: bool,
        handle: int | None = None,
        ts: datetime | float,
        chat: int,
        emoji: str | None = None,
        body: Body = "both",
    ) -> tuple[int, str]:
        """Withdraw a tapback: a 3000-range row (`kind` may be given as the 2000-range one)."""
        kind = kind + 1000 if kind < 3000 else kind
        return self.add_reaction(
            target_guid,
            kind,
            from_me=from_me,
            handle=handle,
            ts=ts,
            chat=chat,
            emoji=emoji,
            body=body,
        )

    def edit_message(self, rowid: int, new_text: str, ts: datetime | float) -> None:
        """Edit the text part: `text` NULL, new attributedBody, date_edited, `ec` history plist."""
        row = self.conn.execute(
            "SELECT date, message_summary_info FROM message WHERE ROWID=?", (rowid,)
        ).fetchone()
        current = self.message_text(rowid)
        if row is None or current is None:
            raise KeyError(f"no message {rowid} with a body")
        parts = apple.split_parts(current) or [""]
        text_part = len(parts) - 1
        history = self._edit_history(row[1], text_part) or [(row[0] / 1e9, parts[-1])]
        history.append((apple_seconds(ts), new_text))
        full = ORC * text_part + new_text
        self.conn.execute(
            "UPDATE message SET text=NULL, attributedBody=?, date_edited=?, "
            "message_summary_info=? WHERE ROWID=?",
            (
                encode_attributed_body(full),
                apple_ns(ts),
                apple.edit_summary(history, text_part),
                rowid,
            ),
        )

    @staticmethod
    def _edit_history(blob: bytes | None, part: int) -> list[tuple[float, str]]:
        try:
            info = plistlib.loads(blob) if blob else {}
        except plistlib.InvalidFileException:
            return []
        entries = info.get("ec", {}).get(str(part), [])
        return [(e["d"], decode_attributed_body(e["t"]) or "") for e in entries]

    def unsend_message(self, rowid: int, ts: datetime | float) -> None:
        """Unsend: text and attributedBody NULL, date_retracted (+ date_edited), `rp` all parts."""
        parts = apple.split_parts(self.message_text(rowid) or "") or [""]
        when = apple_ns(ts)
        self.conn.execute(
            "UPDATE message SET text=NULL, attributedBody=NULL, date_retracted=?, date_edited=?, "
            "message_summary_info=? WHERE ROWID=?",
            (when, when, apple.unsend_summary(parts), rowid),
        )

    # -- system rows, legacy reactions, deletions ----------------------------------------

    def add_system_event(
        self,
        chat: int,
        item_type: int,
        group_action_type: int = 0,
        group_title: str | None = None,
        *,
        from_me: bool,
        handle: int | None = None,
        ts: datetime | float,
        other_handle: int = 0,
    ) -> tuple[int, str]:
        """A group event row: rename (2), add/remove member (1, 0/1), leave (3, 0)…; no body."""
        return self.add_message(
            chat,
            "",
            from_me=from_me,
            handle=handle if handle is not None else 0,
            ts=ts,
            body="none",
            part_count=None,
            message_summary_info=None,
            item_type=item_type,
            group_action_type=group_action_type,
            group_title=group_title,
            other_handle=other_handle,
        )

    def add_legacy_reaction(
        self,
        chat: int,
        verb: str,
        quoted_text: str,
        *,
        handle: int | None = None,
        ts: datetime | float,
        from_me: bool = False,
        body: Body = "both",
    ) -> tuple[int, str]:
        """An SMS-era reaction: an ordinary text row `Loved “…”` with no associated guid."""
        return self.add_message(
            chat,
            f"{verb} “{quoted_text}”",
            from_me=from_me,
            handle=handle,
            ts=ts,
            body=body,
            service="SMS",
        )

    def recently_delete(self, rowid: int, chat: int, ts: datetime | float) -> None:
        """Move a message to Recently Deleted: a recoverable join replaces its chat join."""
        self.conn.execute(
            "INSERT INTO chat_recoverable_message_join (chat_id, message_id, delete_date) "
            "VALUES (?, ?, ?)",
            (chat, rowid, apple_ns(ts)),
        )
        # Order matters: Apple's trigger deletes a message left with no join of either kind.
        self.conn.execute(
            "DELETE FROM chat_message_join WHERE chat_id=? AND message_id=?", (chat, rowid)
        )

    def hard_delete(self, rowid: int) -> None:
        """Delete a message for good; Apple's trigger records its guid in `deleted_messages`."""
        self.conn.execute("DELETE FROM message_attachment_join WHERE message_id=?", (rowid,))
        self.conn.execute("DELETE FROM message WHERE ROWID=?", (rowid,))
        self.conn.execute("DELETE FROM chat_message_join WHERE message_id=?", (rowid,))
        self.conn.execute("DELETE FROM chat_recoverable_message_join WHERE message_id=?", (rowid,))
        self._last_in_chat.clear()
