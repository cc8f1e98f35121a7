"""Worker processes reading a backlog in ROWID ranges build exactly the store one reader builds:
messages, reactions, stats and their saved state, meta, dirty chats and the run's report — on
real databases from two macOS versions, the demo corpus (edits, unsends, tapbacks, replies,
attachments, a legacy SMS reaction), legacy reactions quoting across ranges, undated rows, a
zone with DST, a UTF-16 chat.db, first runs and incremental ones. chat.db is never written;
staging files are owner-only and gone after the run, whether it succeeds, fails or is
interrupted; small runs start no process."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import sqlite3
import stat
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from casper.errors import CasperError
from casper.indexer import parallel as ingest_parallel
from casper.indexer.parallel import Options, plan_ranges
from casper.indexer.pipeline import Indexer
from casper.indexer.rows import NewRows
from casper.stats import StatsState
from casper.store import staging
from casper.store.db import Store
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.bulk import append_messages, build_bulk_chat_db
from tests.integration.test_ingest_ranges import _legacy_db
from tests.paths import CHATDB_FIXTURES, shared_fixture

BERLIN = ZoneInfo("Europe/Berlin")  # DST: local days of 23 and 25 hours
SERIAL = Options(workers=1)
# every run parallel, in as many ranges as the store can attach
PARALLEL = Options(workers=2, min_rows=1, min_range=1)


def _snapshot(store: Store) -> dict:
    c = store.conn
    stats = {}
    for pid, data, state in c.execute("SELECT person_id, data, state FROM contact_stats"):
        stats[pid] = (json.loads(data), StatsState.from_json(state))
    return {
        "messages": c.execute("SELECT * FROM messages ORDER BY rowid").fetchall(),
        "reactions": c.execute("SELECT * FROM reactions ORDER BY guid").fetchall(),
        "stats": stats,
        "meta": dict(c.execute("SELECT key, value FROM meta WHERE key != 'store_id'")),
        "dirty": c.execute("SELECT * FROM dirty_chats ORDER BY chat_id").fetchall(),
        "chats": c.execute("SELECT * FROM chats ORDER BY id").fetchall(),
        "schema": c.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall(),
    }


def _report(report) -> dict:  # noqa: ANN001
    out = report.to_dict()
    for key in ("timings", "cpu_s", "elapsed_s"):
        out.pop(key)
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _both_ways(chat_db: Path, home: Path, tz: ZoneInfo = BERLIN, append: int = 0) -> dict:
    """Index `chat_db` with one reader and with workers (and again after `append` new rows);
    stores and reports must be equal after each run. Returns the parallel store's snapshot."""
    stores = {name: Store.open(home / name / "casper.sqlite") for name in ("serial", "parallel")}
    options = {"serial": SERIAL, "parallel": PARALLEL}
    try:
        for extra in [0, append] if append else [0]:
            if extra:
                append_messages(chat_db, extra)
            before = _digest(chat_db)
            reports = {
                name: Indexer(s, chat_db, None, tz, parallel=options[name]).run()
                for name, s in stores.items()
            }
            assert _digest(chat_db) == before, "chat.db must stay untouched"
            assert "read workers (busy)" in reports["parallel"].timings  # workers did the read
            assert "read workers (busy)" not in reports["serial"].timings
            assert _report(reports["parallel"]) == _report(reports["serial"])
            snaps = {name: _snapshot(s) for name, s in stores.items()}
            assert snaps["parallel"] == snaps["serial"]
        assert snaps["parallel"]["messages"], "the comparison must cover some messages"
        assert not list((home / "parallel").glob("ingest-staging-*")), "staging left behind"
        return snaps["parallel"]
    finally:
        for s in stores.values():
            s.close()


def _bulk_home(tmp_path: Path, messages: int, *, people: int) -> tuple[Path, Path, Store]:
    """A generated chat.db and an empty Casper home with its store open."""
    db = tmp_path / "bulk.db"
    build_bulk_chat_db(db, n_messages=messages, n_people=people)
    home = tmp_path / "home"
    return db, home, Store.open(home / "casper.sqlite")


@pytest.mark.parametrize(
    "fixture", ["imessagedb/chat.db", "imessage-exporter/db/test.db"], ids=lambda f: f
)
def test_real_databases_from_two_macos_versions(fixture: str, tmp_path: Path) -> None:
    _both_ways(shared_fixture(CHATDB_FIXTURES / fixture), tmp_path)


def test_demo_corpus_with_edits_unsends_tapbacks_and_legacy_reactions(tmp_path: Path) -> None:
    corpus = build_demo_corpus(tmp_path / "demo")
    snap = _both_ways(corpus.chat_db, tmp_path, ZoneInfo("America/New_York"))
    assert {"text", "system", "attachment"} <= {m[6] for m in snap["messages"]}
    assert snap["reactions"]


def test_legacy_reactions_quoting_earlier_ranges(tmp_path: Path) -> None:
    snap = _both_ways(_legacy_db(tmp_path / "chat.db"), tmp_path)
    assert len(snap["reactions"]) >= 10


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


