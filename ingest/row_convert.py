"""One page of chat.db message rows → MessageRow / ReactionRow tuples: the row converter.

Every reader shares it (the single reader in `messages`, the range readers in `ranges`), so a
history converts the same however it is split. `convert_page` handles the common plain-text
row inline (it is most of any history) and hands every other row to `RowConverter.convert`;
the wording of non-plain rows lives in `row_text`.

Imports: ingest only (never casper).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields

from ingest.body import decode_attributed_body, decode_body_details
from ingest.columns import CARRIED
from ingest.connect import map_sqlite_error, reads_chat_db
from ingest.dates import APPLE_EPOCH_OFFSET, NS_THRESHOLD, apple_to_unix
from ingest.queries import (
    ASSOC_GUID,
    ASSOC_TYPE,
    BODY,
    CARRIED_AT,
    CHAT,
    DATE,
    FROM_ME,
    GUID,
    HANDLE,
    ITEM_TYPE,
    NEEDS_EXTRA,
    NO_EXTRA,
    ROWID,
    SERVICE,
    TEXT,
    THREAD,
    X_BALLOON,
    X_EDITED,
    X_EMOJI,
    X_PART_COUNT,
    X_PAYLOAD,
    X_RETRACTED,
    X_SUMMARY,
    AttachmentRow,
    fetch_attachments,
    fetch_extras,
    recoverable_rowids_sql,
)
from ingest.reactions import (
    POLL_VOTE,
    RecentTexts,
    is_tapback,
    parse_legacy_reaction,
    tapback_emoji,
    target_guid,
)
from ingest.records import DeferredReaction, MessageRow, ReactionRow
from ingest.row_text import ORC, REPL, annotate, describe_event, is_audio, join_parts, without_parts
from ingest.schema import Capabilities
from ingest.summary_info import parse_summary_info

_UNSENT = "unsent a message"
# where a row's carried columns (ingest.columns) are; None while nothing is carried, so the
# per-row slice is skipped (a slice costs ~60 ns a row, an `if` on None next to nothing)
_CARRIED: slice | None = slice(CARRIED_AT, None) if CARRIED else None
_QUOTE_ENDS = ("\u201d", '"')  # legacy reactions end with a closing quote; skip the regex otherwise


@dataclass(slots=True)
class ReadCounters:
    """What one read saw; per-row problems are counted here, never raised."""

    rows: int = 0
    messages: int = 0
    reactions: int = 0
    legacy_reactions: int = 0
    legacy_unmatched: int = 0  # legacy reactions whose quote matched no recent message: dropped
    decode_failures: int = 0
    events: int = 0
    recently_deleted_skipped: int = 0
    orphans: int = 0
    skipped: int = 0  # poll votes and tapbacks without a target

    def add(self, other: ReadCounters) -> None:
        """Count what another read (of another ROWID range) saw as well."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def _ts(value: int | float | None) -> float:
    # The common case (an int of nanoseconds) inline; apple_to_unix covers seconds and junk.
    if type(value) is int and value > NS_THRESHOLD:
        return value / 1e9 + APPLE_EPOCH_OFFSET
    return apple_to_unix(value) or 0.0


