"""The bulk read: plain rows go from chat.db to the store inside SQLite, the rest through Python.

Python's sqlite3 costs ~1 µs per column fetched and again per value bound, which made a row
cost ~80k instructions end to end. Here chat.db is ATTACHed (read-only) to the store's own
connection and one `INSERT … SELECT` per ROWID range moves every *plain* row (text only, no
attachment, reaction, system event, edit, unsend or extra data), the bulk of any history,
without a Python object per column: only the body decoder runs per row, as an SQL function.
Everything else in the range (the rows that SELECT left out) is read and converted by
`messages._converted`, exactly as the row-by-row reader does, and the caller stores it.

A row is plain when the SQL tests below pass AND `plain_body` returns its text; both are the
fast-path tests of `messages._converted`, so the two readers agree row for row (a test
compares the stores they build). Imports: sqlite3, ingest (never casper).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

from ingest.body import decode_attributed_body
from ingest.connect import map_sqlite_error
from ingest.dates import APPLE_EPOCH_OFFSET, NS_THRESHOLD, apple_to_unix
from ingest.messages import _SEED_ROWS, ROWID, Page, ReadCounters, _converted, _Converter
from ingest.queries import _from, _needs_extra, _select_list, page_sql
from ingest.reactions import RecentTexts
from ingest.schema import Capabilities

_ORC, _REPL = "\ufffc", "\ufffd"
_QUOTE_ENDS = ("\u201d", '"')
# Names of the SQL functions registered on the connection (prefixed: the store shares it).
BODY_FN = "casper_plain_body"
TS_FN = "casper_apple_ts"

BULK_PAGE_ROWS = 100_000  # ROWIDs per INSERT … SELECT (and per progress step)
# Columns of `plain_select`, in order: what the store needs of a plain message.
PLAIN_COLUMNS = ("rowid", "guid", "chat_id", "handle_id", "is_from_me", "ts", "reply_to", "body")


class PlainBodies:
    """The body decoder as an SQL function, noting what legacy reactions may quote.

    `plain_body(rowid, chat, guid, blob, text)` returns the message text of a plain row, or
    NULL when the row needs the general path (undecodable body, placeholders, a possible
    legacy reaction). Each non-empty plain text is noted as (chat, text, guid, rowid): the
    general path's legacy-reaction matcher must see them in ROWID order with its own rows.
    """

    def __init__(self, stats: ReadCounters) -> None:
        self.noted: list[tuple[int | None, str, str, int]] = []
        self.stats = stats

    def register(self, conn: sqlite3.Connection) -> None:
        conn.create_function(BODY_FN, 5, self.plain_body)
        conn.create_function(TS_FN, 1, _unix_ts, deterministic=True)

    def plain_body(
        self, rowid: int, chat: int | None, guid: str, blob: bytes | None, text: str | None
    ) -> str | None:
        if blob:
            body = decode_attributed_body(blob)
            if body is None:
                return None  # undecodable: the general path counts it and falls back
        else:
            body = text or ""
        if _ORC in body or _REPL in body:
            return None
        body = body.strip()
        if body:
            if body[-1] in _QUOTE_ENDS:
                return None  # maybe a legacy reaction: matched against recent texts
            self.noted.append((chat, body, guid, rowid))
        stats = self.stats  # a plain row is a message: counted as the row reader counts it
        stats.rows += 1
        stats.messages += 1
        if chat is None:
            stats.orphans += 1
        return body


def _unix_ts(value: object) -> float:
    """`messages._ts` for what the SQL shortcut (integer nanoseconds) does not cover."""
    return apple_to_unix(value) or 0.0  # type: ignore[arg-type]


def plain_select(caps: Capabilities) -> str:
    """Plain rows with lo < ROWID ≤ hi (params: lo, hi) as PLAIN_COLUMNS, ROWID order.

    The inner query is kept a subquery (OFFSET 0 stops SQLite from flattening it), so the
    body function runs once per row, not once for the WHERE and again for the column.
    """
    has = caps.has_column
    tests = ["m.ROWID > ?", "m.ROWID <= ?", f"{_needs_extra(caps)} = 0"]
    tests += [f"ifnull(m.{c}, 0) = 0" for c in ("associated_message_type", "item_type") if has(c)]
    if caps.has_attachments:
        tests.append(
            "NOT EXISTS (SELECT 1 FROM message_attachment_join a WHERE a.message_id = m.ROWID)"
        )
    if caps.has_recoverable:
        tests.append(
            "NOT EXISTS (SELECT 1 FROM chat_recoverable_message_join r "
            "WHERE r.message_id = m.ROWID)"
        )
    # a message filed in two chats: the first join row, as the page query's reader keeps it
    chat = (
        "(SELECT j.chat_id FROM chat_message_join j WHERE j.message_id = m.ROWID LIMIT 1)"
        if caps.has_chat_join
        else "NULL"
    )
    blob = "CAST(m.attributedBody AS BLOB)" if has("attributedBody") else "NULL"
    text = "m.text" if has("text") else "NULL"
    col = {
        c: f"m.{c}" if has(c) else "NULL"
        for c in ("handle_id", "is_from_me", "date", "thread_originator_guid")
    }
    ts = (
        f"CASE WHEN typeof({col['date']}) = 'integer' AND {col['date']} > {NS_THRESHOLD} "
        f"THEN {col['date']} / 1e9 + {APPLE_EPOCH_OFFSET} ELSE {TS_FN}({col['date']}) END"
    )
    inner = (
        f"SELECT m.ROWID AS rowid, m.guid AS guid, {chat} AS chat_id, "
        f"{col['handle_id']} AS handle_id, {col['is_from_me']} AS is_from_me, {ts} AS ts, "
        f"nullif({col['thread_originator_guid']}, '') AS reply_to, "
        # `text` only where there is no attributedBody (as the page query reads it)
        f"CASE WHEN ifnull(length({blob}), 0) = 0 THEN {text} END AS text, {blob} AS blob "
        f"FROM message m WHERE {' AND '.join(tests)} "
        "ORDER BY m.ROWID LIMIT -1 OFFSET 0"
    )
    body = f"{BODY_FN}(rowid, chat_id, guid, blob, text)"
    # the blob stops at the level that decodes it: every level copies the values it passes on
    cols = ", ".join(PLAIN_COLUMNS[:-1])
    return (
        f"SELECT * FROM (SELECT {cols}, {body} AS body FROM ({inner}) LIMIT -1 OFFSET 0) "
        "WHERE body IS NOT NULL"
    )


def other_rows_sql(caps: Capabilities, done: str) -> str:
    """The page query for lo < ROWID ≤ hi (params: lo, hi) minus the rows already in `done`
    (a table whose rowid is the message ROWID): what the plain INSERT left for Python."""
    return (
        f"SELECT {_select_list(caps)}{_from(caps)} WHERE m.ROWID > ? AND m.ROWID <= ? "
        f"AND NOT EXISTS (SELECT 1 FROM {done} d WHERE d.rowid = m.ROWID) ORDER BY m.ROWID"
    )


def iter_bulk_pages(
    conn: sqlite3.Connection,
    caps: Capabilities,
    insert_plain: Callable[[str, tuple[int, int]], None],
    *,
    done_table: str,
    after_rowid: int,
    upto_rowid: int,
    stats: ReadCounters,
    page_rows: int = BULK_PAGE_ROWS,
) -> Iterator[Page]:
    """ROWID ranges of `page_rows`: plain rows stored by `insert_plain(sql, (lo, hi))`, the
    rest yielded as converted pages (MessageRow / ReactionRow lists) for the caller to store.

    `conn` sees chat.db's tables unqualified (attached) and `done_table`, where
    `insert_plain` puts the plain rows (so they are left out of the pages).
    """
    bodies = PlainBodies(stats)
    bodies.register(conn)
    conv = _Converter(conn, caps, stats)
    conv.noted = bodies.noted
    select, others = plain_select(caps), other_rows_sql(caps, done_table)
    if after_rowid > 0:  # an incremental run: legacy reactions may quote the previous run's rows
        conv.recent = _seed(conn, caps, after_rowid)
    lo = after_rowid
    while lo < upto_rowid:
        hi = min(lo + page_rows, upto_rowid)
        try:
            insert_plain(select, (lo, hi))
            rows = conn.execute(others, (lo, hi)).fetchall()
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc) from exc
        yield _converted(conv, rows, True)
        lo = hi


def _seed(conn: sqlite3.Connection, caps: Capabilities, after_rowid: int) -> RecentTexts:
    """What legacy reactions may quote from before the watermark (as `iter_pages` seeds)."""
    seed = _Converter(conn, caps, ReadCounters())
    rows = conn.execute(page_sql(caps), (max(0, after_rowid - _SEED_ROWS), _SEED_ROWS)).fetchall()
    _converted(seed, [r for r in rows if r[ROWID] <= after_rowid], True)
    return seed.recent
