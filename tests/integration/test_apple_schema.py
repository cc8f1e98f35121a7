"""chat.db and AddressBook files as macOS Sequoia and Tahoe leave them — a trigger in syntax only
Apple's SQLite parses — read exactly as the same files without it, on both real schema
generations and the demo corpus, with and without a -wal file; byte-identical afterwards. A file
that is really damaged (cut, random bytes, a table's schema entry garbled) is still named damaged:
the reader skips what it cannot parse only after stock SQLite refused the file, and only as long
as every table loads."""

from __future__ import annotations

import hashlib
import logging
import plistlib
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

import ingest
from ingest import apple_schema
from ingest.apple_schema import Skipped, skipped_entries
from ingest.connect import open_chat_db, open_contacts_db
from ingest.errors import ChatDbBusy, ChatDbCorrupt
from ingest.messages import load_recently_deleted_rowids
from ingest.synthetic import ChatDbWriter
from ingest.synthetic.addressbook import Card, write_addressbook
from ingest.synthetic.demo import build_tiny_corpus
from ingest.synthetic.tahoe import (
    CONTACTS_TRIGGER_NAME,
    REPORTED_ERROR,
    TRIGGER_NAME,
    add_contacts_trigger,
    add_newer_schema,
    add_trigger,
)
from tests.paths import CHATDB_FIXTURES, shared_fixture
from tests.tahoe import digests, multipage_chat_db, stock_error, tahoe_copy

SEQUOIA = "imessage-exporter/db/test.db"
VENTURA = "imessagedb/chat.db"


def _fixture(name: str, tmp_path: Path) -> Path:
    """A writable copy of a real fixture, or of the tiny demo corpus's chat.db ("demo")."""
    if name == "demo":
        return build_tiny_corpus(tmp_path / "demo").chat_db
    src = shared_fixture(CHATDB_FIXTURES / name)
    dest = tmp_path / "plain" / Path(name).name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest)
    dest.chmod(0o644)
    return dest


def read_all(path: Path) -> str:
    """A digest of everything the readers take from `path`: every message, reaction and event,
    handles, chats, tombstones, Recently Deleted and the change fingerprint."""
    conn = open_chat_db(path)
    try:
        caps = ingest.Capabilities.probe(conn)
        h = hashlib.sha256()
        records = list(ingest.iter_rows(conn, caps))
        assert records, "the comparison must cover some rows"
        for part in (
            records,
            ingest.load_handles(conn),
            ingest.load_chats(conn, caps),
            ingest.load_deleted_guids(conn, caps),
            sorted(load_recently_deleted_rowids(conn, caps)),
            ingest.snapshot_state(conn, caps),
        ):
            h.update(repr(part).encode())
        return h.hexdigest()
    finally:
        conn.close()


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("name", [SEQUOIA, VENTURA, "demo"])
def test_a_tahoe_copy_reads_as_the_file_without_the_trigger(name: str, tmp_path: Path) -> None:
    plain = _fixture(name, tmp_path)
    tahoe = tahoe_copy(plain, tmp_path / "tahoe" / "chat.db")
    assert stock_error(tahoe) == REPORTED_ERROR  # what stock SQLite says, word for word
    before, files = digests(tahoe), _files(tahoe.parent)
    assert read_all(tahoe) == read_all(plain)
    assert digests(tahoe) == before, "chat.db must stay byte-identical"
    assert _files(tahoe.parent) == files  # no -wal, -shm or -journal left behind


@pytest.mark.parametrize("name", [SEQUOIA, VENTURA])
def test_newer_columns_and_tables_are_read_around(name: str, tmp_path: Path) -> None:
    """The columns and tables newer than both fixtures (filter_action, …), present with and
    without the trigger, change nothing the readers take."""
    plain = _fixture(name, tmp_path)
    newer = tmp_path / "newer" / "chat.db"
    newer.parent.mkdir()
    shutil.copy(plain, newer)
    add_newer_schema(newer)
    conn = open_chat_db(newer)
    assert ingest.Capabilities.probe(conn).has_column("filter_action")
    conn.close()
    assert read_all(newer) == read_all(plain)
    add_trigger(newer)
    assert read_all(newer) == read_all(plain)


