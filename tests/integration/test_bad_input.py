"""Unusable chat.db files map to their own IngestError (with a hint); reading never writes."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest import (
    Capabilities,
    Message,
    connect,
    iter_rows,
    load_chats,
    load_handles,
    read_changed,
    snapshot_state,
)
from ingest.connect import open_chat_db, open_contacts_db
from ingest.errors import (
    ChatDbBusy,
    ChatDbCorrupt,
    ChatDbMissing,
    ChatDbUnreadable,
    IngestError,
    NotAMessagesDb,
)
from ingest.synthetic import ChatDbWriter
from tests.paths import CHATDB_FIXTURES

T0 = 1_700_000_000.0


def _expect(error: type[IngestError], path: Path, **kwargs: float) -> IngestError:
    with pytest.raises(error) as info:
        open_chat_db(path, **kwargs)
    assert type(info.value) is error
    assert info.value.hint and info.value.hint.strip()
    assert str(info.value)
    return info.value


@pytest.fixture
def big_db(tmp_path: Path) -> Path:
    """A multi-page synthetic chat.db (rollback journal, like a copied chat.db)."""
    path = tmp_path / "chat.db"
    with ChatDbWriter(path) as w:
        alice = w.add_handle("+14155550132")
        chat = w.add_chat([alice])
        for i in range(1500):
            text = f"message {i} " + "lorem ipsum " * 10
            w.add_message(chat, text, from_me=bool(i % 2), handle=alice, ts=1.7e9 + i, body="both")
    return path


def test_missing_file(tmp_path: Path) -> None:
    _expect(ChatDbMissing, tmp_path / "nope" / "chat.db")


def test_directory_is_not_a_db(tmp_path: Path) -> None:
    _expect(NotAMessagesDb, tmp_path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    path.touch()
    assert "empty" in str(_expect(NotAMessagesDb, path))


def test_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    path.write_bytes(b"this is a plain text file, not SQLite\n" * 200)
    assert "not an SQLite database" in str(_expect(NotAMessagesDb, path))


def test_sqlite_without_messages_tables(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT)")
    conn.close()
    err = _expect(NotAMessagesDb, path)
    assert "message" in str(err) and "chat" in str(err)


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9])
def test_truncated_db(big_db: Path, fraction: float) -> None:
    size = big_db.stat().st_size
    with big_db.open("r+b") as f:
        f.truncate(int(size * fraction) // 4096 * 4096)
    _expect(ChatDbCorrupt, big_db)


def test_garbage_pages_surface_as_corrupt_while_reading(big_db: Path) -> None:
    with big_db.open("r+b") as f:
        f.seek(4096 * 8)
        f.write(bytes(range(256)) * 16 * 40)
    with pytest.raises(ChatDbCorrupt):
        conn = open_chat_db(big_db)
        list(iter_rows(conn, Capabilities.probe(conn)))


def test_cantopen_is_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "chat.db"
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", path)

    def refuse(*_args: object, **_kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(connect.sqlite3, "connect", refuse)
    assert "Full Disk Access" in (_expect(ChatDbUnreadable, path).hint or "")


def test_auth_denied_at_first_query_is_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.db"
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", path)
    real_probe = connect._probe

    def denied(conn: sqlite3.Connection, p: Path) -> None:
        conn.set_authorizer(lambda *_args: sqlite3.SQLITE_DENY)
        real_probe(conn, p)

    monkeypatch.setattr(connect, "_probe", denied)
    _expect(ChatDbUnreadable, path)


def _open_as_nobody(path: Path) -> str:
    """Fork, drop to uid 65534, try to open `path`; return the error class name (or 'ok')."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        os.close(read_fd)
        result = "crash"
        try:
            os.setgid(65534)
            os.setuid(65534)
            open_chat_db(path).close()
            result = "ok"
        except IngestError as exc:
            result = type(exc).__name__
        finally:
            os.write(write_fd, result.encode())
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        out = pipe.read().decode()
    os.waitpid(pid, 0)
    return out


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A temp dir another user can traverse (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="casper-perm-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_permission_denied_for_real(world_dir: Path) -> None:
    path = world_dir / "chat.db"
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", path)
    path.chmod(0o600)
    if os.geteuid() == 0:
        assert _open_as_nobody(path) == "ChatDbUnreadable"
        hidden = world_dir / "locked"
        hidden.mkdir(mode=0o700)
        shutil.copy(path, hidden / "chat.db")
        assert _open_as_nobody(hidden / "chat.db") == "ChatDbUnreadable"  # even stat() fails
    else:
        path.chmod(0)
        _expect(ChatDbUnreadable, path)


_LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def test_locked_by_a_writer_is_busy(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", path)
    locker = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        start = time.monotonic()
        _expect(ChatDbBusy, path, busy_timeout_s=0.3)
        assert time.monotonic() - start < 0.3 + 1.0
    finally:
        locker.communicate("", timeout=10)
    open_chat_db(path, busy_timeout_s=0.3).close()  # fine once the writer is done


def test_awkward_path_characters(tmp_path: Path) -> None:
    folder = tmp_path / "my chats #1?%20&x=y"
    folder.mkdir()
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", folder / "chat.db")
    conn = open_chat_db(folder / "chat.db")
    assert conn.execute("SELECT COUNT(*) FROM message").fetchone() == (2,)


def test_connection_is_read_only(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", path)
    conn = open_chat_db(path)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("CREATE TABLE sneaky (x)")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("UPDATE handle SET id = 'x'")


def test_contacts_db_failures_are_not_fatal(tmp_path: Path) -> None:
    garbage = tmp_path / "AddressBook-v22.abcddb"
    garbage.write_bytes(b"\x00garbage" * 512)
    assert open_contacts_db(garbage) is None
    assert open_contacts_db(tmp_path / "missing.abcddb") is None
    empty = tmp_path / "empty.abcddb"
    empty.touch()
    assert open_contacts_db(empty) is None


def test_reading_never_touches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", path)
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    conn = open_chat_db(path)
    caps = Capabilities.probe(conn)
    list(iter_rows(conn, caps))
    load_handles(conn), load_chats(conn, caps), snapshot_state(conn, caps)
    read_changed(conn, caps, upto_rowid=10**9, since_date_unix=T0, edited_after_unix=T0)
    conn.close()
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.db"]  # no -wal/-shm/-journal


def test_live_wal_rows_are_visible(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=wal")
    writer.execute("PRAGMA wal_autocheckpoint=0")  # keep the new row in chat.db-wal only
    writer.execute("INSERT INTO message (guid, text, date) VALUES ('NEW-GUID', 'fresh', 1)")
    try:
        conn = open_chat_db(path)
        rows = list(iter_rows(conn, Capabilities.probe(conn)))
        assert [m.text for m in rows if isinstance(m, Message) and m.guid == "NEW-GUID"] == [
            "fresh"
        ]
        writer.execute("INSERT INTO message (guid, text, date) VALUES ('NEWER', 'x', 2)")
    finally:
        writer.close()
