"""ingest.synthetic: chat.db writer, AddressBook, demo corpus and its gold file, bulk DB."""

from __future__ import annotations

import hashlib
import json
import plistlib
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.body import decode_attributed_body
from ingest.dates import apple_to_unix
from ingest.synthetic import (
    Card,
    ChatDbWriter,
    DemoCorpus,
    DemoToggles,
    append_messages,
    build_bulk_chat_db,
    build_demo_corpus,
    build_tiny_corpus,
    write_addressbook,
)
from tests.paths import CHATDB_FIXTURES

SHARED = CHATDB_FIXTURES / "derived"
SEQUOIA = SHARED / "schema_sequoia_imessage-exporter_test.sql"
APPLE_TABLES = {
    "message", "chat", "handle", "chat_message_join", "chat_handle_join", "attachment",
    "message_attachment_join", "deleted_messages", "chat_recoverable_message_join",
    "recoverable_message_part", "sync_deleted_messages", "kvtable", "_SqliteDatabaseProperties",
}  # fmt: skip
T0 = datetime(2023, 5, 17, 12, 22, 43, tzinfo=UTC)
LEGACY = re.compile(r"^(Loved|Liked|Disliked|Laughed at|Emphasized|Questioned) “")


def body_text(attributed_body: bytes | None, text: str | None) -> str | None:
    """What Messages shows, read independently of ingest: attributedBody first, else `text`."""
    decoded = decode_attributed_body(attributed_body)
    return decoded if decoded is not None else text