def test_what_tahoe_adds_in_existing_columns_reads_as_before(tmp_path: Path) -> None:
    """Tahoe's additions live in columns older readers know (imessage-exporter's notes): a live
    translation in message_summary_info (`data`), a poll vote (associated_message_type 4000 on
    the poll's guid); with the newer SMS filter columns set. The message reads with its own
    text, the vote is no message, and nothing else changes."""
    tahoe = tahoe_copy(_fixture(SEQUOIA, tmp_path), tmp_path / "tahoe" / "chat.db")
    add_newer_schema(tahoe)
    translation = plistlib.dumps(
        {"amc": 0, "ust": True,
         "data": plistlib.dumps({"translatedText": "Bonjour", "translationLanguage": "fr"},
                                fmt=plistlib.FMT_BINARY)},
        fmt=plistlib.FMT_BINARY,
    )  # fmt: skip
    with ChatDbWriter(tahoe, skip_unparsable=True) as w:
        sam = w.add_handle("+14155550987")
        chat = w.add_chat([sam])
        _, said = w.add_message(chat, "Hello there", from_me=False, handle=sam, ts=1.76e9,
                                body="both", message_summary_info=translation,
                                filter_action=3, filter_sub_action=1)  # fmt: skip
        _, poll = w.add_message(chat, "", from_me=True, ts=1.76e9 + 60, body="none",
                                balloon_bundle_id="com.apple.messages.MSMessageExtensionBalloon"
                                "Plugin:0000000000:com.apple.messages.Polls")  # fmt: skip
        _, vote = w.add_message(chat, "", from_me=False, handle=sam, ts=1.76e9 + 90,
                                body="none", associated_message_type=4000,
                                associated_message_guid=f"p:0/{poll}")  # fmt: skip
    with closing(open_chat_db(tahoe)) as conn:
        caps = ingest.Capabilities.probe(conn)
        assert caps.has_column("filter_action")
        rows = {r.guid: r for r in ingest.iter_rows(conn, caps) if isinstance(r, ingest.Message)}
    assert rows[said].text == "Hello there" and not rows[said].edited
    assert vote not in rows


def test_only_the_parse_error_turns_skipping_on(tmp_path: Path) -> None:
    """A file stock SQLite reads is opened exactly as before (nothing skipped, nothing to name);
    the Tahoe copy names the one trigger it skipped, with SQLite's reason."""
    plain = _fixture(VENTURA, tmp_path)
    tahoe = tahoe_copy(plain, tmp_path / "tahoe" / "chat.db")
    with closing(open_chat_db(plain)) as conn:
        assert conn.execute("PRAGMA writable_schema").fetchone() == (0,)
        assert skipped_entries(conn) == ()
    conn = open_chat_db(tahoe)
    assert skipped_entries(conn) == (Skipped("trigger", TRIGGER_NAME, 'near "ON": syntax error'),)
    with pytest.raises(sqlite3.OperationalError):  # still read-only
        conn.execute("UPDATE handle SET id = 'x'")
    conn.close()


@contextmanager
def _wal_with_a_new_row(db: Path) -> Iterator[ChatDbWriter]:
    """`db` in WAL mode with a message committed to chat.db-wal only, written the way Messages
    writes (the writer stays open, as Messages does)."""
    with ChatDbWriter(db, skip_unparsable=True) as writer:
        assert writer.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        writer.conn.execute("PRAGMA wal_autocheckpoint=0")
        handle = writer.add_handle("+14155550987")
        chat = writer.add_chat([handle])
        writer.add_message(chat, "the kettle is on", from_me=False, handle=handle, ts=1.75e9)
        writer.conn.commit()
        yield writer


def _texts(path: Path) -> list[str | None]:
    with closing(open_chat_db(path)) as conn:
        caps = ingest.Capabilities.probe(conn)
        return [r.text for r in ingest.iter_rows(conn, caps) if isinstance(r, ingest.Message)]


@pytest.mark.parametrize("name", [SEQUOIA, "demo"])
def test_with_a_wal_file_live_and_copied(name: str, tmp_path: Path) -> None:
    tahoe = tahoe_copy(_fixture(name, tmp_path), tmp_path / "live" / "chat.db")
    copied = tmp_path / "copied"
    copied.mkdir()
    with _wal_with_a_new_row(tahoe):
        wal = Path(f"{tahoe}-wal")
        assert wal.stat().st_size > 0
        # Messages running: the new row is read from the WAL
        before = digests(tahoe, wal)
        assert "the kettle is on" in _texts(tahoe)
        assert digests(tahoe, wal) == before
        # a copy of chat.db with its -wal (as `casper index --chat-db` on a copied folder)
        shutil.copy(tahoe, copied / "chat.db")
        shutil.copy(wal, copied / "chat.db-wal")
    before = digests(copied / "chat.db", copied / "chat.db-wal")
    assert stock_error(copied / "chat.db") == REPORTED_ERROR
    assert "the kettle is on" in _texts(copied / "chat.db")
    assert digests(copied / "chat.db", copied / "chat.db-wal") == before