class RowConverter:
    """Per-read state (counters, legacy-reaction buffer, handle addresses) and the row mapper."""

    def __init__(self, conn: sqlite3.Connection, caps: Capabilities, stats: ReadCounters) -> None:
        self.conn, self.caps, self.stats = conn, caps, stats
        self.recent = RecentTexts()
        # (chat, text, guid) of this page's messages not yet in `recent`: one bulk extend per
        # page instead of a call per message; flushed before any legacy reaction looks it up.
        self.pending: list[tuple[int | None, str, str]] = []
        self.messages: list[MessageRow] = []  # this page's output
        self.reactions: list[ReactionRow] = []
        self._addresses: dict[int, str] | None = None
        self.recoverable = load_recently_deleted_rowids(conn, caps)
        # a reader of one ROWID range among several: legacy reactions its own texts cannot
        # settle are handed back instead of dropped (see DeferredReaction)
        self.defer_legacy = False
        self.deferred: list[DeferredReaction] = []

    def sync_recent(self) -> None:
        if self.pending:
            self.recent.extend(self.pending)
            self.pending.clear()

    def address(self, rowid: int) -> str | None:
        if self._addresses is None:
            self._addresses = dict(self.conn.execute("SELECT ROWID, id FROM handle"))
        return self._addresses.get(rowid) if rowid else None

    def fetch(
        self, rows: list[tuple], contiguous: bool
    ) -> tuple[dict[int, list[AttachmentRow]], dict[int, tuple]]:
        """Attachments and EXTRA_FIELDS for a batch of rows, in a few queries."""
        ids = [r[ROWID] for r in rows]
        atts = fetch_attachments(self.conn, self.caps, ids, contiguous=contiguous)
        wanted = [r[ROWID] for r in rows if r[NEEDS_EXTRA]]
        return atts, fetch_extras(self.conn, self.caps, wanted)

    def convert(self, row: tuple, atts: list[AttachmentRow], ex: tuple | None) -> None:
        """Any row (the general path): appends to `messages` or `reactions`, or counts a skip."""
        self.stats.rows += 1
        if row[ROWID] in self.recoverable:
            self.stats.recently_deleted_skipped += 1
            return
        ex = ex or NO_EXTRA
        kind = row[ASSOC_TYPE]
        if kind and (is_tapback(kind) or kind == POLL_VOTE):
            target = target_guid(row[ASSOC_GUID])
            if kind == POLL_VOTE or target is None:
                self.stats.skipped += 1
                return
            self._reaction(row, target, kind, tapback_emoji(kind, ex[X_EMOJI]))
        elif row[ITEM_TYPE]:
            event = describe_event(row[ITEM_TYPE], row[HANDLE], ex, self.address)
            self._message(row, ex, "", "system", event, None, False, False)
        else:
            self._body(row, atts, ex)

    def _reaction(self, row: tuple, target: str, kind: int, emoji: str | None) -> None:
        self.stats.reactions += 1
        self.reactions.append(self._reaction_row(row, target, kind, emoji))

    @staticmethod
    def _reaction_row(row: tuple, target: str, kind: int, emoji: str | None) -> ReactionRow:
        return _row(ReactionRow, (row[ROWID], row[GUID], target, kind, bool(row[FROM_ME]),
                                  row[HANDLE] or None, _ts(row[DATE]), emoji))  # fmt: skip

    def _body(self, row: tuple, atts: list[AttachmentRow], ex: tuple) -> None:
        """A regular row: decoded text, edits/unsends applied, annotations appended."""
        blob = row[BODY]
        body = decode_attributed_body(blob) if blob else None
        failed = body is None and bool(blob)
        if body is None:
            body = (self._text_of(row[ROWID]) if failed else row[TEXT]) or ""
        info, summary = ex[X_SUMMARY], None
        if info and (ex[X_EDITED] or ex[X_RETRACTED] or b"Rec" in info or b"Rrp" in info):
            summary = parse_summary_info(info)  # ~30 µs: only when it can hold `ec` or `rp`
        if summary is not None and summary.unsent_parts:
            if summary.is_fully_unsent(ex[X_PART_COUNT]):
                self._message(row, ex, "", "system", _UNSENT, None, False, False)
                return
            if blob and not failed:
                body = without_parts(blob, summary.unsent_parts) or body
        transcript = None
        if ORC in body and blob and not failed and any(is_audio(a) for a in atts):
            details = decode_body_details(blob)
            transcript = details.transcription if details else None
        body = join_parts(body) if ORC in body or REPL in body else body.strip()
        if not body and summary is not None and summary.edited_parts:
            body = " ".join(h[-1] for _, h in sorted(summary.edited_parts.items()) if h).strip()
        if ex[X_RETRACTED] and not body and not atts:
            self._message(row, ex, "", "system", _UNSENT, None, False, False)
            return
        legacy = None if atts or not body.endswith(_QUOTE_ENDS) else parse_legacy_reaction(body)
        if legacy is not None:
            self.sync_recent()
            target = self.recent.find(row[CHAT], legacy.quote)
            if target is None:
                seen = self.recent.seen(row[CHAT])
                if self.defer_legacy and seen < self.recent.per_chat:
                    self.deferred.append(
                        DeferredReaction(
                            self._reaction_row(row, "", legacy.kind, legacy.emoji),
                            row[CHAT],
                            legacy.quote,
                            seen,
                        )
                    )
                    return
                self.stats.legacy_unmatched += 1
                return
            self.stats.legacy_reactions += 1
            self._reaction(row, target, legacy.kind, legacy.emoji)
            return
        if body:
            self.pending.append((row[CHAT], body, row[GUID]))
        kind = "text"
        if atts or ex[X_PAYLOAD] or ex[X_BALLOON] or transcript:
            body, kind = annotate(body, atts, ex, transcript)
        edited = bool(ex[X_EDITED]) or (summary is not None and summary.edited)
        self._message(row, ex, body, kind, None, atts, edited, failed)

    def _text_of(self, rowid: int) -> str | None:
        """The `text` column of one row: the page query skips it when attributedBody is set."""
        found = self.conn.execute("SELECT text FROM message WHERE ROWID = ?", (rowid,)).fetchone()
        return found[0] if found else None

    def _message(
        self,
        row: tuple,
        ex: tuple,
        text: str,
        kind: str,
        event: str | None,
        atts: list[AttachmentRow] | None,
        edited: bool,
        failed: bool,
    ) -> None:
        """Append one message as a MessageRow."""
        stats = self.stats
        stats.messages += 1
        if event is not None:
            stats.events += 1
        if failed:
            stats.decode_failures += 1
        if row[CHAT] is None:
            stats.orphans += 1
        self.messages.append(
            _row(MessageRow, (row[ROWID], row[GUID], row[CHAT], row[HANDLE] or None,
                 bool(row[FROM_ME]), _ts(row[DATE]), text, kind, row[SERVICE], edited,
                 row[THREAD] or None, tuple(a.record for a in atts) if atts else (), event,
                 failed, apple_to_unix(ex[X_EDITED]), apple_to_unix(ex[X_RETRACTED]),
                 row[_CARRIED] if _CARRIED else ()))
        )  # fmt: skip


