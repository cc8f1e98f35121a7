"""Precomputed stats stay equal to a from-scratch computation through incremental runs.

The reference reads every person's messages back from the store and applies compute_stats
(CLI.md's definitions) with the local time computed on the spot: it shares neither the
precomputed lday/lhour/emoji columns nor the folded StatsState with the ingest path.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from casper.errors import StoreOutdated
from casper.indexer.pipeline import Indexer
from casper.records import ME
from casper.stats import Line, compute_stats
from casper.store.db import Store
from casper.store.stats_query import person_stats
from ingest.synthetic import ChatDbWriter
from ingest.synthetic.bulk import append_messages, build_bulk_chat_db

LA = ZoneInfo("America/Los_Angeles")


def _reference(store: Store, pid: str, tz: ZoneInfo, start=None, end=None) -> dict:  # noqa: ANN001
    chats = store.one_to_one_chat_ids(pid)
    timeline = [Line(s, ts, c, t) for s, c, ts, t in store.texts_for_person(chats, start, end)]
    authored = [Line(s, ts, c, t) for s, c, ts, t in store.sent_by(pid, start, end)]
    return json.loads(json.dumps(compute_stats(pid, timeline, authored, tz)))


def _assert_all_match(store: Store, tz: ZoneInfo) -> None:
    people = store.people()
    assert people
    for p in people:
        assert store.stats(p.id) == _reference(store, p.id, tz), p.name


@pytest.fixture
def chat_db(tmp_path: Path) -> Path:
    db = tmp_path / "chat.db"
    build_bulk_chat_db(db, n_messages=3000, n_people=8)
    return db


def _run(store: Store, db: Path, tz: ZoneInfo = LA):  # noqa: ANN202
    return Indexer(store, db, None, tz).run()


def test_appended_rows_fold_into_saved_state(chat_db: Path, tmp_path: Path) -> None:
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _run(store, chat_db)
    _assert_all_match(store, LA)
    saved = dict(store.conn.execute("SELECT person_id, state FROM contact_stats").fetchall())
    append_messages(chat_db, 400)
    report = _run(store, chat_db)
    assert report.messages_new > 300
    _assert_all_match(store, LA)
    changed = dict(store.conn.execute("SELECT person_id, state FROM contact_stats").fetchall())
    assert changed != saved  # the states moved on with the new rows


def test_my_own_new_message_updates_the_other_side(chat_db: Path, tmp_path: Path) -> None:
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _run(store, chat_db)
    pid = next(p.id for p in store.people() if store.one_to_one_chat_ids(p.id))
    chat = store.one_to_one_chat_ids(pid)[0]
    before = store.stats(pid)["sent"]
    with ChatDbWriter(chat_db) as w:
        w.add_message(chat, "on my way 🚗", from_me=True, ts=store.coverage()[1] + 60)
    _run(store, chat_db)
    assert store.stats(pid)["sent"] == before + 1
    _assert_all_match(store, LA)


def test_late_arrival_edit_and_delete_fall_back_to_a_recompute(
    chat_db: Path, tmp_path: Path
) -> None:
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _run(store, chat_db)
    first, last = store.coverage()
    pid = next(p.id for p in store.people() if store.one_to_one_chat_ids(p.id))
    chat = store.one_to_one_chat_ids(pid)[0]
    handle = (
        sqlite3.connect(chat_db)
        .execute("SELECT handle_id FROM chat_handle_join WHERE chat_id=?", (chat,))
        .fetchone()[0]
    )
    with ChatDbWriter(chat_db) as w:  # a message that synced late: older than the timeline's end
        w.add_message(
            chat, "sorry, old one 😅", from_me=False, handle=handle, ts=(first + last) / 2
        )
    _run(store, chat_db)
    _assert_all_match(store, LA)
    mine = store.conn.execute(
        "SELECT rowid, ts FROM messages WHERE sender=? AND chat_id=? ORDER BY ts DESC LIMIT 1",
        (ME, chat),
    ).fetchone()
    with ChatDbWriter(chat_db) as w:
        w.edit_message(mine[0], "edited with 🎉🎉", ts=mine[1] + 120)
    _run(store, chat_db)
    _assert_all_match(store, LA)
    victim = store.conn.execute(
        "SELECT rowid FROM messages WHERE sender=? LIMIT 1", (pid,)
    ).fetchone()[0]
    with ChatDbWriter(chat_db) as w:
        w.hard_delete(victim)
    report = _run(store, chat_db)
    assert report.deleted == 1
    _assert_all_match(store, LA)


def test_a_new_time_zone_recomputes_local_fields(chat_db: Path, tmp_path: Path) -> None:
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _run(store, chat_db, ZoneInfo("UTC"))
    _assert_all_match(store, ZoneInfo("UTC"))
    tokyo = ZoneInfo("Asia/Tokyo")
    report = _run(store, chat_db, tokyo)
    assert not report.noop
    _assert_all_match(store, tokyo)
    assert _run(store, chat_db, tokyo).noop


def test_range_stats_use_the_same_definitions(chat_db: Path, tmp_path: Path) -> None:
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _run(store, chat_db)
    first, last = store.coverage()
    start, end = first + (last - first) / 3, first + 2 * (last - first) / 3
    for p in store.people():
        expected = _reference(store, p.id, LA, start, end)
        assert json.loads(json.dumps(person_stats(store, p.id, LA, start, end))) == expected
        # another zone than the index was built for: computed on the spot, same answer
        other = _reference(store, p.id, ZoneInfo("Europe/Paris"), start, end)
        got = person_stats(store, p.id, ZoneInfo("Europe/Paris"), start, end)
        assert json.loads(json.dumps(got)) == other


def test_a_layout_1_store_is_refused_with_a_hint_not_half_read(tmp_path: Path) -> None:
    """Stores from before the stats columns (an unreleased development layout) are not migrated:
    opening one says to rebuild it from chat.db instead of failing later on a missing column."""
    path = tmp_path / "home" / "casper.sqlite"
    path.parent.mkdir()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO _migrations VALUES ('_m001_initial')")
    conn.execute(
        "CREATE TABLE messages (rowid INTEGER PRIMARY KEY, guid TEXT NOT NULL UNIQUE, "
        "chat_id INTEGER NOT NULL, sender TEXT NOT NULL, ts REAL NOT NULL, text TEXT NOT NULL, "
        "kind TEXT NOT NULL)"
    )
    conn.close()
    with pytest.raises(StoreOutdated) as info:
        Store.open(path)
    assert "casper index" in (info.value.hint or "") and "chat.db" in (info.value.hint or "")


def test_bulk_load_rebuilds_indexes_and_keeps_the_newest_row_of_a_moved_guid(
    tmp_path: Path,
) -> None:
    from casper.records import StoredMessage

    store = Store.open(tmp_path / "home" / "casper.sqlite")

    def names() -> set[str]:
        q = "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='messages'"
        return {r[0] for r in store.conn.execute(q) if not r[0].startswith("sqlite_")}

    before = names()
    with store.transaction():
        store.upsert_messages([StoredMessage(1, "G", 1, "p_a", 10.0, "old")])
    ran: list[str] = []
    with store.transaction(), store.bulk_load(alongside=lambda: ran.append("stats")):
        assert names() == {"messages_system"}  # the rest are dropped while rows stream in
        store.upsert_messages([StoredMessage(2, "G", 1, "p_a", 20.0, "moved")])
    assert ran == ["stats"] and names() == before
    assert [r[0] for r in store.conn.execute("SELECT rowid FROM messages")] == [2]

    def boom() -> None:
        raise RuntimeError("stats failed")

    with pytest.raises(RuntimeError), store.transaction(), store.bulk_load(alongside=boom):
        store.upsert_messages([StoredMessage(3, "H", 1, "p_a", 30.0, "x")])
    assert names() == before  # rolled back, indexes intact
    assert store.message_count() == 1


def _top_people_one_by_one(store: Store, start=None, end=None) -> list[tuple[str, int]]:  # noqa: ANN001
    """The previous definition: every countable message pulled into Python and credited."""
    from casper.stats import attribute_to_people

    owner = {c.id: c.members[0] for c in store.chats() if not c.is_group and len(c.members) == 1}
    lines = [Line(s, ts, c) for s, c, ts, _kind in store.activity(start, end)]
    counts: dict[str, int] = {}
    for person, _ts in attribute_to_people(lines, owner):
        counts[person] = counts.get(person, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def test_top_people_counts_in_sql_like_the_message_by_message_definition(
    chat_db: Path, tmp_path: Path
) -> None:
    from casper.store.stats_query import top_people

    store = Store.open(tmp_path / "home" / "casper.sqlite")
    _run(store, chat_db)
    groups = [c for c in store.chats() if c.is_group]
    one_to_one = [c for c in store.chats() if not c.is_group and len(c.members) == 1]
    assert groups and one_to_one  # my group messages are credited to nobody, 1:1 to the other
    # system rows (renames, joins) never count: add some, by me and by others, in both kinds
    with store.transaction():
        for i, (chat, sender) in enumerate(
            [(groups[0], ME), (groups[0], one_to_one[0].members[0]), (one_to_one[0], ME)] * 5
        ):
            store.conn.execute(
                "INSERT INTO messages(guid, chat_id, sender, ts, text, kind) "
                "VALUES (?, ?, ?, ?, '', 'system')",
                (f"sys-{i}", chat.id, sender, 1.6e9 + i),
            )
    everyone = _top_people_one_by_one(store)
    assert len(everyone) >= 8
    assert top_people(store, LA, None, None, top_n=100) == everyone
    assert top_people(store, LA, None, None, top_n=3) == everyone[:3]
    first, last = store.coverage()
    middle = (first + last) / 2
    for start, end in ((first, middle), (middle, None), (None, middle)):
        assert top_people(store, LA, start, end, 100) == _top_people_one_by_one(store, start, end)
    plan = " ".join(
        str(row[-1])
        for row in store.conn.execute(
            "EXPLAIN QUERY PLAN SELECT sender, chat_id, count(*) FROM messages "
            "GROUP BY sender, chat_id"
        )
    )
    assert "COVERING INDEX messages_sender_chat" in plan  # no table rows are read
