"""The reader's inline fast path gives exactly what its general path gives, row for row.

`convert_page` handles plain rows inline (the bulk of any history) and hands the rest to
`RowConverter.convert`; here every row also goes through `convert` alone, and the two outputs,
counters and legacy-reaction buffers must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import Capabilities, open_chat_db
from ingest.queries import ROWID, page_sql
from ingest.row_convert import ReadCounters, RowConverter, convert_page
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.bulk import build_bulk_chat_db
from tests.paths import CHATDB_FIXTURES, shared_fixture


def _both_ways(path: Path) -> None:
    conn = open_chat_db(path)
    caps = Capabilities.probe(conn)
    rows = conn.execute(page_sql(caps), (0, 1_000_000)).fetchall()
    assert rows
    fast = RowConverter(conn, caps, ReadCounters())
    fast_out = convert_page(fast, rows, True)

    slow = RowConverter(conn, caps, ReadCounters())
    atts, extras = slow.fetch(rows, True)
    previous = None
    for row in rows:
        if row[ROWID] != previous:
            slow.convert(row, atts.get(row[ROWID], []), extras.get(row[ROWID]))
        previous = row[ROWID]
    slow.sync_recent()
    conn.close()
    assert fast_out == (slow.messages, slow.reactions)
    assert fast.stats == slow.stats
    assert fast.recent._chats == slow.recent._chats


@pytest.mark.parametrize(
    "fixture", ["imessagedb/chat.db", "imessage-exporter/db/test.db"], ids=lambda f: f
)
def test_real_databases(fixture: str) -> None:
    _both_ways(shared_fixture(CHATDB_FIXTURES / fixture))


def test_synthetic_databases(tmp_path: Path) -> None:
    corpus = build_demo_corpus(tmp_path / "demo")
    _both_ways(corpus.chat_db)
    build_bulk_chat_db(tmp_path / "bulk.db", n_messages=3000, n_people=6)
    _both_ways(tmp_path / "bulk.db")
