"""SQL composed from Capabilities: a real column where it exists, `NULL AS col` where it doesn't."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from posixpath import basename

from ingest.columns import CARRIED
from ingest.connect import reads_chat_db
from ingest.records import Attachment
from ingest.schema import Capabilities

IN_CHUNK = 500  # ROWIDs per IN (…) list, well under SQLite's variable limit

# (alias, SQL expression) in the order row_convert.py unpacks them; a missing column reads NULL.
# Only what every row needs is here: each column costs Python time on every row, so the rarely
# set ones (system-row details, link payloads, edit/unsend data) come from EXTRA_FIELDS, fetched
# per page for the few rows whose `needs_extra` flag is set. BLOBs are CAST so a UTF-16
# database can't transcode them.
MESSAGE_FIELDS: tuple[tuple[str, str], ...] = (
    ("ROWID", "m.ROWID"),
    ("guid", "m.guid"),
    # Read only when there is no attributedBody: most modern rows carry both, and the decoded
    # body wins; a body that fails to decode fetches its `text` separately (rare).
    ("text", "CASE WHEN ifnull(length(m.attributedBody), 0) = 0 THEN m.text END"),
    ("attributedBody", "CAST(m.attributedBody AS BLOB)"),
    ("handle_id", "m.handle_id"),
    ("is_from_me", "m.is_from_me"),
    ("date", "m.date"),
    ("service", "m.service"),
    ("item_type", "m.item_type"),
    ("associated_message_type", "m.associated_message_type"),
    ("associated_message_guid", "m.associated_message_guid"),
    ("thread_originator_guid", "m.thread_originator_guid"),
)
EXTRA_FIELDS: tuple[tuple[str, str], ...] = (
    ("group_action_type", "m.group_action_type"),
    ("other_handle", "m.other_handle"),
    ("group_title", "m.group_title"),
    ("share_status", "m.share_status"),
    ("associated_message_emoji", "m.associated_message_emoji"),
    ("balloon_bundle_id", "m.balloon_bundle_id"),
    ("payload_data", "CAST(m.payload_data AS BLOB)"),
    ("date_edited", "m.date_edited"),
    ("date_retracted", "m.date_retracted"),
    ("message_summary_info", "CAST(m.message_summary_info AS BLOB)"),
    ("part_count", "m.part_count"),
)
NO_EXTRA = (None,) * (len(EXTRA_FIELDS) + 1)
# Positions in MESSAGE_FIELDS + (needs_extra, chat id), and in EXTRA_FIELDS after the ROWID:
# the row converter indexes rows by these; a test pins them to the field tuples above. The
# carried columns (ingest.columns) come last, from CARRIED_AT: `row[CARRIED_AT:]`.
(ROWID, GUID, TEXT, BODY, HANDLE, FROM_ME, DATE, SERVICE, ITEM_TYPE, ASSOC_TYPE, ASSOC_GUID,
 THREAD, NEEDS_EXTRA, CHAT, CARRIED_AT) = range(15)  # fmt: skip
(X_ACTION, X_OTHER_HANDLE, X_TITLE, X_SHARE_STATUS, X_EMOJI, X_BALLOON, X_PAYLOAD, X_EDITED,
 X_RETRACTED, X_SUMMARY, X_PART_COUNT) = range(1, 12)  # fmt: skip
# bplist stores the short keys `ec` (edit history) and `rp` (unsent parts) as 0x52 + 2 bytes.
_SUMMARY_HINTS = ("X'526563'", "X'527270'")

ATTACHMENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("transfer_name", "a.transfer_name"),
    ("filename", "a.filename"),
    ("mime_type", "a.mime_type"),
    ("emoji_image_short_description", "a.emoji_image_short_description"),
    ("is_sticker", "a.is_sticker"),
)


@dataclass(frozen=True, slots=True)
class AttachmentRow:
    """An attachment as the page query returns it: the record plus what annotations need."""

    record: Attachment
    sticker: bool
    description: str | None

    @classmethod
    def from_row(cls, row: tuple) -> AttachmentRow:
        _, transfer_name, filename, mime, description, is_sticker = row
        name = transfer_name or (basename(filename) if filename else "")
        # Third-party stickers carry an asset key here, not words worth indexing.
        if description and description.endswith(".accessibilityLabel"):
            description = None
        record = Attachment(name=name, mime=mime or None)
        return cls(record, bool(is_sticker), description or None)


def _needs_extra(caps: Capabilities) -> str:
    """SQL flag: does this row need EXTRA_FIELDS (system row, emoji tapback, payload, edit…)?"""
    has = caps.has_column
    conds = [f"m.{c} != 0" for c in ("item_type", "date_edited", "date_retracted") if has(c)]
    conds += [f"m.{c} IS NOT NULL" for c in ("balloon_bundle_id", "payload_data") if has(c)]
    if has("associated_message_emoji"):
        conds.append("m.associated_message_type % 1000 = 6")
    # CASE stops at the first true test where OR evaluates every term: the blob searches (the
    # costly part) run only for rows the cheap tests did not already flag.
    whens = [f"WHEN ({' OR '.join(conds)}) IS 1 THEN 1"] if conds else []
    if has("message_summary_info"):
        blob = "CAST(m.message_summary_info AS BLOB)"
        whens += [f"WHEN instr({blob}, {hint}) > 0 THEN 1" for hint in _SUMMARY_HINTS]
    return f"CASE {' '.join(whens)} ELSE 0 END" if whens else "0"


def _cols(caps: Capabilities, fields: tuple[tuple[str, str], ...]) -> list[str]:
    cols = [expr if caps.has_column(name) else f"NULL AS {name}" for name, expr in fields]
    if fields is MESSAGE_FIELDS and not caps.has_column("attributedBody"):
        cols[2] = "m.text"  # before attributedBody existed, `text` is the only body
    return cols


def _select_list(caps: Capabilities) -> str:
    return ", ".join([*_cols(caps, MESSAGE_FIELDS), _needs_extra(caps)])


def _carried(caps: Capabilities) -> str:
    """The carried columns (ingest.columns), after the chat id; NULL where chat.db lacks one."""
    return "".join(f", {c.select}" if caps.has_column(c.column) else ", NULL" for c in CARRIED)


def _from(caps: Capabilities) -> str:
    """The chat id and the carried columns, from `message m` plus the chat join (a LEFT JOIN, so
    orphans with no chat come out with NULL)."""
    # A message filed in two chats yields two rows, adjacent in ROWID order; the reader keeps
    # the first. The join beats a correlated subquery by a few microseconds per row.
    if caps.has_chat_join:
        return (
            f", j.chat_id{_carried(caps)} FROM message m "
            "LEFT JOIN chat_message_join j ON j.message_id = m.ROWID"
        )
    return f", NULL{_carried(caps)} FROM message m"


def page_sql(caps: Capabilities) -> str:
    """Message rows after a ROWID, in ROWID order; params: (after_rowid, limit)."""
    return f"SELECT {_select_list(caps)}{_from(caps)} WHERE m.ROWID > ? ORDER BY m.ROWID LIMIT ?"


def range_page_sql(caps: Capabilities) -> str:
    """Message rows in a ROWID range, in ROWID order; params: (after_rowid, upto_rowid, limit)."""
    return (
        f"SELECT {_select_list(caps)}{_from(caps)} WHERE m.ROWID > ? AND m.ROWID <= ? "
        "ORDER BY m.ROWID LIMIT ?"
    )


def rowids_page_sql(caps: Capabilities, count: int) -> str:
    """Message rows with one of `count` ROWIDs, in ROWID order; params: the ROWIDs."""
    marks = ",".join("?" * count)
    return f"SELECT {_select_list(caps)}{_from(caps)} WHERE m.ROWID IN ({marks}) ORDER BY m.ROWID"


def changed_sql(caps: Capabilities) -> str | None:
    """Rows edited/unsent after a time; params: (min_date, upto_rowid, after, after)."""
    # `m.date >= ?` drives Apple's message_idx_date. The unary `+` and the missing ORDER BY
    # keep the planner from walking the table in ROWID order instead (the caller sorts).
    if not caps.has_edits:
        return None
    edited, retracted = (
        f"m.{col}" if caps.has_column(col) else "NULL" for col in ("date_edited", "date_retracted")
    )
    return (
        f"SELECT {_select_list(caps)}{_from(caps)} "
        f"WHERE m.date >= ? AND +m.ROWID <= ? AND ({edited} > ? OR {retracted} > ?)"
    )


def attachments_sql(caps: Capabilities, *, count: int | None = None) -> str | None:
    """Attachments of many messages, keyed by message ROWID: a ROWID range, or `count` ROWIDs."""
    if not caps.has_attachments:
        return None
    cols = ", ".join(
        expr if caps.has_column(name, "attachment") else f"NULL AS {name}"
        for name, expr in ATTACHMENT_FIELDS
    )
    where = (
        "j.message_id BETWEEN ? AND ?"
        if count is None
        else f"j.message_id IN ({', '.join('?' * count)})"
    )
    return (
        f"SELECT j.message_id, {cols} FROM message_attachment_join j "
        f"JOIN attachment a ON a.ROWID = j.attachment_id "
        f"WHERE {where} ORDER BY j.message_id, j.attachment_id"
    )


def extras_sql(caps: Capabilities, count: int) -> str:
    """EXTRA_FIELDS of `count` ROWIDs (IN list); the first column is the ROWID."""
    cols = ", ".join(_cols(caps, EXTRA_FIELDS))
    marks = ", ".join("?" * count)
    return f"SELECT m.ROWID, {cols} FROM message m WHERE m.ROWID IN ({marks})"


def _padded(rowids: list[int]) -> Iterator[tuple[int, ...]]:
    """ROWIDs in fixed-size chunks (padded with -1) so SQLite reuses one prepared statement."""
    for i in range(0, len(rowids), IN_CHUNK):
        chunk = rowids[i : i + IN_CHUNK]
        yield (*chunk, *([-1] * (IN_CHUNK - len(chunk))))


@reads_chat_db
def fetch_attachments(
    conn: sqlite3.Connection, caps: Capabilities, rowids: list[int], *, contiguous: bool
) -> dict[int, list[AttachmentRow]]:
    """Attachments of sorted `rowids` by message ROWID; one range query when contiguous."""
    out: dict[int, list[AttachmentRow]] = {}
    if not rowids or not caps.has_attachments:
        return out
    if contiguous:
        rows = conn.execute(attachments_sql(caps) or "", (rowids[0], rowids[-1])).fetchall()
    else:
        sql = attachments_sql(caps, count=IN_CHUNK) or ""
        rows = [row for params in _padded(rowids) for row in conn.execute(sql, params)]
    for row in rows:
        out.setdefault(row[0], []).append(AttachmentRow.from_row(row))
    return out


@reads_chat_db
def fetch_extras(
    conn: sqlite3.Connection, caps: Capabilities, rowids: list[int]
) -> dict[int, tuple]:
    """EXTRA_FIELDS (ROWID first) of the given messages, keyed by ROWID."""
    sql = extras_sql(caps, IN_CHUNK)
    return {row[0]: row for params in _padded(rowids) for row in conn.execute(sql, params)}


def recoverable_rowids_sql(caps: Capabilities) -> str | None:
    if not caps.has_recoverable:
        return None
    return "SELECT DISTINCT message_id FROM chat_recoverable_message_join"


def deleted_guids_sql(caps: Capabilities) -> str | None:
    """Hard-delete tombstones after a ROWID; params: (after_rowid,)."""
    if not caps.has_deleted_messages:
        return None
    return "SELECT ROWID, guid FROM deleted_messages WHERE ROWID > ? ORDER BY ROWID"


ROWIDS_SQL = "SELECT group_concat(ROWID) FROM message"
