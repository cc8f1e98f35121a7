"""Rows kept out (`exclude`) that worker processes copy into the store are purged before the
chunks and stats are made: a parallel read stores and counts exactly what a serial one does."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from casper.indexer.parallel import Options
from casper.indexer.pipeline import Indexer
from casper.store.db import Store
from ingest.synthetic import DemoCorpus

BERLIN = ZoneInfo("Europe/Berlin")
EXCLUDE = ("Mom", "chat:Climbing crew")


def _stored(corpus: DemoCorpus, home: Path, parallel: Options) -> tuple[dict, dict, int]:
    store = Store.open(home / "casper.sqlite")
    try:
        indexer = Indexer(store, corpus.chat_db, corpus.contacts, BERLIN, parallel=parallel,
                          exclude=EXCLUDE)  # fmt: skip
        indexer.run()
        rows = dict(store.conn.execute("SELECT guid, text FROM messages"))
        stats = dict(store.conn.execute("SELECT person_id, data FROM contact_stats"))
        return rows, stats, indexer.purged.messages
    finally:
        store.close()


@pytest.mark.slow
def test_a_parallel_read_keeps_out_what_a_serial_one_does(
    demo_corpus: DemoCorpus, tmp_path: Path
) -> None:
    serial, serial_stats, purged_serial = _stored(demo_corpus, tmp_path / "a", Options(workers=1))
    parallel, parallel_stats, purged = _stored(
        demo_corpus, tmp_path / "b", Options(workers=2, min_rows=1, min_range=1)
    )
    assert purged > 0 and purged_serial == 0  # the workers stored them; the serial read did not
    assert parallel == serial
    assert parallel_stats == serial_stats
    store = Store.open(tmp_path / "b" / "casper.sqlite")
    try:
        names = {p.name for p in store.people()}
        assert "Mom" not in names and "Climbing crew" not in {c.name for c in store.chats()}
        assert len(serial_stats) == len(names - {"Unknown"})
    finally:
        store.close()
