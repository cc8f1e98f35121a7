"""The bulk read (chat.db attached read-only, plain rows copied inside SQLite) builds exactly the
store the row-by-row reader builds: messages, reactions, stats and their saved state, meta,
dirty chats and the run's report — on real databases from two macOS versions, the demo corpus
(edits, unsends, tapbacks, replies, attachments, legacy SMS reactions) and a generated bulk
history, in a zone with DST, first runs and incremental ones. chat.db is never written."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from casper.pipeline import Indexer
from casper.stats import StatsState
from casper.store.db import Store
from ingest.connect import ro_uri
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.bulk import append_messages, build_bulk_chat_db
from tests.paths import CHATDB_FIXTURES

BERLIN = ZoneInfo("Europe/Berlin")  # DST: local days of 23 and 25 hours


def _snapshot(store: Store) -> dict:
    c = store.conn
    stats = {}
    for pid, data, state in c.execute("SELECT person_id, data, state FROM contact_stats"):
        s = StatsState.from_json(state)
        stats[pid] = (json.loads(data), s)
    return {
        "messages": c.execute("SELECT * FROM messages ORDER BY rowid").fetchall(),
        "reactions": c.execute("SELECT * FROM reactions ORDER BY guid").fetchall(),
        "stats": stats,
        "meta": dict(c.execute("SELECT key, value FROM meta WHERE key != 'store_id'")),
        "dirty": c.execute("SELECT * FROM dirty_chats ORDER BY chat_id").fetchall(),
        "chats": c.execute("SELECT * FROM chats ORDER BY id").fetchall(),
    }


def _report(report) -> dict:  # noqa: ANN001
    out = report.to_dict()
    for key in ("timings", "cpu_s", "elapsed_s"):
        out.pop(key)
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _both_ways(chat_db: Path, home: Path, tz: ZoneInfo = BERLIN, append: int = 0) -> dict:
    """Index `chat_db` with both readers (and again after `append` new rows); the stores and
    reports must be equal after each run. Returns the bulk store's snapshot."""
    stores = {bulk: Store.open(home / f"bulk-{bulk}" / "casper.sqlite") for bulk in (False, True)}
    runs = [0, append] if append else [0]
    try:
        for extra in runs:
            if extra:
                append_messages(chat_db, extra)
            before = _digest(chat_db)
            reports = {
                b: _report(Indexer(s, chat_db, None, tz, bulk=b).run()) for b, s in stores.items()
            }
            assert _digest(chat_db) == before, "chat.db must stay untouched"
            assert reports[True] == reports[False]
            if extra:
                assert reports[True]["messages_new"] <= extra  # only the new rows were read
            snaps = {b: _snapshot(s) for b, s in stores.items()}
            assert snaps[True] == snaps[False]
        assert snaps[True]["messages"], "the comparison must cover some messages"
        return snaps[True]
    finally:
        for s in stores.values():
            s.close()


@pytest.mark.parametrize(
    "fixture", ["imessagedb/chat.db", "imessage-exporter/db/test.db"], ids=lambda f: f
)
def test_real_databases_from_two_macos_versions(fixture: str, tmp_path: Path) -> None:
    path = CHATDB_FIXTURES / fixture
    if not path.exists():
        pytest.skip(f"fixture {path} not present")
    _both_ways(path, tmp_path)


def test_demo_corpus_with_edits_unsends_tapbacks_and_legacy_reactions(tmp_path: Path) -> None:
    corpus = build_demo_corpus(tmp_path / "demo")
    snap = _both_ways(corpus.chat_db, tmp_path, ZoneInfo("America/New_York"))
    kinds = {m[6] for m in snap["messages"]}
    assert {"text", "system"} <= kinds  # plain rows (SQL) and the general path (Python) both ran
    assert snap["reactions"]


def test_generated_history_first_and_incremental_run(tmp_path: Path) -> None:
    db = tmp_path / "bulk.db"
    build_bulk_chat_db(db, n_messages=4000, n_people=8)
    _both_ways(db, tmp_path, append=300)


def test_undated_rows_and_seconds_dates_take_the_same_values(tmp_path: Path) -> None:
    db = tmp_path / "bulk.db"
    build_bulk_chat_db(db, n_messages=600, n_people=4)
    conn = sqlite3.connect(db)
    with conn:  # a copy of the source, ours to change: unset dates and pre-10.13 seconds
        conn.execute("UPDATE message SET date = 0 WHERE ROWID % 17 = 0")
        conn.execute("UPDATE message SET date = date / 1000000000 WHERE ROWID % 13 = 0")
        conn.execute("UPDATE message SET date = NULL WHERE ROWID % 29 = 0")
    conn.close()
    snap = _both_ways(db, tmp_path)
    assert any(m[4] <= 0 for m in snap["messages"])


def test_chat_db_is_attached_read_only(tmp_path: Path) -> None:
    db = tmp_path / "bulk.db"
    build_bulk_chat_db(db, n_messages=50, n_people=2)
    before = _digest(db)
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    with pytest.raises(ValueError), store.source_attached(f"file:{db}"):
        pass  # a writable URI is refused before ATTACH
    with (
        store.source_attached(ro_uri(db)),
        pytest.raises(sqlite3.OperationalError, match="readonly"),
    ):
        store.conn.execute("INSERT INTO chatdb.handle(id, service) VALUES ('x', 'SMS')")
    assert not [r for r in store.conn.execute("PRAGMA database_list") if r[1] == "chatdb"]
    store.close()
    assert _digest(db) == before


def test_a_chat_db_sqlite_will_not_attach_is_read_row_by_row(tmp_path: Path) -> None:
    """A UTF-16 database cannot be attached to the (UTF-8) store: same store, row reader."""
    src = tmp_path / "bulk.db"
    build_bulk_chat_db(src, n_messages=300, n_people=3)
    db = tmp_path / "utf16.db"
    out = sqlite3.connect(db)
    out.execute("PRAGMA encoding = 'UTF-16le'")
    with sqlite3.connect(src) as conn:
        out.executescript("\n".join(conn.iterdump()))
    out.close()
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    with store.source_attached(ro_uri(db)) as attached:
        assert attached is False
    store.close()
    snap = _both_ways(db, tmp_path / "utf16")
    assert len(snap["messages"]) > 200
