"""Reading real and synthetic chat.db files end to end: messages, reactions, edits, deletions."""

from __future__ import annotations

import plistlib
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ingest import (
    Capabilities,
    Message,
    Reaction,
    ReadCounters,
    iter_rows,
    load_chats,
    load_contacts,
    load_deleted_guids,
    load_handles,
    load_recently_deleted_rowids,
    load_rowids,
    match_contacts,
    open_chat_db,
    read_changed,
    snapshot_state,
)
from ingest import queries as columns
from ingest.queries import EXTRA_FIELDS, MESSAGE_FIELDS, changed_sql
from ingest.synthetic import ChatDbWriter, build_tiny_corpus
from tests.paths import CHATDB_FIXTURES

DERIVED = CHATDB_FIXTURES / "derived"
SCHEMAS = {
    "ventura": DERIVED / "schema_ventura_imessagedb_chat.sql",
    "sequoia": DERIVED / "schema_sequoia_imessage-exporter_test.sql",
}
T0 = 1_700_000_000.0
URL_PLIST = CHATDB_FIXTURES / "imessage-exporter" / "url_message" / "URL.plist"
TRANSCRIPTION = CHATDB_FIXTURES / "crabstep" / "typedstream" / "Transcription"
MULTIPART = CHATDB_FIXTURES / "crabstep" / "typedstream" / "MultiPart"


def _read(path: Path, **kwargs: int) -> tuple[list[Message | Reaction], ReadCounters]:
    conn = open_chat_db(path)
    stats = ReadCounters()
    rows = list(iter_rows(conn, Capabilities.probe(conn), stats=stats, **kwargs))
    conn.close()
    return rows, stats


def _by_rowid(rows: list[Message | Reaction]) -> dict[int, Message]:
    return {r.rowid: r for r in rows if isinstance(r, Message)}


def test_row_layout_matches_the_queries() -> None:
    names = [n for n, _ in MESSAGE_FIELDS] + ["needs_extra", "chat_id"]
    assert names.index("ROWID") == columns.ROWID
    assert names.index("thread_originator_guid") == columns.THREAD
    assert names.index("chat_id") == columns.CHAT == len(names) - 1
    assert names.index("needs_extra") == columns.NEEDS_EXTRA
    extra = ["ROWID"] + [n for n, _ in EXTRA_FIELDS]
    assert extra.index("group_action_type") == columns.X_ACTION
    assert extra.index("part_count") == columns.X_PART_COUNT == len(extra) - 1


# -- the two real Apple databases ---------------------------------------------------------


def test_ventura_fixture() -> None:
    path = CHATDB_FIXTURES / "imessagedb" / "chat.db"
    conn = open_chat_db(path)
    caps = Capabilities.probe(conn)
    assert len(caps.message_columns) == 81 and caps.has_recoverable and caps.has_edits
    assert snapshot_state(conn, caps).max_rowid == 1602655
    rows, stats = _read(path)
    msgs = _by_rowid(rows)
    own = msgs[1602652]
    # NULL text: the body comes from attributedBody. Edge whitespace is trimmed on purpose
    # (the decoded body is "…set something up "): it carries no meaning for search.
    assert own.text == "iMessagedb test: Let’s set something up"
    assert (own.is_from_me, own.handle_rowid, own.chat_rowid) == (True, None, 1441)
    assert own.ts == pytest.approx(1684326163.581, abs=1e-3)  # 2023-05-17T12:22:43Z
    pics = msgs[1602655]
    assert pics.text == "It’s a lovely day!" and pics.kind == "text"
    assert [a.name for a in pics.attachments] == ["IMG_4911.heic", "IMG_4868.heic"]
    assert {a.mime for a in pics.attachments} == {"image/heic"}
    assert (stats.messages, stats.orphans, stats.decode_failures) == (2, 0, 0)
    chats = {c.rowid: c for c in load_chats(conn, caps)}
    assert not chats[2].is_group and chats[1441].is_group


