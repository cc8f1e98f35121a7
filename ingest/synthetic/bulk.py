"""Large synthetic chat.db files for the ingest benchmark: 200k rows in seconds via executemany."""

from __future__ import annotations

import random
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ingest.body import encode_attributed_body
from ingest.dates import apple_to_unix, unix_to_apple_ns
from ingest.synthetic import apple, smalltalk
from ingest.synthetic.writer import OWNER_EMAIL, ChatDbWriter

_START = 1_546_300_800.0  # 2019-01-01T00:00:00Z
_SPAN = 5 * 365 * 86400.0
_AREAS = ("415", "510", "650", "212", "312", "617", "206", "503", "737", "929")
_COLUMNS = (
    "ROWID",
    "guid",
    "text",
    "attributedBody",
    "handle_id",
    "service",
    "account",
    "date",
    "date_read",
    "date_delivered",
    "is_delivered",
    "is_finished",
    "is_from_me",
    "is_read",
    "is_sent",
    "type",
    "version",
    "destination_caller_id",
    "associated_message_guid",
    "associated_message_type",
    "associated_message_range_length",
    "message_summary_info",
    "part_count",
    "cache_has_attachments",
    "cache_roomnames",
)
# Apple's indexes on the two big tables, and the trigger that fills cache_roomnames (set directly).
_BULK_OBJECTS = (
    "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND ((type='index' "
    "AND tbl_name IN ('message', 'chat_message_join')) OR (type='trigger' AND "
    "name='after_insert_on_chat_message_join'))"
)
_INSERT = f"INSERT INTO message ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"


@dataclass(frozen=True, slots=True)
class BulkInfo:
    path: Path
    rows: int  # message rows written by this call (tapbacks included)
    tapbacks: int
    attributed_only: int
    chats: int
    handles: int
    first_rowid: int
    last_rowid: int
    elapsed_s: float


@dataclass(slots=True)
class _Chat:
    rowid: int
    members: list[int]  # handle ROWIDs

    @property
    def is_group(self) -> bool:
        return len(self.members) > 1


def _line_pool(rng: random.Random, size: int = 4000) -> list[str]:
    pool: list[str] = []
    flavours = list(smalltalk.FLAVOURS)
    while len(pool) < size:
        pool.extend(text for _, text in smalltalk.session(rng, rng.choice(flavours)))
    return pool[:size]