def test_a_history_imported_out_of_time_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ROWIDs not in time order (a history synced onto a new Mac): ranges whose 1:1 messages
    interleave in time cannot be joined state to state; those people are re-read."""
    reread: set[str] = set()
    fold = NewRows.fold

    def spy(self: NewRows, pid: str, state: StatsState, head: tuple | None) -> None:
        fold(self, pid, state, head)
        reread.update(self.reread)

    monkeypatch.setattr(NewRows, "fold", spy)
    db = tmp_path / "bulk.db"
    build_bulk_chat_db(db, n_messages=2000, n_people=5, seed=4)
    conn = sqlite3.connect(db)
    with conn:  # the second half of the rows moved a year back, the rest untouched
        conn.execute("UPDATE message SET date = date - 365 * 86400 * 1000000000 WHERE ROWID > 1000")
    conn.close()
    _both_ways(db, tmp_path, append=200)
    assert reread  # the fallback ran


def test_a_utf16_chat_db(tmp_path: Path) -> None:
    """Workers read chat.db through their own connections; its text encoding is theirs."""
    src = tmp_path / "bulk.db"
    build_bulk_chat_db(src, n_messages=300, n_people=3)
    db = tmp_path / "utf16.db"
    out = sqlite3.connect(db)
    out.execute("PRAGMA encoding = 'UTF-16le'")
    with sqlite3.connect(src) as conn:
        out.executescript("\n".join(conn.iterdump()))
    out.close()
    assert len(_both_ways(db, tmp_path / "utf16")["messages"]) > 200


def test_ranges_cover_the_backlog_once() -> None:
    assert plan_ranges(0, 1_000_000, 2, 25_000) == [
        (i * 125_000, (i + 1) * 125_000) for i in range(8)
    ]
    assert plan_ranges(100, 160_000, 2, 25_000)[0][0] == 100
    for after, upto, workers, least in [(0, 60_000, 2, 25_000), (5, 17, 4, 1), (0, 3, 2, 1)]:
        ranges = plan_ranges(after, upto, workers, least)
        assert ranges[0][0] == after and ranges[-1][1] == upto
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
        assert len(ranges) <= staging.MAX_STAGED
    assert len(plan_ranges(0, 60_000, 2, 25_000)) == 2  # a multiple of the workers


def test_small_runs_start_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "bulk.db"
    build_bulk_chat_db(db, n_messages=2000, n_people=4)

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("workers started for a small run")

    monkeypatch.setattr(ingest_parallel, "open_reader", refuse)
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    report = Indexer(store, db, None, BERLIN, parallel=Options(workers=4)).run()
    assert report.messages_new > 1000
    store.close()


def _staging_dirs(home: Path) -> list[Path]:
    return list(home.glob("ingest-staging-*"))


def test_staging_files_are_private_and_removed_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure in the middle (here: the copy of the third range) leaves the store as it was,
    no staging file and no worker process behind; the files were owner-only meanwhile."""
    db, home, store = _bulk_home(tmp_path, 1500, people=4)
    real_copy = staging.copy_in
    seen: list[int] = []

    def copy_then_fail(conn, path, alias):  # noqa: ANN001, ANN202
        seen.append(stat.S_IMODE(path.stat().st_mode))
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        if len(seen) == 3:
            raise KeyboardInterrupt  # as Ctrl-C would, mid-run
        real_copy(conn, path, alias)

    monkeypatch.setattr(staging, "copy_in", copy_then_fail)
    with pytest.raises(KeyboardInterrupt):
        Indexer(store, db, None, BERLIN, parallel=PARALLEL).run()
    assert seen == [0o600] * 3
    assert _staging_dirs(home) == []
    assert multiprocessing.active_children() == []
    assert store.message_count() == 0  # rolled back
    assert [r[1] for r in store.conn.execute("PRAGMA database_list")] == ["main"]
    monkeypatch.setattr(staging, "copy_in", real_copy)
    report = Indexer(store, db, None, BERLIN, parallel=PARALLEL).run()  # and it recovers
    assert report.messages_new == store.message_count() - report.events
    store.close()


def test_an_error_in_a_worker_reaches_the_user_with_its_hint(tmp_path: Path) -> None:
    """chat.db gone between the check and the workers' read: the single reader's error."""
    db, home, store = _bulk_home(tmp_path, 500, people=3)
    indexer = Indexer(store, db, None, BERLIN, parallel=PARALLEL)
    real_read = indexer._people_and_chats

    def vanish(src):  # noqa: ANN001, ANN202
        out = real_read(src)
        db.rename(tmp_path / "moved.db")  # after the check, before the workers open it
        return out

    indexer._people_and_chats = vanish  # type: ignore[method-assign]
    with pytest.raises(CasperError) as caught:
        indexer.run()
    assert "does not exist" in caught.value.message and caught.value.hint
    assert _staging_dirs(home) == [] and multiprocessing.active_children() == []
    store.close()


def test_a_dead_worker_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed (out of memory, kill -9) fails the run instead of hanging it."""
    db, home, store = _bulk_home(tmp_path, 500, people=3)
    real = ingest_parallel._Workers.run

    def kill_first(self, jobs):  # noqa: ANN001, ANN202
        self.procs[0].kill()
        return real(self, jobs)

    monkeypatch.setattr(ingest_parallel._Workers, "run", kill_first)
    with pytest.raises(CasperError, match="stopped unexpectedly"):
        Indexer(store, db, None, BERLIN, parallel=PARALLEL).run()
    assert _staging_dirs(home) == [] and multiprocessing.active_children() == []
    store.close()


def test_a_killed_runs_staging_directory_is_swept(tmp_path: Path) -> None:
    db, home, store = _bulk_home(tmp_path, 300, people=3)
    dead = home / "ingest-staging-999999999-x"  # no such process
    dead.mkdir()
    (dead / "range-0.sqlite").write_bytes(b"left by kill -9")
    Indexer(store, db, None, BERLIN, parallel=PARALLEL).run()
    assert _staging_dirs(home) == []
    store.close()
