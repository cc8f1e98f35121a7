"""A chat.db whose history is rewritten the ways it happens on a Mac, and what a home holds.

- `put_back`: an older copy of chat.db restored (a backup, a migration): the messages it lacks
  are gone, and its ROWID sequence hands their ROWIDs to the next messages.
- `renumber`: Messages in iCloud downloading the history again: every message and chat has a
  new ROWID, the same guid.
- `delete_rows`: rows gone without a trace (no tombstone), some of them the newest.

`contents` reads what a home holds (the store's tables, the index's chunks) so a home brought
up to date incrementally can be compared with one built clean from the same chat.db.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from ingest.synthetic import apple
from ingest.synthetic.writer import ChatDbWriter


def _open(chat_db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(chat_db)
    for name in apple.TRIGGER_FUNCTIONS:
        conn.create_function(name, -1, lambda *_: None)
    return conn


def put_back(backup: Path, chat_db: Path) -> None:
    """The older copy in place of chat.db (its -wal and -shm gone with the newer one)."""
    for suffix in ("-wal", "-shm"):
        Path(f"{chat_db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(backup, chat_db)


def send(chat_db: Path, text: str, at: float | None = None) -> tuple[int, str]:
    """One message received in the first 1:1 chat, as Messages writes it; (ROWID, guid)."""
    with ChatDbWriter(chat_db) as writer:
        chat, handle = writer.conn.execute(
            "SELECT j.chat_id, j.handle_id FROM chat_handle_join j JOIN chat c ON c.ROWID = "
            "j.chat_id WHERE c.style = 45 ORDER BY j.chat_id LIMIT 1"
        ).fetchone()
        ts = at if at is not None else time.time()
        return writer.add_message(chat, text, from_me=False, handle=handle, ts=ts,
                                  body="attributed")  # fmt: skip


def renumber(chat_db: Path) -> None:
    """Every message and chat a new ROWID (in reverse order, far above the old ones), the same
    guids, every join following; the ROWID sequences moved on."""
    conn = _open(chat_db)
    try:
        with conn:
            _move(conn, "message", ["chat_message_join.message_id",
                                    "message_attachment_join.message_id",
                                    "chat_recoverable_message_join.message_id"])  # fmt: skip
            _move(conn, "chat", ["chat_message_join.chat_id", "chat_handle_join.chat_id",
                                 "chat_recoverable_message_join.chat_id"])  # fmt: skip
    finally:
        conn.close()


def _move(conn: sqlite3.Connection, table: str, refs: list[str]) -> None:
    top = conn.execute(f"SELECT max(ROWID) FROM {table}").fetchone()[0]
    base = top * 3 + 1000
    # new = base - old: reverse order, no overlap with the old numbers
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.execute(f"UPDATE {table} SET ROWID = {base} - ROWID")
    for ref in refs:
        ref_table, column = ref.split(".")
        if ref_table in tables:
            conn.execute(f"UPDATE {ref_table} SET {column} = {base} - {column}")
    conn.execute(
        "UPDATE sqlite_sequence SET seq = (SELECT max(ROWID) FROM " + table + ") WHERE name = ?",
        (table,),
    )


def delete_rows(chat_db: Path, *, middle: int, newest: int) -> list[str]:
    """Delete `middle` rows from the middle and the `newest` rows, without tombstones (Apple's
    delete triggers left out); their guids."""
    conn = _open(chat_db)
    try:
        rowids = [r for (r,) in conn.execute("SELECT ROWID FROM message ORDER BY ROWID")]
        half = len(rowids) // 2
        gone = rowids[half : half + middle] + rowids[len(rowids) - newest :]
        marks = ",".join("?" * len(gone))
        guids = [g for (g,) in conn.execute(f"SELECT guid FROM message WHERE ROWID IN ({marks})",
                                             gone)]  # fmt: skip
        with conn:
            conn.execute("CREATE TEMP TABLE quiet AS SELECT name, sql FROM sqlite_master "
                         "WHERE type = 'trigger' AND tbl_name = 'message'")  # fmt: skip
            for (name,) in conn.execute("SELECT name FROM temp.quiet").fetchall():
                conn.execute(f"DROP TRIGGER {name}")
            conn.execute(f"DELETE FROM chat_message_join WHERE message_id IN ({marks})", gone)
            conn.execute(f"DELETE FROM message WHERE ROWID IN ({marks})", gone)
            for (sql,) in conn.execute("SELECT sql FROM temp.quiet").fetchall():
                conn.execute(sql)
        return guids
    finally:
        conn.close()


# ---- what a home holds ---------------------------------------------------------------------
STORE_TABLES = {
    "messages": "SELECT * FROM messages ORDER BY rowid",
    "chats": "SELECT * FROM chats ORDER BY id",
    "people": "SELECT * FROM people ORDER BY id",
    "person_names": "SELECT * FROM person_names ORDER BY 1, 2, 3",
    "handles": "SELECT * FROM handles ORDER BY address",
    "reactions": "SELECT * FROM reactions ORDER BY guid",
    "contact_stats": "SELECT person_id, data FROM contact_stats ORDER BY person_id",
    "dirty_chats": "SELECT * FROM dirty_chats",
}


def contents(home: Path) -> dict[str, Any]:
    """Every row of the store's tables above, and the chunks of the published index (id,
    content hash, ROWIDs, text), each as a list in a fixed order."""
    conn = sqlite3.connect(home / "casper.sqlite")
    try:
        found: dict[str, Any] = {
            name: [tuple(r) for r in conn.execute(sql)] for name, sql in STORE_TABLES.items()
        }
    finally:
        conn.close()
    found["chunks"] = chunks(home)
    return found


def chunks(home: Path) -> list[tuple[str, str, str, str]]:
    from casper.index.files import read_generation
    from casper.index.lance_import import lancedb

    index_dir = home / "index.lance"
    table = lancedb().connect(str(index_dir)).open_table("chunks")
    version = read_generation(index_dir).version
    if version is not None:
        table.checkout(version)
    rows = table.search().select(["id", "content_hash", "rowids", "text"]).limit(None)
    return sorted(
        (r["id"], r["content_hash"], json.dumps(list(r["rowids"])), r["text"])
        for r in rows.to_arrow().to_pylist()
    )


def differences(a: dict[str, Any], b: dict[str, Any]) -> dict[str, str]:
    """Per table that differs: how many rows each side has that the other lacks, and one."""
    out = {}
    for name in a:
        left, right = set(a[name]), set(b[name])
        if left != right or len(a[name]) != len(b[name]):
            only_a, only_b = sorted(left - right, key=str), sorted(right - left, key=str)
            first = (only_a or only_b or [None])[0]
            out[name] = f"{len(only_a)} only here, {len(only_b)} only in the clean build; {first}"
    return out
