"""Ingest end to end: demo chat.db → store + stats, incremental runs, deletions, crash safety."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from casper.errors import StoreBusy
from casper.indexer.lock import exclusive
from casper.indexer.pipeline import Indexer
from casper.records import ME
from casper.store.db import Store
from ingest.synthetic import ChatDbWriter
from tests.helpers import private_copy

UTC = ZoneInfo("UTC")


@pytest.fixture
def corpus(demo_corpus, tmp_path: Path):  # noqa: ANN001, ANN201
    """A private copy, so tests may add rows to the source chat.db."""
    return private_copy(demo_corpus, tmp_path / "src")


def _index(store: Store, corpus) -> object:  # noqa: ANN001
    return Indexer(store, corpus.chat_db, corpus.contacts, UTC).run()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_stats_match_what_the_generator_wrote(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    report = _index(store, corpus)
    facts = corpus.facts
    assert report.messages_total == facts["messages_visible"]
    by_name = {p.name: p for p in store.people()}
    for name, expected in facts["people"].items():
        stats = store.stats(by_name[name].id)
        assert (stats["sent"], stats["received"]) == (expected["sent"], expected["received"]), name
        assert stats["first"] == datetime.fromisoformat(expected["first"]).timestamp()
        assert stats["last"] == datetime.fromisoformat(expected["last"]).timestamp()
    # one person per card even with two handles (and two chats)
    sam = by_name["Sam Rivera"]
    assert sorted(sam.handles) == ["+14155550132", "sam.rivera@example.com"]
    assert sorted(sam.handles) == facts["people"]["Sam Rivera"]["handles"]
    assert len(store.one_to_one_chat_ids(sam.id)) == 2
    # a handle without a card shows as its number; the unnamed group is labelled by members
    assert "+13125550177" in by_name
    assert any(c.is_group and "&" in c.name for c in store.chats())


def test_reactions_events_and_deletions_never_count(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    report = _index(store, corpus)
    rows = corpus.facts["rows"]
    # every reaction row the generator wrote is folded once: tapbacks, their removals, and the
    # legacy SMS "Loved “…”" text rows
    reactions = rows["tapbacks"] + rows["tapback_removals"] + rows["legacy_reactions"]
    assert report.reactions == reactions
    assert store.message(corpus.facts["keys"]["unsent"]).kind == "system"
    texts = [r[0] for r in store.conn.execute("SELECT text FROM messages")]
    assert not any(t.startswith(("Loved “", "Liked “", "Laughed at “")) for t in texts)
    folded = store.conn.execute("SELECT count(*) FROM reactions").fetchone()[0]
    assert folded == reactions
    system = store.message_count(kind="system")
    assert system == rows["system_events"] + rows["unsent"]


def test_source_is_never_written(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    before = _sha(corpus.chat_db)
    mtime = corpus.chat_db.stat().st_mtime_ns
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _index(store, corpus)
    _index(store, corpus)
    assert _sha(corpus.chat_db) == before and corpus.chat_db.stat().st_mtime_ns == mtime
    assert not Path(str(corpus.chat_db) + "-journal").exists()


def test_second_run_is_a_noop(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _index(store, corpus)
    changes = store.conn.total_changes
    again = _index(store, corpus)
    assert again.noop and again.messages_new == 0
    assert store.conn.total_changes == changes  # nothing written


def test_incremental_run_reads_only_new_rows_and_mutations(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    first = _index(store, corpus)
    keys = corpus.facts["keys"]
    old = store.message(keys["tg23_sam_brings"])
    last_ts = store.coverage()[1]
    with ChatDbWriter(corpus.chat_db) as w:
        chat = w.conn.execute("SELECT ROWID FROM chat WHERE guid LIKE '%+14155550132'").fetchone()[
            0
        ]
        handle = w.conn.execute("SELECT ROWID FROM handle WHERE id='+14155550132'").fetchone()[0]
        new_rowid, new_guid = w.add_message(
            chat,
            "the kayak rental is booked for saturday",
            from_me=False,
            handle=handle,
            ts=last_ts + 3600,
            body="attributed",
        )
        w.add_reaction(old.guid, kind=2003, from_me=True, handle=None, ts=last_ts + 3700, chat=chat)
        mine, _ = w.add_message(chat, "see you at the lake", from_me=True, ts=last_ts + 3800)
        w.edit_message(mine, "see you at the lake at 9", ts=last_ts + 3900)
        victim = store.message(keys["tg23_reminder"])
        w.hard_delete(victim.rowid)
    second = _index(store, corpus)
    assert second.messages_new == 2
    assert second.deleted == 1
    assert store.message(new_guid).text == "the kayak rental is booked for saturday"
    edited = store.message(mine)
    assert edited.text == "see you at the lake at 9" and edited.edited
    assert (ME, "😂") in store.message(old.guid).reactions  # a late tapback on an old message
    assert store.message(keys["tg23_reminder"]) is None
    assert second.messages_total == first.messages_total + 2 - 1
    sam = store.resolve_person("Sam Rivera")
    expected = corpus.facts["people"]["Sam Rivera"]["received"] + 1 - (victim.sender == sam.id)
    assert store.stats(sam.id)["received"] == expected
    _ = new_rowid


def test_edit_after_the_last_run_is_picked_up(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _index(store, corpus)
    last = store.conn.execute(
        "SELECT rowid FROM messages WHERE sender=? AND kind='text' ORDER BY ts DESC LIMIT 1", (ME,)
    ).fetchone()[0]
    ts = store.message(last).ts
    with ChatDbWriter(corpus.chat_db) as w:
        w.edit_message(last, "fixed typo", ts=ts + 120)
    report = _index(store, corpus)
    assert not report.noop and report.messages_new == 0
    assert store.message(last).text == "fixed typo" and store.message(last).edited


def test_rows_that_vanish_without_tombstone_are_removed(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _index(store, corpus)
    victim = store.conn.execute("SELECT rowid FROM messages WHERE kind='text' LIMIT 1").fetchone()[
        0
    ]
    conn = sqlite3.connect(corpus.chat_db)
    conn.execute("DROP TRIGGER IF EXISTS add_to_deleted_messages")
    for trig in [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")]:
        conn.execute(f"DROP TRIGGER {trig}")
    conn.execute("DELETE FROM chat_message_join WHERE message_id=?", (victim,))
    conn.execute("DELETE FROM message WHERE ROWID=?", (victim,))
    conn.commit()
    conn.close()
    _index(store, corpus)
    assert store.message(victim) is None


def test_store_files_are_owner_only(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    store = Store.open(home / "casper.sqlite")
    _index(store, corpus)
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    for f in home.iterdir():
        assert f.stat().st_mode & 0o077 == 0, f


def test_a_first_fill_is_written_once_and_leaves_the_store_in_wal(corpus, tmp_path: Path) -> None:  # noqa: ANN001
    """Through a WAL the first fill would be written twice (log, then checkpoint) and leave a
    log as large as the store behind; readers beside `casper index` need WAL after it."""
    path = tmp_path / "home" / "casper.sqlite"
    store = Store.open(path)
    _index(store, corpus)
    assert store.message_count() > 1000
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size < path.stat().st_size / 10
    assert not path.with_name(path.name + "-journal").exists()
    reader = Store.open(path, create=False)  # a second process's view: the same rows
    assert reader.message_count() == store.message_count()


def test_opening_a_store_held_by_a_first_fill_says_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first fill holds the store until it commits; a search opening it meanwhile waits, and
    past the wait says so with a hint instead of a sqlite traceback."""
    import casper.store.db as db

    path = tmp_path / "home" / "casper.sqlite"
    filler = Store.open(path)
    with filler.first_fill(), filler.transaction():
        filler.set_meta("probe", 1)
        monkeypatch.setattr(db, "BUSY_TIMEOUT_S", 0.2)
        with pytest.raises(StoreBusy) as err:
            Store.open(path, create=False)
        assert "casper index" in err.value.hint
    assert Store.open(path, create=False).get_meta("probe") == "1"