def _canonical_sha(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


def _rows(db: Path, sql: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoCorpus:
    return build_demo_corpus(tmp_path_factory.mktemp("demo"))


@pytest.fixture()
def small(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    """A hand-written DB: two chats and one of each kind of row."""
    db = tmp_path / "chat.db"
    with ChatDbWriter(db, seed=3) as w:
        sam, dana = w.add_handle("+14155550132"), w.add_handle("dana@example.org")
        dm, group = w.add_chat([sam]), w.add_chat([sam, dana], display_name="Crew")
        first = w.add_message(dm, "hello there", from_me=True, ts=T0, body="attributed")
        reply = w.add_message(
            dm, "寿司 🍣", from_me=False, handle=sam, ts=T0.timestamp() + 60, reply_to_guid=first[1]
        )
        photo = w.add_message(
            group, "look", from_me=True, ts=T0.timestamp() + 90, body="both",
            attachments=[("IMG_1.HEIC", "image/heic")],
        )  # fmt: skip
        tap = w.add_reaction(first[1], 2000, from_me=False, handle=sam, ts=T0.timestamp() + 95,
                             chat=dm)  # fmt: skip
        w.edit_message(first[0], "hello there!!", T0.timestamp() + 100)
        w.unsend_message(reply[0], T0.timestamp() + 110)
        event = w.add_system_event(group, 2, 0, "Crew 2", from_me=True, ts=T0.timestamp() + 120)
        gone = w.add_message(group, "oops", from_me=False, handle=dana, ts=T0.timestamp() + 130)
        w.recently_delete(gone[0], group, T0.timestamp() + 140)
        w.hard_delete(photo[0])
    ids = {"first": first, "reply": reply, "photo": photo, "tap": tap, "event": event,
           "gone": gone, "dm": dm, "group": group}  # fmt: skip
    return db, ids


def test_writer_creates_apple_schema_with_triggers(small: tuple[Path, dict]) -> None:
    db, _ = small
    tables = {r[0] for r in _rows(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables >= APPLE_TABLES
    assert len(_rows(db, "SELECT name FROM sqlite_master WHERE type='trigger'")) == 17
    chats = _rows(db, "SELECT guid, style, display_name FROM chat ORDER BY ROWID")
    assert chats[0] == ("iMessage;-;+14155550132", 45, "")
    assert chats[1][0].startswith("iMessage;+;chat") and chats[1][1:] == (43, "Crew")


def test_dates_round_trip_as_apple_nanoseconds(small: tuple[Path, dict]) -> None:
    db, ids = small
    (date,) = _rows(db, "SELECT date FROM message WHERE guid=?", ids["first"][1])[0]
    assert date > 10**17
    assert apple_to_unix(date) == T0.timestamp()


def test_edit_writes_history_plist_and_current_body(small: tuple[Path, dict]) -> None:
    db, ids = small
    text, body, edited, info = _rows(
        db, "SELECT text, attributedBody, date_edited, message_summary_info FROM message "
        "WHERE ROWID=?", ids["first"][0])[0]  # fmt: skip
    assert text is None and decode_attributed_body(body) == "hello there!!"
    assert apple_to_unix(edited) == T0.timestamp() + 100
    history = plistlib.loads(info)["ec"]["0"]
    assert [decode_attributed_body(e["t"]) for e in history] == ["hello there", "hello there!!"]
    assert history[0]["d"] == pytest.approx(T0.timestamp() - 978307200)


def test_unsend_reply_tapback_and_own_group_message(small: tuple[Path, dict]) -> None:
    db, ids = small
    text, body, retracted, info, origin, part = _rows(
        db, "SELECT text, attributedBody, date_retracted, message_summary_info, "
        "thread_originator_guid, thread_originator_part FROM message WHERE ROWID=?",
        ids["reply"][0])[0]  # fmt: skip
    assert text is None and body is None and retracted > 0
    assert plistlib.loads(info)["rp"] == [0]
    assert origin == ids["first"][1] and part == "0:0:11"
    tap = _rows(db, "SELECT text, associated_message_guid, associated_message_type FROM message "
                "WHERE ROWID=?", ids["tap"][0])[0]  # fmt: skip
    assert tap == ("Loved “hello there”", f"p:0/{ids['first'][1]}", 2000)
    event = _rows(db, "SELECT handle_id, item_type, group_title, text FROM message WHERE ROWID=?",
                  ids["event"][0])[0]  # fmt: skip
    assert event == (0, 2, "Crew 2", None)


def test_recently_deleted_and_hard_deleted_rows(small: tuple[Path, dict]) -> None:
    db, ids = small
    gone = ids["gone"][0]
    assert _rows(db, "SELECT 1 FROM message WHERE ROWID=?", gone)
    assert not _rows(db, "SELECT 1 FROM chat_message_join WHERE message_id=?", gone)
    assert _rows(db, "SELECT chat_id FROM chat_recoverable_message_join WHERE message_id=?",
                 gone) == [(ids["group"],)]  # fmt: skip
    assert _rows(db, "SELECT guid FROM deleted_messages") == [(ids["photo"][1],)]
    assert not _rows(db, "SELECT 1 FROM message WHERE ROWID=?", ids["photo"][0])
    assert not _rows(db, "SELECT 1 FROM attachment")  # the trigger chain ran through the stubs


def test_sequoia_schema_gets_emoji_tapbacks(tmp_path: Path) -> None:
    db = tmp_path / "seq.db"
    with ChatDbWriter(db, SEQUOIA.read_text("utf-8")) as w:
        h = w.add_handle("+14155550132")
        chat = w.add_chat([h])
        _, guid = w.add_message(chat, "ship it", from_me=True, ts=T0, body="both")
        w.add_reaction(guid, 2006, from_me=False, handle=h, ts=T0, chat=chat, emoji="🚀")
    row = _rows(db, "SELECT text, associated_message_emoji FROM message WHERE ROWID=2")[0]
    assert row == ("Reacted 🚀 to “ship it”", "🚀")


def test_demo_is_deterministic(demo: DemoCorpus, tmp_path: Path) -> None:
    again = build_demo_corpus(tmp_path / "again")
    assert _canonical_sha(again.chat_db) == _canonical_sha(demo.chat_db)
    assert again.gold.read_bytes() == demo.gold.read_bytes()
    assert again.facts == demo.facts
    other = build_tiny_corpus(tmp_path / "tiny-seed", seed=8)
    tiny = build_tiny_corpus(tmp_path / "tiny")
    assert _canonical_sha(other.chat_db) != _canonical_sha(tiny.chat_db)


def test_demo_bodies_decode_to_what_was_written(demo: DemoCorpus) -> None:
    rows = _rows(demo.chat_db, "SELECT text, attributedBody FROM message")
    both = [(t, b) for t, b in rows if t is not None and b is not None]
    assert both and all(decode_attributed_body(b) == t for t, b in both)
    attributed_only = [b for t, b in rows if t is None and b is not None]
    assert len(attributed_only) / len(rows) == pytest.approx(0.3, abs=0.06)
    assert all(decode_attributed_body(b) is not None for b in attributed_only)


def test_demo_counts_match_an_independent_sql_count(demo: DemoCorpus) -> None:
    facts = demo.facts
    rows = _rows(
        demo.chat_db,
        "SELECT m.text, m.attributedBody FROM message m JOIN chat_message_join j "
        "ON j.message_id = m.ROWID WHERE m.associated_message_type = 0 AND m.item_type = 0 "
        "AND m.date_retracted = 0",
    )
    visible = [body_text(b, t) for t, b in rows]
    assert sum(not LEGACY.match(v or "") for v in visible) == facts["messages_visible"]
    (total,) = _rows(demo.chat_db, "SELECT COUNT(*) FROM message")[0]
    assert total == facts["rows"]["message_table"]
    assert 3000 <= total <= 5000
    assert len(facts["people"]) >= 5 and facts["people"]["Sam Rivera"]["received"] > 0
    by_chat = sum(c["messages"] for c in facts["chats"].values())
    assert by_chat == facts["messages_visible"]


def test_demo_has_every_feature(demo: DemoCorpus) -> None:
    rows = demo.facts["rows"]
    for name in ("tapbacks", "tapback_removals", "system_events", "legacy_reactions", "unsent",
                 "recently_deleted", "hard_deleted", "edited", "replies", "attachment_only",
                 "body_attributed_only", "body_both", "body_text_only"):  # fmt: skip
        assert rows[name] > 0, name
    keys = demo.facts["keys"]
    sushi = _rows(demo.chat_db, "SELECT text, attributedBody FROM message WHERE guid=?",
                  keys["sushi_jp"])[0]  # fmt: skip
    assert "寿司" in body_text(sushi[1], sushi[0]) and "🍣" in body_text(sushi[1], sushi[0])
    (late,) = _rows(demo.chat_db, "SELECT MAX(ROWID) FROM message WHERE associated_message_guid=?",
                    f"p:0/{keys['mom_flight22']}")[0]  # fmt: skip
    assert late > _rows(demo.chat_db, "SELECT ROWID FROM message WHERE guid=?",
                        keys["mom_flight22"])[0][0] + 1000  # fmt: skip


def _evidence(conn: sqlite3.Connection, guid: str, names: dict[str, str]) -> str:
    """What a message shows a reader: its text, its sender's name and its date."""
    text, body, date, from_me, address = conn.execute(
        "SELECT m.text, m.attributedBody, m.date, m.is_from_me, h.id FROM message m "
        "LEFT JOIN handle h ON h.ROWID = m.handle_id WHERE m.guid=?",
        (guid,),
    ).fetchone()
    when = datetime.fromtimestamp(apple_to_unix(date) or 0, UTC)
    sender = "me" if from_me else names.get(address, address)
    return f"{body_text(body, text)} | {sender} | {when:%B %-d, %Y}"


def test_gold_file_parses_and_points_at_real_messages(demo: DemoCorpus) -> None:
    items = [json.loads(line) for line in demo.gold.read_text("utf-8").splitlines()]
    assert 20 <= len(items) <= 32
    assert len({i["id"] for i in items}) == len(items)
    cats = {i["category"] for i in items}
    assert cats == {"lookup", "temporal", "person", "group", "stats", "unanswerable"}
    names = {h: n for n, p in demo.facts["people"].items() for h in p["handles"]}
    conn = sqlite3.connect(demo.chat_db)
    for item in items:
        assert set(item) == {"id", "question", "relevant_message_guids", "category", "expected"}
        if item["category"] in ("stats", "unanswerable"):
            assert item["relevant_message_guids"] == []
            continue
        seen = " ".join(_evidence(conn, g, names) for g in item["relevant_message_guids"])
        assert all(a in seen for a in item["expected"]["answer_contains"]), (item["id"], seen)
    conn.close()
    stats = {i["id"]: i["expected"]["stats"] for i in items if i["category"] == "stats"}
    priya = demo.facts["people"]["Priya Natarajan"]
    assert stats["stats-priya-received"]["received"] == priya["received"]
    assert stats["stats-top-2023"]["person"] == "Sam Rivera"


def test_addressbook_has_the_columns_the_reader_probes(demo: DemoCorpus) -> None:
    (path,) = demo.contacts.glob("Sources/*/AddressBook-v22.abcddb")
    conn = sqlite3.connect(path)
    cols = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")}
            for t in ("ZABCDRECORD", "ZABCDPHONENUMBER", "ZABCDEMAILADDRESS")}  # fmt: skip
    assert {"Z_PK", "ZFIRSTNAME", "ZLASTNAME", "ZNICKNAME", "ZORGANIZATION"} <= cols["ZABCDRECORD"]
    assert {"Z_PK", "ZOWNER", "ZFULLNUMBER", "ZLABEL"} <= cols["ZABCDPHONENUMBER"]
    assert {"Z_PK", "ZOWNER", "ZADDRESS", "ZADDRESSNORMALIZED"} <= cols["ZABCDEMAILADDRESS"]
    numbers = {r[0] for r in conn.execute("SELECT ZFULLNUMBER FROM ZABCDPHONENUMBER")}
    assert {"(415) 555-0132", "+44 20 7946 0958", "415.555.0199"} <= numbers
    mom = conn.execute("SELECT ZFIRSTNAME, ZLASTNAME FROM ZABCDRECORD WHERE ZNICKNAME='Mom'")
    assert mom.fetchall() == [(None, None)]
    sam = conn.execute(
        "SELECT COUNT(*) FROM ZABCDRECORD r JOIN ZABCDEMAILADDRESS e ON e.ZOWNER = r.Z_PK "
        "JOIN ZABCDPHONENUMBER p ON p.ZOWNER = r.Z_PK WHERE r.ZFIRSTNAME = 'Sam'"
    )
    assert sam.fetchone() == (1,)
    assert "3125550177" not in "".join(numbers).replace("-", "")  # Jordan has no card
    conn.close()


def test_write_addressbook_local_source(tmp_path: Path) -> None:
    path = write_addressbook(tmp_path, [Card("Ana", phones=("020 7946 0000",))], source=None)
    assert path == tmp_path / "AddressBook-v22.abcddb"
    assert _rows(path, "SELECT ZFULLNUMBER FROM ZABCDPHONENUMBER") == [("020 7946 0000",)]


def test_toggles_switch_features_off(tmp_path: Path) -> None:
    off = DemoToggles(attributed_body=False, both_columns=False, tapbacks=False, edits=False,
                      multilingual=False, ambiguous_sam=True)  # fmt: skip
    corpus = build_tiny_corpus(tmp_path, toggles=off)
    assert not _rows(corpus.chat_db, "SELECT 1 FROM message WHERE attributedBody IS NOT NULL")
    assert not _rows(corpus.chat_db, "SELECT 1 FROM message WHERE associated_message_type != 0")
    assert not _rows(corpus.chat_db, "SELECT 1 FROM message WHERE date_edited != 0 "
                     "AND date_retracted = 0")  # fmt: skip
    assert not _rows(corpus.chat_db, "SELECT 1 FROM message WHERE text LIKE '%寿司%'")
    dolores = corpus.facts["keys"]["dolores"]
    assert _rows(corpus.chat_db, "SELECT text FROM message WHERE guid=?", dolores)[0][0].startswith(
        "meet at 7:30"
    )
    assert {"Sam Rivera", "Sam Patel"} <= set(corpus.facts["people"])


def test_bulk_db_mix_and_append(tmp_path: Path) -> None:
    db = tmp_path / "bulk.db"
    info = build_bulk_chat_db(db, n_messages=20_000, n_people=12, seed=5)
    assert info.rows == 20_000 and info.last_rowid == 20_000
    assert info.tapbacks / info.rows == pytest.approx(0.05, abs=0.01)
    assert info.attributed_only / info.rows == pytest.approx(0.475, abs=0.03)
    assert len(_rows(db, "SELECT name FROM sqlite_master WHERE type='trigger'")) == 17
    assert _rows(db, "PRAGMA integrity_check") == [("ok",)]
    (groups,) = _rows(db, "SELECT COUNT(*) FROM message WHERE cache_roomnames IS NOT NULL")[0]
    assert groups > 0
    more = append_messages(db, 500)
    assert (more.first_rowid, more.last_rowid) == (20_001, 20_500)
    (count, last_dates) = _rows(db, "SELECT COUNT(*), MAX(date) FROM message WHERE ROWID<=20000")[0]
    (first_new,) = _rows(db, "SELECT MIN(date) FROM message WHERE ROWID>20000")[0]
    assert count == 20_000 and first_new > last_dates


def test_row_types_mirror_the_records_they_build() -> None:
    """The pipeline reads MessageRow / ReactionRow by name; `Message(*row)` must stay valid."""
    from dataclasses import fields

    from ingest.records import Message, MessageRow, Reaction, ReactionRow

    assert MessageRow._fields == tuple(f.name for f in fields(Message))
    assert ReactionRow._fields == tuple(f.name for f in fields(Reaction))