def _big(tmp_path: Path) -> Path:
    """A multi-page generated chat.db carrying the trigger."""
    path = multipage_chat_db(tmp_path / "chat.db")
    add_trigger(path)
    return path


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.9])
def test_a_tahoe_file_cut_short_is_still_damaged(tmp_path: Path, fraction: float) -> None:
    path = _big(tmp_path)
    with path.open("r+b") as f:
        f.truncate(int(path.stat().st_size * fraction) // 4096 * 4096)
    with pytest.raises(ChatDbCorrupt):
        read_all(path)


@pytest.mark.parametrize("page", [3, 8, 40, 200])
def test_a_tahoe_file_with_random_bytes_is_still_damaged(tmp_path: Path, page: int) -> None:
    path = _big(tmp_path)
    with path.open("r+b") as f:
        f.seek(4096 * page)
        f.write(bytes(range(256)) * 16 * 8)
    with pytest.raises(ChatDbCorrupt):
        read_all(path)


@pytest.mark.parametrize("table", ["chat_recoverable_message_join", "deleted_messages", "message"])
@pytest.mark.parametrize("apple_trigger", [False, True], ids=["plain", "tahoe"])
def test_a_garbled_table_entry_is_damage_not_something_to_skip(
    tmp_path: Path, table: str, apple_trigger: bool
) -> None:
    """Skipping every unparsable entry (writable_schema from the start) would read on without
    the table — Recently Deleted rows as live ones, tombstones lost — or fail later with "no
    such table"; the table check names the file damaged, with or without the Apple trigger."""
    path = _fixture(SEQUOIA, tmp_path)
    if apple_trigger:
        add_trigger(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'CREATE TABLE', 'CREATE TABLX') "
        "WHERE type = 'table' AND name = ?",
        (table,),
    )
    conn.close()
    before = digests(path)
    with pytest.raises(ChatDbCorrupt, match=f"damaged.*{table}"):
        open_chat_db(path)
    assert digests(path) == before


def test_the_table_check_without_pragma_table_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite before 3.37 has no pragma_table_list: tables are then asked one by one."""
    monkeypatch.setattr(apple_schema, "_loaded_tables", lambda conn: None)
    test_a_garbled_table_entry_is_damage_not_something_to_skip(
        tmp_path, "chat_recoverable_message_join", apple_trigger=True
    )
    tahoe = tahoe_copy(_fixture(VENTURA, tmp_path / "v"), tmp_path / "tahoe" / "chat.db")
    assert read_all(tahoe) == read_all(_fixture(VENTURA, tmp_path / "w"))


def test_an_index_or_trigger_that_does_not_parse_is_read_around(tmp_path: Path) -> None:
    """Next to the Apple trigger, an index entry that does not parse is skipped too (reads take
    the table, an index only makes them faster) and named."""
    plain = _fixture(SEQUOIA, tmp_path)
    reference = read_all(plain)
    tahoe = tahoe_copy(plain, tmp_path / "tahoe" / "chat.db")
    conn = sqlite3.connect(tahoe, isolation_level=None)
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'CREATE INDEX', 'CREATE INDEX ON ON') "
        "WHERE name = 'message_idx_date'"
    )
    conn.close()
    assert read_all(tahoe) == reference
    with closing(open_chat_db(tahoe)) as conn:
        assert {(s.kind, s.name) for s in skipped_entries(conn)} == {
            ("index", "message_idx_date"),
            ("trigger", TRIGGER_NAME),
        }


def test_a_schema_that_changes_mid_read_says_run_again(tmp_path: Path) -> None:
    """A macOS update adding the trigger while a connection is open: the next query re-reads the
    schema and fails; that is a changed file to read again, not a damaged one."""
    path = _fixture(VENTURA, tmp_path)
    conn = open_chat_db(path)
    add_trigger(path)
    with pytest.raises(ChatDbBusy, match="changed its schema") as info:
        ingest.load_handles(conn)
    assert "run it again" in (info.value.hint or "")
    conn.close()
    assert read_all(path) == read_all(_fixture(VENTURA, tmp_path / "again"))


def _cards() -> list[Card]:
    return [
        Card("Sam", "Rivera", phones=("(415) 555-0132",)),
        Card("Priya", "Natarajan", emails=("priya@example.com",)),
    ]


def test_an_addressbook_with_an_apple_only_trigger(tmp_path: Path) -> None:
    plain = write_addressbook(tmp_path / "plain", _cards())
    tahoe = write_addressbook(tmp_path / "tahoe", _cards())
    add_contacts_trigger(tahoe)
    assert stock_error(tahoe) is not None
    before = digests(tahoe)
    assert ingest.load_contacts(tahoe.parents[2]) == ingest.load_contacts(plain.parents[2])
    assert len(ingest.load_contacts(tahoe.parents[2])) == 2
    conn = open_contacts_db(tahoe)
    assert conn is not None
    assert [s.name for s in skipped_entries(conn)] == [CONTACTS_TRIGGER_NAME]
    conn.close()
    assert digests(tahoe) == before


def test_an_addressbook_with_a_garbled_table_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_addressbook(tmp_path / "ab", _cards())
    add_contacts_trigger(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'CREATE TABLE', 'CREATE TABLX') "
        "WHERE name = 'ZABCDPHONENUMBER'"
    )
    conn.close()
    with caplog.at_level(logging.WARNING, logger="ingest"):
        assert open_contacts_db(path) is None
    assert "ZABCDPHONENUMBER" in caplog.text and "damaged" in caplog.text