def test_two_indexers_never_run_at_once(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path\n"
            "from casper.indexer.lock import exclusive\n"
            f"with exclusive(Path({str(lock)!r})):\n    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy), exclusive(lock, wait_s=0.3):
            pass
    finally:
        holder.kill()
        holder.wait()
    with exclusive(lock, wait_s=1.0):  # released by the kill
        pass


KILL_SCRIPT = """
import sys
from pathlib import Path
from zoneinfo import ZoneInfo
from casper.indexer.pipeline import Indexer
from casper.store.db import Store
store = Store.open(Path(sys.argv[1]))
print("start", flush=True)
def progress(stage, done, total):
    if stage == "read" and done and done < (total or 0):
        print("midway", flush=True)  # rows are in the open transaction, not yet committed
Indexer(store, Path(sys.argv[2]), None, ZoneInfo("UTC"), batch_size=2000,
        on_progress=progress).run()
print("done", flush=True)
"""


def _kill_9_midway(store_path: Path, db: Path) -> None:
    """Index in a child process and kill -9 it while read rows sit in the open transaction."""
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(store_path), str(db)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "start"
    # kill on a progress signal, not after a sleep: a fast machine could finish first
    assert proc.stdout.readline().strip() == "midway"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_kill_9_mid_index_leaves_the_store_usable(tmp_path: Path) -> None:
    from ingest.synthetic.bulk import append_messages, build_bulk_chat_db

    db = tmp_path / "chat.db"
    build_bulk_chat_db(db, n_messages=5_000, n_people=10)
    store_path = tmp_path / "home" / "casper.sqlite"
    store = Store.open(store_path)
    Indexer(store, db, None, UTC).run()
    before = store.message_count()
    store.close()
    append_messages(db, 150_000)
    _kill_9_midway(store_path, db)
    store = Store.open(store_path)
    assert store.message_count() == before  # the interrupted run left no partial state
    report = Indexer(store, db, None, UTC).run()
    assert report.messages_new > 100_000
    assert Indexer(store, db, None, UTC).run().noop


@pytest.mark.slow
def test_kill_9_mid_first_fill_leaves_an_empty_usable_store(tmp_path: Path) -> None:
    """The first fill runs under a rollback journal (written once): a kill leaves a hot
    journal that the next open rolls back, never a half-filled store."""
    from ingest.synthetic.bulk import build_bulk_chat_db

    db = tmp_path / "chat.db"
    build_bulk_chat_db(db, n_messages=150_000, n_people=10)
    store_path = tmp_path / "home" / "casper.sqlite"
    _kill_9_midway(store_path, db)
    store = Store.open(store_path)
    assert store.message_count() == 0
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    report = Indexer(store, db, None, UTC).run()
    assert report.messages_new > 100_000
    assert Indexer(store, db, None, UTC).run().noop
