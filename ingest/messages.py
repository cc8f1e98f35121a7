"""chat.db message rows → Message / Reaction records, paged by ROWID, one query per page.

The readers (new rows, recent edits and unsends, deletions); each row is converted by
`row_convert`, shared with the range readers of a parallel read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from ingest.connect import map_sqlite_error, reads_chat_db
from ingest.dates import unix_to_apple_ns
from ingest.queries import (
    IN_CHUNK,
    ROWID,
    ROWIDS_SQL,
    changed_sql,
    deleted_guids_sql,
    page_sql,
    rowids_page_sql,
)
from ingest.reactions import RecentTexts
from ingest.records import Message, MessageRow, Reaction, ReactionRow
from ingest.row_convert import (  # ReadCounters and the loader are re-exported: `ingest` names them
    Page,
    ReadCounters,
    RowConverter,
    convert_page,
    load_recently_deleted_rowids,
)
from ingest.schema import Capabilities

__all__ = [
    "EDIT_WINDOW_S",
    "Page",
    "ReadCounters",
    "iter_pages",
    "iter_rows",
    "load_deleted_guids",
    "load_recently_deleted_rowids",
    "load_rowids",
    "read_changed",
    "read_rowids",
    "seed_recent",
]

# Apple allows edits for 15 minutes after sending and unsends for 2, so a message edited or
# unsent after the last run was sent at most 15 minutes before that run: bounding on
# `message.date` (indexed by Apple's message_idx_date) finds every one without a table scan.
# 20 minutes leaves room for clock skew between devices.
EDIT_WINDOW_S = 20 * 60
_SEED_ROWS = 2000


def iter_pages(
    conn: sqlite3.Connection,
    caps: Capabilities,
    after_rowid: int = 0,
    page_size: int = 5000,
    stats: ReadCounters | None = None,
) -> Iterator[Page]:
    """Rows with ROWID > after_rowid, one page per query, as (MessageRow, ReactionRow) lists.

    The rows hold the fields of `Message` / `Reaction` by name and in declaration order
    (`Message(*row)` builds the record); bulk readers use them directly and skip building
    ~200k dataclasses.
    """
    conv = RowConverter(conn, caps, stats if stats is not None else ReadCounters())
    sql = page_sql(caps)
    if after_rowid > 0:  # an incremental run: legacy reactions may quote the previous run's rows
        conv.recent = seed_recent(conn, caps, after_rowid)
    last = after_rowid
    while True:
        # fetchall per page: no statement stays open (pinning a WAL snapshot) across yields.
        try:
            rows = conn.execute(sql, (last, page_size)).fetchall()
            page = convert_page(conv, rows, True)  # reads attachments and handles too
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc) from exc
        yield page
        if len(rows) < page_size:
            return
        last = rows[-1][ROWID]


@reads_chat_db
def seed_recent(conn: sqlite3.Connection, caps: Capabilities, after_rowid: int) -> RecentTexts:
    """The texts an incremental read starts with: the last rows up to `after_rowid` (the
    previous run's), which legacy reactions in the new rows may quote."""
    seed = RowConverter(conn, caps, ReadCounters())
    if after_rowid > 0:
        sql = page_sql(caps)
        rows = conn.execute(sql, (max(0, after_rowid - _SEED_ROWS), _SEED_ROWS)).fetchall()
        convert_page(seed, [r for r in rows if r[ROWID] <= after_rowid], True)
    return seed.recent


def iter_rows(
    conn: sqlite3.Connection,
    caps: Capabilities,
    after_rowid: int = 0,
    page_size: int = 5000,
    stats: ReadCounters | None = None,
) -> Iterator[Message | Reaction]:
    """Every message/reaction with ROWID > after_rowid, in ROWID order, `page_size` per query."""
    for msgs, reacts in iter_pages(conn, caps, after_rowid, page_size, stats):
        records: list[Message | Reaction] = [Message(*t) for t in msgs]
        if reacts:
            records += [Reaction(*t) for t in reacts]
            records.sort(key=_rowid_of)
        yield from records


def _rowid_of(record: Message | Reaction) -> int:
    return record.rowid


@reads_chat_db
def read_changed(
    conn: sqlite3.Connection,
    caps: Capabilities,
    *,
    upto_rowid: int,
    since_date_unix: float,
    edited_after_unix: float,
) -> list[Message]:
    """Messages with ROWID ≤ upto_rowid edited or unsent after `edited_after_unix`."""
    sql = changed_sql(caps)
    if sql is None:
        return []
    after = unix_to_apple_ns(edited_after_unix)
    params = (unix_to_apple_ns(since_date_unix - EDIT_WINDOW_S), upto_rowid, after, after)
    conv = RowConverter(conn, caps, ReadCounters())
    rows = sorted(conn.execute(sql, params), key=lambda r: r[ROWID])
    return [Message(*t) for t in convert_page(conv, rows, False)[0]]


@reads_chat_db
def read_rowids(conn: sqlite3.Connection, caps: Capabilities, rowids: Sequence[int]) -> Page:
    """The rows with these ROWIDs, converted as a full read converts them (a legacy reaction
    is matched only against the texts among them), as (message tuples, reaction tuples)."""
    conv = RowConverter(conn, caps, ReadCounters())
    wanted = sorted(set(rowids))
    messages: list[MessageRow] = []
    reactions: list[ReactionRow] = []
    for i in range(0, len(wanted), IN_CHUNK):
        part = wanted[i : i + IN_CHUNK]
        rows = conn.execute(rowids_page_sql(caps, len(part)), part).fetchall()
        msgs, reacts = convert_page(conv, rows, False)
        messages += msgs
        reactions += reacts
    return messages, reactions


@reads_chat_db
def load_deleted_guids(
    conn: sqlite3.Connection, caps: Capabilities, after_rowid: int = 0
) -> tuple[list[str], int]:
    """GUIDs hard-deleted after `after_rowid` (deleted_messages tombstones), and the new max."""
    sql = deleted_guids_sql(caps)
    if sql is None:
        return [], after_rowid
    rows = conn.execute(sql, (after_rowid,)).fetchall()
    return [guid for _, guid in rows], (rows[-1][0] if rows else after_rowid)


@reads_chat_db
def load_rowids(conn: sqlite3.Connection) -> set[int]:
    """Every message ROWID: what a rescan compares against to find rows gone without a trace."""
    # One joined string parses ~2x faster than 200k one-column rows through the cursor.
    joined = conn.execute(ROWIDS_SQL).fetchone()[0]
    return set(map(int, joined.split(","))) if joined else set()
