"""One ROWID range of chat.db's messages, read as one of several readers that split a history
(worker processes, side by side) — converted exactly as the single reader converts it.

Imports: ingest only (never casper).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from ingest.connect import map_sqlite_error
from ingest.queries import ROWID, range_page_sql
from ingest.records import DeferredReaction
from ingest.row_convert import Page, ReadCounters, RowConverter, convert_page
from ingest.schema import Capabilities


class RangeReader:
    """The rows of one ROWID range (after, upto], page by page, for one of several readers
    that split a history between them: converted exactly as `iter_pages` would, except that
    a legacy reaction it cannot settle from its own texts is kept in `deferred` (the caller
    resolves it with what the earlier ranges left in `tails()`)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        caps: Capabilities,
        after_rowid: int,
        upto_rowid: int,
        stats: ReadCounters,
        page_size: int = 5000,
    ) -> None:
        self.conn, self.caps = conn, caps
        self.after, self.upto, self.page_size = after_rowid, upto_rowid, page_size
        self.conv = RowConverter(conn, caps, stats)
        self.conv.defer_legacy = True

    def pages(self) -> Iterator[Page]:
        sql, last = range_page_sql(self.caps), self.after
        while last < self.upto:
            try:
                rows = self.conn.execute(sql, (last, self.upto, self.page_size)).fetchall()
                page = convert_page(self.conv, rows, True)  # reads attachments and handles too
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc) from exc
            yield page
            if len(rows) < self.page_size:
                return
            last = rows[-1][ROWID]

    @property
    def deferred(self) -> list[DeferredReaction]:
        return self.conv.deferred

    def tails(self) -> list[tuple[int | None, str, str]]:
        """What this range leaves in the legacy-reaction buffer, per chat, oldest first."""
        self.conv.sync_recent()
        return self.conv.recent.tails()