def test_sequoia_fixture_orphans_and_link_preview() -> None:
    path = CHATDB_FIXTURES / "imessage-exporter" / "db" / "test.db"
    conn = open_chat_db(path)
    assert len(Capabilities.probe(conn).message_columns) == 91
    rows, stats = _read(path)
    msgs = _by_rowid(rows)
    assert set(msgs) == {123445, 452567} and stats.orphans == 2
    link = msgs[123445]
    assert link.chat_rowid is None and link.handle_rowid == 1
    assert link.text.startswith("https://www.ghacks.net/2020/01/23/lastpass-no-longer-listed")
    assert "LastPass no longer listed on the Chrome Web Store - gHacks Tech News" in link.text
    eat = msgs[452567]
    assert eat.chat_rowid is None
    assert eat.text == "I’m going to try to eat as quick as possible and then come over"
    assert len(eat.attachments) == 1
    assert "accessibilityLabel" not in eat.text  # a third-party sticker's asset key


def test_sequoia_fixture_genmoji_description(tmp_path: Path) -> None:
    # The fixture's Genmoji row (attachment 2) is not joined to any message; join it in a copy.
    path = tmp_path / "test.db"
    shutil.copy(CHATDB_FIXTURES / "imessage-exporter" / "db" / "test.db", path)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO message_attachment_join VALUES (452567, 2)")
    conn.close()
    msgs = _by_rowid(_read(path)[0])
    assert "[sticker: pink poodle]" in msgs[452567].text
    assert msgs[452567].text.startswith("I’m going to try")


# -- a synthetic database exercising every row kind ---------------------------------------


@dataclass
class Scenario:
    path: Path
    guids: dict[str, str] = field(default_factory=dict)
    rowids: dict[str, int] = field(default_factory=dict)


