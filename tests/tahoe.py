"""Test helpers for databases as macOS Sequoia and Tahoe leave them (ingest.synthetic.tahoe makes
them from the fixtures, inside the tests): a copy carrying the Apple-only trigger, what stock
SQLite says about a file, and the files' sha256."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

from ingest.synthetic import ChatDbWriter
from ingest.synthetic.tahoe import add_trigger


def tahoe_copy(src: Path, dest: Path) -> Path:
    """A writable copy of `src` at `dest` carrying the Apple-only trigger."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest)
    dest.chmod(0o644)
    add_trigger(dest)
    return dest


def stock_error(db: Path) -> str | None:
    """What stock SQLite says at the first query on `db` (None: it reads)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()
    return None


def digests(*paths: Path) -> dict[str, str | None]:
    """sha256 of each file (None for one that does not exist)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None for p in paths
    }


def multipage_chat_db(path: Path) -> Path:
    """A generated chat.db of some 400 pages (1500 messages), Apple's schema: room for damage."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with ChatDbWriter(path) as w:
        alice = w.add_handle("+14155550132")
        chat = w.add_chat([alice])
        for i in range(1500):
            w.add_message(chat, f"message {i} " + "lorem ipsum " * 10, from_me=bool(i % 2),
                          handle=alice, ts=1.7e9 + i, body="both")  # fmt: skip
    return path