Page = tuple[list[MessageRow], list[ReactionRow]]  # one page of (messages, reactions)
# NamedTuple's own __new__ is a Python function (~3x the cost); this builds the same instance.
_row = tuple.__new__


def convert_page(conv: RowConverter, rows: list[tuple], contiguous: bool) -> Page:
    """One page of rows → (message tuples, reaction tuples), each in ROWID order."""
    try:
        atts, extras = conv.fetch(rows, contiguous)
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc) from exc
    msgs: list[MessageRow] = []
    conv.messages, conv.reactions = msgs, []
    pending, recoverable, convert = conv.pending, conv.recoverable, conv.convert
    decode = decode_attributed_body
    epoch, ns_min, carried = APPLE_EPOCH_OFFSET, NS_THRESHOLD, _CARRIED  # locals: per row
    add, note, new = msgs.append, pending.append, _row
    no_atts: list[AttachmentRow] = []
    previous, fast, orphans = None, 0, 0
    for row in rows:
        rowid = row[ROWID]
        if rowid == previous:
            continue  # the same message filed in a second chat
        previous = rowid
        # The common row (plain text, nothing attached, no extras) is handled inline, with the
        # same result as convert(); anything else takes the general path.
        if (
            row[ASSOC_TYPE]
            or row[ITEM_TYPE]
            or row[NEEDS_EXTRA]
            or rowid in atts
            or (rowid in recoverable)
        ):
            convert(row, atts.get(rowid, no_atts), extras.get(rowid))
            continue
        blob = row[BODY]
        body = (decode(blob) if blob else row[TEXT]) or ""
        if (blob and not body) or ORC in body or REPL in body:
            convert(row, no_atts, None)  # undecodable, or with placeholders
            continue
        body = body.strip()
        if body:
            if body[-1] in _QUOTE_ENDS:
                convert(row, no_atts, None)  # maybe a legacy reaction
                continue
            note((row[CHAT], body, row[GUID]))
        date = row[DATE]
        ts = date / 1e9 + epoch if type(date) is int and date > ns_min else _ts(date)
        chat = row[CHAT]
        if chat is None:
            orphans += 1
        add(new(MessageRow, (rowid, row[GUID], chat, row[HANDLE] or None, bool(row[FROM_ME]), ts,
                             body, "text", row[SERVICE], False, row[THREAD] or None, (), None,
                             False, None, None, row[carried] if carried else ())))  # fmt: skip
        fast += 1
    stats = conv.stats
    stats.rows += fast
    stats.messages += fast
    stats.orphans += orphans
    conv.sync_recent()
    return msgs, conv.reactions


@reads_chat_db
def load_recently_deleted_rowids(conn: sqlite3.Connection, caps: Capabilities) -> set[int]:
    """ROWIDs parked in Recently Deleted (still in `message`, unlinked from their chat)."""
    sql = recoverable_rowids_sql(caps)
    return {r[0] for r in conn.execute(sql)} if sql else set()