def _build(path: Path, schema: str) -> Scenario:
    sc = Scenario(path)
    sequoia = schema == "sequoia"
    with ChatDbWriter(path, SCHEMAS[schema].read_text()) as w:
        alice, bob = w.add_handle("+14155550132"), w.add_handle("bob@example.com")
        carol = w.add_handle("+14155550199")
        dm, grp = w.add_chat([alice]), w.add_chat([alice, bob], display_name="Trip")

        def add(name: str, chat: int | None, text: str, t: float, **kw: object) -> None:
            kw.setdefault("from_me", False)
            if not kw["from_me"] and "handle" not in kw:
                kw["handle"] = alice
            sc.rowids[name], sc.guids[name] = w.add_message(chat, text, ts=T0 + t, **kw)

        add("dinner", dm, "Dinner at 7?", 0, body="attributed")
        add("ok", dm, "Sounds good", 60, from_me=True)
        w.add_reaction(sc.guids["dinner"], 2000, from_me=True, ts=T0 + 70, chat=dm)
        w.remove_reaction(sc.guids["dinner"], 2000, from_me=True, ts=T0 + 80, chat=dm)
        w.add_reaction(sc.guids["ok"], 2001, from_me=False, handle=alice, ts=T0 + 90, chat=dm)
        if sequoia:
            w.add_reaction(sc.guids["ok"], 2006, from_me=False, handle=alice, ts=T0 + 95,
                           chat=dm, emoji="🎉")  # fmt: skip
        w.add_legacy_reaction(dm, "Loved", "Dinner at 7?", handle=alice, ts=T0 + 100)
        w.add_legacy_reaction(dm, "Liked", "something never said", handle=alice, ts=T0 + 110)
        add("plan", grp, "See you at 8", 200, from_me=True)
        w.edit_message(sc.rowids["plan"], "See you at 9", T0 + 260)
        add("oops", grp, "oops wrong chat", 300, handle=bob)
        w.unsend_message(sc.rowids["oops"], T0 + 330)
        add("snacks", grp, "I'll bring snacks", 400, handle=bob, reply_to_guid=sc.guids["plan"])
        w.add_system_event(grp, 2, group_title="Ski trip", from_me=True, ts=T0 + 500)
        w.add_system_event(grp, 1, 0, from_me=True, ts=T0 + 510, other_handle=carol)
        w.add_system_event(grp, 1, 1, from_me=True, ts=T0 + 520, other_handle=carol)
        w.add_system_event(grp, 3, 0, from_me=False, handle=bob, ts=T0 + 530)
        add("soft", dm, "delete me softly", 600)
        w.recently_delete(sc.rowids["soft"], dm, T0 + 610)
        add("hard", dm, "gone for good", 700)
        w.hard_delete(sc.rowids["hard"])
        add("photo", dm, "", 800, attachments=[("IMG_0001.heic", "image/heic")])
        add("orphan", None, "no chat for me", 900)
        add("poll", dm, "", 1000, body="none", associated_message_type=4000,
            associated_message_guid=f"p:0/{sc.guids['dinner']}")  # fmt: skip
        add("broken", dm, "plain text survives", 1100, body="text",
            attributedBody=b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@garbage")  # fmt: skip
        add("voice", dm, "", 1200, body="none", attributedBody=TRANSCRIPTION.read_bytes(),
            attachments=[("Audio Message.caf", "audio/x-caf")])  # fmt: skip
        add("link", dm, "https://chrissardegna.com/", 1300, body="both",
            balloon_bundle_id="com.apple.messages.URLBalloonProvider",
            payload_data=URL_PLIST.read_bytes())  # fmt: skip
        add("partial", dm, "", 1400, body="none", attributedBody=MULTIPART.read_bytes(),
            message_summary_info=_partial_unsend_plist(), part_count=6)  # fmt: skip
        if sequoia:
            add("genmoji", dm, "look", 1500, attachments=[("genmoji.heic", "image/heic")])
            w.conn.execute(
                "UPDATE attachment SET is_sticker=1, emoji_image_short_description='pink poodle'"
                " WHERE transfer_name='genmoji.heic'"
            )
    return sc


def _partial_unsend_plist() -> bytes:
    return plistlib.dumps({"amc": 0, "ust": True, "rp": [3]}, fmt=plistlib.FMT_BINARY)


@pytest.fixture(params=sorted(SCHEMAS))
def scenario(request: pytest.FixtureRequest, tmp_path: Path) -> Scenario:
    return _build(tmp_path / f"{request.param}.db", request.param)


def test_synthetic_every_row_kind(scenario: Scenario) -> None:
    rows, stats = _read(scenario.path)
    g, r = scenario.guids, scenario.rowids
    msgs = _by_rowid(rows)
    reactions = [x for x in rows if isinstance(x, Reaction)]
    texts = [m.text for m in msgs.values()]
    assert not any(t.startswith(("Loved “", "Liked “", "Removed a heart")) for t in texts)

    tap = {(x.target_guid, x.kind) for x in reactions}
    assert {(g["dinner"], 2000), (g["dinner"], 3000), (g["ok"], 2001)} <= tap
    removal = next(x for x in reactions if x.kind == 3000)
    assert removal.removed and removal.emoji == "❤️" and removal.is_from_me
    legacy = [x for x in reactions if x.target_guid == g["dinner"] and not x.is_from_me]
    assert [(x.kind, x.emoji) for x in legacy] == [(2000, "❤️")]
    assert (stats.legacy_reactions, stats.legacy_unmatched) == (1, 1)

    plan = msgs[r["plan"]]
    assert (plan.text, plan.edited) == ("See you at 9", True) and plan.date_edited
    oops = msgs[r["oops"]]
    assert (oops.kind, oops.event, oops.text) == ("system", "unsent a message", "")
    assert "oops wrong chat" not in " ".join(texts)
    assert msgs[r["snacks"]].reply_to_guid == g["plan"]
    assert msgs[r["ok"]].reply_to_guid is None  # Apple's reply_to_guid column is not a reply

    events = [m.event for m in msgs.values() if m.kind == "system"]
    assert "renamed the group to Ski trip" in events
    assert "added +14155550199" in events and "removed +14155550199" in events
    assert "left the group" in events
    assert all(m.text == "" for m in msgs.values() if m.kind == "system")

    assert r["soft"] not in msgs and stats.recently_deleted_skipped == 1
    assert r["hard"] not in msgs and r["poll"] not in msgs and stats.skipped == 1
    photo = msgs[r["photo"]]
    assert (photo.kind, photo.text) == ("attachment", "[photo IMG_0001.heic]")
    assert msgs[r["orphan"]].chat_rowid is None and stats.orphans == 1
    broken = msgs[r["broken"]]
    assert (broken.text, broken.decode_failed) == ("plain text survives", True)
    assert stats.decode_failures == 1
    voice = msgs[r["voice"]]
    assert voice.text == "[voice message: This is a test]" and voice.kind == "attachment"
    assert "Christopher Sardegna" in msgs[r["link"]].text
    assert msgs[r["partial"]].text == "test 1 test 3"  # part 3 ("test 2 ") was unsent
    assert msgs[r["dinner"]].text == "Dinner at 7?" and msgs[r["ok"]].is_from_me
    if "genmoji" in r:
        assert msgs[r["genmoji"]].text == "look [sticker: pink poodle]"
        assert any(x.kind == 2006 and x.emoji == "🎉" for x in reactions)
    dropped = stats.skipped + stats.recently_deleted_skipped + stats.legacy_unmatched
    assert stats.rows == len(rows) + dropped
    assert stats.messages == len(msgs) and stats.reactions == len(reactions)


def test_deletions_and_snapshot(scenario: Scenario) -> None:
    conn = open_chat_db(scenario.path)
    caps = Capabilities.probe(conn)
    guids, last = load_deleted_guids(conn, caps)
    assert guids == [scenario.guids["hard"]] and last > 0
    assert load_deleted_guids(conn, caps, after_rowid=last) == ([], last)
    assert load_recently_deleted_rowids(conn, caps) == {scenario.rowids["soft"]}
    rowids = load_rowids(conn)
    assert scenario.rowids["hard"] not in rowids and scenario.rowids["soft"] in rowids
    state = snapshot_state(conn, caps)
    assert state.max_rowid == max(rowids) and state.message_count == len(rowids)
    assert (state.max_deleted_rowid, state.recoverable_count) == (last, 1)
    assert state == snapshot_state(conn, caps)


def test_paging_returns_every_row_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    with ChatDbWriter(path) as w:
        alice = w.add_handle("+14155550132")
        dm, grp = w.add_chat([alice]), w.add_chat([alice, w.add_handle("bob@example.com")])
        for i in range(523):
            chat = grp if i % 3 else dm
            files = [("a.jpg", "image/jpeg")] * (i % 7 == 0)
            rowid, guid = w.add_message(
                chat, f"msg {i}", from_me=bool(i % 2), handle=alice, ts=T0 + i, attachments=files
            )
            if i % 5 == 0:
                w.add_reaction(guid, 2001, from_me=True, ts=T0 + i + 0.5, chat=chat)
            if i == 300:  # one message filed in two chats must still come out once
                other = grp if chat == dm else dm
                w.conn.execute("INSERT INTO chat_message_join VALUES (?, ?, 0)", (other, rowid))
    full = [x.rowid for x in _read(path)[0]]
    assert full == sorted(set(full)) and len(full) == 523 + 105
    for size in (1, 7, 100, 523, 5000):
        assert [x.rowid for x in _read(path, page_size=size)[0]] == full
    middle = full[len(full) // 2]
    assert [x.rowid for x in _read(path, after_rowid=middle, page_size=50)[0]] == [
        x for x in full if x > middle
    ]


def test_legacy_reaction_in_a_later_run_finds_its_target(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    with ChatDbWriter(path) as w:
        alice = w.add_handle("+14155550132")
        dm = w.add_chat([alice], service="SMS")
        first, guid = w.add_message(dm, "Dinner at 7?", from_me=True, ts=T0, service="SMS")
        w.add_legacy_reaction(dm, "Loved", "Dinner at 7?", handle=alice, ts=T0 + 60)
    rows, stats = _read(path, after_rowid=first)
    assert len(rows) == 1 and isinstance(rows[0], Reaction) and rows[0].target_guid == guid
    assert (stats.rows, stats.legacy_reactions) == (1, 1)


def test_read_changed_finds_edits_after_the_watermark(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    with ChatDbWriter(path) as w:
        alice = w.add_handle("+14155550132")
        dm = w.add_chat([alice])
        ids = {}
        for name, age in [("old", 7200), ("early_edit", 600), ("recent", 300), ("unsend", 60)]:
            ids[name], _ = w.add_message(dm, f"{name} text", from_me=True, ts=T0 - age)
        w.edit_message(ids["early_edit"], "edited before the last run", T0 - 500)
    # --- the last run happened at T0; now the user edits and unsends ---
    with ChatDbWriter(path) as w:
        w.edit_message(ids["recent"], "recent text, fixed", T0 + 100)
        w.unsend_message(ids["unsend"], T0 + 30)
        new, _ = w.add_message(dm, "after the watermark", from_me=True, ts=T0 + 200)
        w.edit_message(new, "after the watermark, edited", T0 + 210)
    conn = open_chat_db(path)
    caps = Capabilities.probe(conn)
    changed = read_changed(conn, caps, upto_rowid=ids["unsend"], since_date_unix=T0,
                           edited_after_unix=T0)  # fmt: skip
    by_id = {m.rowid: m for m in changed}
    assert set(by_id) == {ids["recent"], ids["unsend"]}
    assert (by_id[ids["recent"]].text, by_id[ids["recent"]].edited) == ("recent text, fixed", True)
    assert by_id[ids["unsend"]].event == "unsent a message"
    plan = " ".join(
        str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {changed_sql(caps)}", (0, 0, 0, 0))
    )
    assert "message_idx_date" in plan


def test_old_schema_without_newer_columns(tmp_path: Path) -> None:
    """A pre-Big Sur style DB: no thread_originator_guid, date_edited, message_summary_info."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE message (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
          text TEXT, handle_id INTEGER DEFAULT 0, service TEXT, date INTEGER,
          is_from_me INTEGER DEFAULT 0, item_type INTEGER DEFAULT 0,
          associated_message_guid TEXT, associated_message_type INTEGER DEFAULT 0);
        CREATE TABLE handle (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL,
          service TEXT NOT NULL);
        CREATE TABLE chat (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
          style INTEGER, chat_identifier TEXT, display_name TEXT);
        CREATE TABLE chat_message_join (chat_id INTEGER, message_id INTEGER);
        CREATE TABLE chat_handle_join (chat_id INTEGER, handle_id INTEGER);
        INSERT INTO handle VALUES (1, '+14155550132', 'SMS');
        INSERT INTO chat VALUES (1, 'SMS;-;+14155550132', 45, '+14155550132', NULL);
        INSERT INTO chat_handle_join VALUES (1, 1);
        -- dates in seconds, as before High Sierra
        INSERT INTO message VALUES (1, 'G1', 'hello from 2016', 1, 'SMS', 500000000, 0, 0, NULL, 0);
        INSERT INTO message VALUES (2, 'G2', 'Liked “hello from 2016”', 0, 'SMS', 500000060, 1, 0,
          NULL, 0);
        INSERT INTO chat_message_join VALUES (1, 1), (1, 2);
        """
    )
    conn.commit()
    conn.close()
    conn = open_chat_db(path)
    caps = Capabilities.probe(conn)
    assert not caps.has_edits and not caps.has_column("thread_originator_guid")
    assert not caps.has_recoverable and not caps.has_attachments
    rows, stats = _read(path)
    (msg,) = [x for x in rows if isinstance(x, Message)]
    (like,) = [x for x in rows if isinstance(x, Reaction)]
    assert (msg.text, msg.chat_rowid, msg.reply_to_guid) == ("hello from 2016", 1, None)
    assert msg.ts == pytest.approx(978307200 + 500000000)
    assert (like.target_guid, like.kind, like.is_from_me) == ("G1", 2001, True)
    assert read_changed(conn, caps, upto_rowid=2, since_date_unix=0, edited_after_unix=0) == []
    assert load_deleted_guids(conn, caps, 5) == ([], 5)
    assert snapshot_state(conn, caps).max_rowid == 2
    assert load_chats(conn, caps)[0].handle_rowids == (1,)


def test_tiny_corpus_reads_cleanly(tmp_path: Path) -> None:
    corpus = build_tiny_corpus(tmp_path / "tiny")
    rows, stats = _read(corpus.chat_db)
    msgs = [x for x in rows if isinstance(x, Message)]
    assert msgs and stats.decode_failures == 0
    assert not any(m.text.startswith(("Loved “", "Liked “")) for m in msgs)
    assert all(m.text == "" for m in msgs if m.kind == "system")
    conn = open_chat_db(corpus.chat_db)
    handles = load_handles(conn)
    matched = match_contacts(handles, load_contacts(corpus.contacts))
    assert matched and all(c.display_name for c in matched.values())