def build_bulk_chat_db(
    path: Path | str, n_messages: int = 200_000, n_people: int = 50, seed: int = 1
) -> BulkInfo:
    """A fresh chat.db with `n_messages` rows over 5 years: 1:1 chats, groups, ~5% tapbacks."""
    path = Path(path)
    path.unlink(missing_ok=True)
    rng = random.Random(f"casper-bulk:{seed}")
    with ChatDbWriter(path, seed=seed) as w:
        handles = [w.add_handle(_address(i)) for i in range(n_people)]
        chats = [_Chat(w.add_chat([h]), [h]) for h in handles]
        for _ in range(max(1, n_people // 5)):
            members = rng.sample(handles, rng.randint(2, min(5, len(handles))))
            chats.append(_Chat(w.add_chat(members, display_name=_group_name(rng)), members))
        w.conn.commit()
    return _append(path, n_messages, rng, chats, 1, _START, _SPAN / max(n_messages, 1))


def append_messages(path: Path | str, n: int, seed: int = 2) -> BulkInfo:
    """Add `n` newer rows to an existing chat.db (an incremental run's new messages)."""
    path = Path(path)
    rng = random.Random(f"casper-bulk-append:{seed}")
    conn = sqlite3.connect(path)
    try:
        last_rowid, last_date = conn.execute(
            "SELECT COALESCE(MAX(ROWID), 0), COALESCE(MAX(date), 0) FROM message"
        ).fetchone()
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='message'").fetchone()
        members: dict[int, list[int]] = {}
        for chat, handle in conn.execute(
            "SELECT c.ROWID, j.handle_id FROM chat c JOIN chat_handle_join j "
            "ON j.chat_id = c.ROWID ORDER BY c.ROWID, j.handle_id"
        ):
            members.setdefault(chat, []).append(handle)
    finally:
        conn.close()
    chats = [_Chat(c, m) for c, m in members.items()]
    start = max(last_rowid, seq[0] if seq else 0) + 1
    begin = (apple_to_unix(last_date) or _START) + 60
    return _append(path, n, rng, chats, start, begin, 90.0)


def _address(i: int) -> str:
    return (
        f"+1{_AREAS[(i // 100) % len(_AREAS)]}5550{100 + i % 100:03d}"
        if i < 1000
        else f"person{i}@example.com"
    )


def _group_name(rng: random.Random) -> str:
    return rng.choice(
        [
            "",
            "",
            "Family",
            "Book club",
            "Roomies",
            "Work friends",
            "Soccer 🥅",
            "Trip planning",
            "Brunch crew",
        ]
    )


def _guid(rowid: int, bits: int) -> str:
    # ROWID-prefixed so the UNIQUE(guid) index grows at its end: random UUIDs double insert time.
    h = f"{bits:022X}"
    return f"{rowid:08X}-{h[:4]}-4{h[4:7]}-8{h[7:10]}-{h[10:]}"


def _append(
    path: Path,
    n: int,
    rng: random.Random,
    chats: list[_Chat],
    first_rowid: int,
    start: float,
    mean_gap: float,
) -> BulkInfo:
    began = time.perf_counter()
    pool = _line_pool(rng)
    n_pool = len(pool)
    encoded: dict[str, bytes] = {}
    summary, owner, account = apple.DEFAULT_SUMMARY, OWNER_EMAIL, f"E:{OWNER_EMAIL}"
    rooms = _room_names(path)
    weights = [3.0 if not c.is_group else 2.0 for c in chats]
    rows: list[tuple[object, ...]] = []
    joins: list[tuple[int, int, int]] = []
    recent: dict[int, list[tuple[str, str]]] = {c.rowid: [] for c in chats}
    attachments: list[int] = []
    base_ns = unix_to_apple_ns(start)
    offset, tapbacks, attributed_only = 0.0, 0, 0
    rand, choice = rng.random, rng.choice
    for i, chat in enumerate(rng.choices(chats, weights, k=n)):
        rowid = first_rowid + i
        offset += rng.expovariate(1.0 / mean_gap)
        date = base_ns + int(offset * 1e9)
        from_me = rand() < 0.45
        members = chat.members
        handle = 0 if from_me and chat.is_group else members[int(rand() * len(members))]
        guid = _guid(rowid, rng.getrandbits(88))
        history = recent[chat.rowid]
        assoc, kind, length = None, 0, 0
        if history and rand() < 0.05:
            target_guid, target_text = choice(history)
            kind = choice((2000, 2000, 2001, 2003, 2004))
            text = apple.tapback_text(kind, apple.quote_of(target_text))
            assoc, length = f"p:0/{target_guid}", apple.utf16_len(target_text)
            tapbacks += 1
        else:
            text = pool[int(rand() * n_pool)]
            if rand() < 0.01:
                text = apple.ORC + text
                attachments.append(rowid)
            history.append((guid, text))
            if len(history) > 8:
                del history[0]
        body = encoded.get(text)
        if body is None:
            body = encoded[text] = encode_attributed_body(text)
        attr_only = kind == 0 and rand() < 0.5
        attributed_only += attr_only
        rows.append(
            (
                rowid,
                guid,
                None if attr_only else text,
                body,
                handle,
                "iMessage",
                account,
                date,
                0 if from_me else date + 30_000_000_000,
                date + 1_000_000_000 if from_me else 0,
                1,
                1,
                from_me,
                not from_me,
                from_me,
                0,
                10,
                owner,
                assoc,
                kind,
                length,
                summary,
                2 if text[:1] == apple.ORC else 1,
                0,
                rooms.get(chat.rowid),
            )
        )
        joins.append((chat.rowid, rowid, date))
    _insert_rows(path, rows, joins, rng, attachments, fast=n >= 20_000)
    conn = sqlite3.connect(path)
    handles = conn.execute("SELECT COUNT(*) FROM handle").fetchone()[0]
    conn.close()
    return BulkInfo(
        path,
        n,
        tapbacks,
        attributed_only,
        len(chats),
        handles,
        first_rowid,
        first_rowid + n - 1,
        time.perf_counter() - began,
    )


def _room_names(path: Path) -> dict[int, str]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT ROWID, room_name FROM chat WHERE room_name IS NOT NULL"))
    finally:
        conn.close()


def _insert_rows(
    path: Path,
    rows: list[tuple[object, ...]],
    joins: list[tuple[int, int, int]],
    rng: random.Random,
    attachments: list[int],
    fast: bool,
) -> None:
    """One transaction; `fast` drops Apple's message indexes and join trigger, then restores."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    if fast:
        conn.execute("PRAGMA journal_mode=OFF")  # a scratch file: no rollback journal needed
    saved = conn.execute(_BULK_OBJECTS).fetchall() if fast else []
    try:
        with conn:
            for name, sql in saved:
                conn.execute(
                    f"DROP {'TRIGGER' if sql.startswith('CREATE TRIGGER') else 'INDEX'} {name}"
                )
            conn.executemany(_INSERT, rows)
            conn.executemany(
                "INSERT INTO chat_message_join (chat_id, message_id, message_date) "
                "VALUES (?, ?, ?)",
                joins,
            )
            _write_attachments(conn, rng, attachments)
    finally:
        with conn:
            for _, sql in saved:
                conn.execute(sql)
        conn.close()


def _write_attachments(conn: sqlite3.Connection, rng: random.Random, messages: list[int]) -> None:
    for message in messages:
        guid = str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()
        name = f"IMG_{rng.randint(1000, 9999)}.HEIC"
        cur = conn.execute(
            "INSERT INTO attachment (guid, filename, uti, mime_type, transfer_state, "
            "transfer_name, total_bytes, original_guid) VALUES (?, ?, ?, ?, 5, ?, ?, ?)",
            (
                guid,
                f"~/Library/Messages/Attachments/00/00/{guid}/{name}",
                "public.heic",
                "image/heic",
                name,
                rng.randrange(80_000, 4_000_000),
                guid,
            ),
        )
        conn.execute(
            "INSERT INTO message_attachment_join (message_id, attachment_id) VALUES (?, ?)",
            (message, cur.lastrowid),
        )
