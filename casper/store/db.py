"""Casper's SQLite store: people, chats, messages with reactions folded in, precomputed stats.

Imports: sqlite3, casper.records, casper.errors, casper.datadir, casper.stats (pure),
casper.store.schema.
No agent/backends/cli.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import Any

from casper.datadir import not_yours
from casper.errors import CasperError, IndexMissing, StoreBusy
from casper.records import StoredMessage
from casper.stats import emoji_field
from casper.store.directory import DirectoryQueries
from casper.store.schema import migrate
from casper.store.stats_db import StatsQueries
from ingest.columns import NAMES as CARRIED
from ingest.columns import SEARCHED, searched_text

# associated_message_type → label; 3000-range codes remove the matching 2000-range one
REACTION_LABELS = {
    1000: "sticker",
    2000: "❤️",
    2001: "👍",
    2002: "👎",
    2003: "😂",
    2004: "‼️",
    2005: "❓",
    2006: "emoji",
    2007: "sticker",
}

_MAX_ROWID = 2**63 - 1  # SQLite's largest integer
PUBLISHED_THROUGH = "published_through"  # meta key: indexed_through of the last published run

# The chat.db columns stored as they are (ingest.columns: CARRIED) come last in every layout.
_MSG_COLS = ", ".join(
    ("rowid", "guid", "chat_id", "sender", "ts", "text", "kind", "edited", "reply_to",
     "attachments", "event", *CARRIED)
)  # fmt: skip
_CARRIED_AT = 11  # where the carried columns start in a _MSG_COLS row
# Row layouts of put_messages. Most messages are plain text (no reply, attachment, event, edit
# or emoji), and sqlite3 binds each None through its adapter lookup (~1 µs), so plain rows go
# through a statement that writes those columns as literals.
FULL_COLS = (
    "rowid", "guid", "chat_id", "sender", "ts", "text", "kind", "edited", "reply_to",
    "attachments", "event", "lday", "lhour", "emoji", *CARRIED,
)  # fmt: skip
PLAIN_COLS = ("rowid", "guid", "chat_id", "sender", "ts", "text", "lday", "lhour", *CARRIED)
_FULL_SQL = f"INSERT OR REPLACE INTO messages({', '.join(FULL_COLS)}) VALUES "
_FULL_VALUES = f"({', '.join('?' * len(FULL_COLS))})"
_PLAIN_SQL = f"INSERT OR REPLACE INTO messages({', '.join(PLAIN_COLS)}, kind, edited) VALUES "
_PLAIN_VALUES = f"({', '.join('?' * len(PLAIN_COLS))}, 'text', 0)"
_INSERT_FULL = _FULL_SQL + _FULL_VALUES
# Rows per INSERT statement: one sqlite3_step (and GIL round trip) per 50 rows instead of per
# row saves ~20% of the insert's CPU; 50 × 14 parameters stays far below SQLite's limit.
_ROWS_PER_INSERT = 50
# Pages the store may cache (negative: KiB). Bulk loads and index builds touch tens of MB.
_CACHE_KIB = 64 * 1024
# how long opening waits for a writer: a first fill holds the store (rollback journal) until it
# commits, ~10 s for a 1M-message history here (see Store.first_fill)
BUSY_TIMEOUT_S = 30.0
_INSERT_REACTION = (
    "INSERT OR REPLACE INTO reactions(guid, target_guid, sender, kind, emoji, ts) "
    "VALUES (?,?,?,?,?,?)"
)


def put_message_rows(
    conn: sqlite3.Connection, full: Sequence[tuple], plain: Sequence[tuple] = ()
) -> None:
    """Insert or replace message rows laid out as FULL_COLS, and plain ones as PLAIN_COLS
    (into the store, or into an ingest worker's staging file of the same layout)."""
    _insert_rows(conn, _FULL_SQL, _FULL_VALUES, full)
    _insert_rows(conn, _PLAIN_SQL, _PLAIN_VALUES, plain)


def _insert_rows(conn: sqlite3.Connection, head: str, values: str, rows: Sequence[tuple]) -> None:
    """`head` + many `values` groups per statement; the remainder one row at a time."""
    n = _ROWS_PER_INSERT
    whole = len(rows) - len(rows) % n
    if whole:
        sql = head + ", ".join([values] * n)
        execute, flat = conn.execute, chain.from_iterable
        for i in range(0, whole, n):
            execute(sql, tuple(flat(rows[i : i + n])))
    if whole < len(rows):
        conn.executemany(head + values, rows[whole:])


def put_reaction_rows(
    conn: sqlite3.Connection, rows: Iterable[tuple[str, str, str, int, str | None, float]]
) -> None:
    """(guid, target_guid, sender, kind, emoji, ts) rows; the final state is derived on read."""
    conn.executemany(_INSERT_REACTION, rows)


def _carried_values(m: StoredMessage) -> tuple[str | int | float | None, ...]:
    """A message's carried columns in the store's order (None for any it does not hold)."""
    held = dict(m.carried)
    return tuple(held.get(name) for name in CARRIED)


def ensure_private_dir(path: Path) -> None:
    """Create the data dir readable by the owner only (0700); refuse one another user made (or
    reached through their link): they could replace or link any file written in it."""
    problem = not_yours(path)
    if problem is None:
        path.mkdir(parents=True, exist_ok=True)
        problem = not_yours(path)  # made by someone else just now
    if problem is not None:
        raise CasperError(f"the data dir {path} {problem}",
                          hint="use a data dir of your own (--home, $CASPER_HOME)")  # fmt: skip
    os.chmod(path, 0o700)


def _private_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            os.chmod(p, 0o600)


class Store(DirectoryQueries, StatsQueries):
    """Read/write access to `casper.sqlite`. One connection; callers own transactions."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._names: dict[str, str] | None = None

    # ---- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> Store:
        """Open (and migrate) the store; without `create`, a missing store is IndexMissing."""
        if not path.exists() and not create:
            raise IndexMissing(f"no Casper index at {path.parent}")
        ensure_private_dir(path.parent)
        old_umask = os.umask(0o077)
        try:
            # not bound to one thread: bulk_load builds indexes on a helper thread (never
            # while this one uses the connection)
            conn = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA foreign_keys=OFF")
                conn.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
                conn.execute("PRAGMA temp_store=MEMORY")  # index builds sort in memory
                migrate(conn)
            except sqlite3.OperationalError as exc:
                conn.close()
                if "locked" not in str(exc):
                    raise
                busy = f"`casper index` is still filling the store (waited {BUSY_TIMEOUT_S:g} s)"
                raise StoreBusy(busy) from None
        finally:
            os.umask(old_umask)
        _private_file(path)
        return cls(conn, path)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write: a crash inside leaves the previous store intact."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self._names = None

    @contextmanager
    def first_fill(self) -> Iterator[None]:
        """Fill an empty store with each page written once. In WAL mode every page of a first
        fill goes to the log and the checkpoint then copies it into the file (0.6 s of a
        1M-message first index here); a rollback journal keeps only pages that existed before,
        and an empty store has almost none. It is as crash-safe: a hot journal is rolled back
        on the next open. WAL is set again after: readers beside `casper index` rely on it. If
        another connection has the store open, the mode cannot change and the fill runs in WAL
        as before; a process opening the store meanwhile waits for the lock (busy timeout), as
        a store being filled for the first time has nothing to read yet."""
        mode = self.conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
        try:
            yield
        finally:
            if mode == "delete":
                self.conn.execute("PRAGMA journal_mode=WAL")

    # ---- meta ----------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str | int | float) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, str(value)),
        )

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key=?", (key,))

    def meta_float(self, key: str, default: float = 0.0) -> float:
        value = self.get_meta(key)
        return float(value) if value is not None else default

    # ---- messages ------------------------------------------------------------------------
    def upsert_messages(
        self,
        messages: Iterable[StoredMessage],
        local: Callable[[float], tuple[int, int]] | None = None,
    ) -> int:
        """Insert or replace messages; `local` gives (YYYYMMDD, hour) for the stats columns."""
        rows = [
            (
                m.rowid, m.guid, m.chat_id, m.sender, m.ts, m.text, m.kind, int(m.edited),
                m.reply_to, json.dumps(m.attachments) if m.attachments else None, m.event,
                *(local(m.ts) if local is not None else (None, None)), emoji_field(m.text),
                *_carried_values(m),
            )
            for m in messages
        ]  # fmt: skip
        self.conn.executemany(_INSERT_FULL, rows)
        return len(rows)

    def put_messages(self, full: Sequence[tuple], plain: Sequence[tuple] = ()) -> None:
        """Insert or replace message rows laid out as FULL_COLS, and plain ones as PLAIN_COLS."""
        put_message_rows(self.conn, full, plain)

    @contextmanager
    def bulk_load(
        self, alongside: Callable[[], None] | None = None, *, unique_only: bool = False
    ) -> Iterator[None]:
        """Insert many messages without maintaining indexes (guid's too), then build them once.

        Runs inside the caller's transaction, so a crash leaves the previous store intact.
        `alongside` (which must not touch the store) runs while the indexes build: SQLite
        builds them without the GIL, so pure-Python work there costs no wall time.
        `unique_only` drops only the guid index (random keys: the costly one to keep up) and
        keeps the others up as rows come, for a loader with time to spare while rows arrive.
        """
        indexes = self.conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='index' AND tbl_name='messages' "
            "AND sql IS NOT NULL AND name != 'messages_system'"  # tiny: kept up as rows come
            + (" AND sql LIKE 'CREATE UNIQUE INDEX%'" if unique_only else "")
        ).fetchall()
        for name, _sql in indexes:
            self.conn.execute(f"DROP INDEX {name}")
        loaded = False
        try:
            yield
            loaded = True
        finally:
            if loaded and alongside is not None:
                self._build_alongside([sql for _, sql in indexes], alongside)
            else:
                self._build_indexes([sql for _, sql in indexes])

    def _build_indexes(self, ddl: list[str]) -> None:
        for sql in ddl:
            try:
                self.conn.execute(sql)
            except sqlite3.IntegrityError:
                # a guid that moved to a new ROWID: keep its newest row, as REPLACE would
                self.conn.execute(
                    "DELETE FROM messages WHERE rowid NOT IN "
                    "(SELECT max(rowid) FROM messages GROUP BY guid)"
                )
                self.conn.execute(sql)

    def _build_alongside(self, ddl: list[str], alongside: Callable[[], None]) -> None:
        failed: list[BaseException] = []

        def build() -> None:
            try:
                self._build_indexes(ddl)
            except BaseException as exc:  # re-raised in the caller's thread
                failed.append(exc)

        worker = threading.Thread(target=build, name="casper-index-build")
        worker.start()
        try:
            alongside()
        finally:
            worker.join()
        if failed:
            raise failed[0]

    def add_reactions(self, rows: Iterable[tuple[str, str, str, int, str | None, float]]) -> None:
        """(guid, target_guid, sender, kind, emoji, ts) rows; the final state is derived on read."""
        put_reaction_rows(self.conn, rows)

    def delete_messages(self, guids: Sequence[str], senders: set[str] | None = None) -> set[int]:
        """Remove messages by guid; returns the chats that changed (and adds to `senders` who
        wrote the removed messages)."""
        chats: set[int] = set()
        for i in range(0, len(guids), 500):
            part = list(guids[i : i + 500])
            marks = ",".join("?" * len(part))
            for chat, sender in self.conn.execute(
                f"SELECT DISTINCT chat_id, sender FROM messages WHERE guid IN ({marks})", part
            ):
                chats.add(chat)
                if senders is not None:
                    senders.add(sender)
            self.conn.execute(f"DELETE FROM messages WHERE guid IN ({marks})", part)
            self.conn.execute(f"DELETE FROM reactions WHERE guid IN ({marks})", part)
        return chats

    def delete_rowids(self, rowids: Sequence[int], senders: set[str] | None = None) -> set[int]:
        guids = [
            r[0]
            for i in range(0, len(rowids), 500)
            for r in self.conn.execute(
                "SELECT guid FROM messages WHERE rowid IN "
                f"({','.join('?' * len(rowids[i : i + 500]))})",
                list(rowids[i : i + 500]),
            )
        ]
        return self.delete_messages(guids, senders)

    def has_messages(self) -> bool:
        return self.conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() is not None

    def message_count(self, *, kind: str | None = None) -> int:
        if kind:
            return self.conn.execute(
                "SELECT count(*) FROM messages WHERE kind=?", (kind,)
            ).fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM messages").fetchone()[0]

    def messages_total(self) -> int:
        """Messages as `index` and `doctor` both count them: system events (renames, people
        joining) are rows but not messages."""
        return self.conn.execute("SELECT count(*) FROM messages WHERE kind != 'system'").fetchone()[
            0
        ]

    def undated_count(self) -> int:
        """Messages whose chat.db `date` is unset (0): kept and searchable, but they have no
        day, so first/last, coverage and per-day/month figures leave them out."""
        return self.conn.execute(
            "SELECT count(*) FROM messages WHERE kind != 'system' AND ts <= 0"
        ).fetchone()[0]

    def rowids(self) -> set[int]:
        return {r[0] for r in self.conn.execute("SELECT rowid FROM messages")}

    def _reactions_for(self, guids: Sequence[str]) -> dict[str, tuple[tuple[str, str], ...]]:
        """Final reaction state per target: each sender's latest reaction, removals applied."""
        latest: dict[tuple[str, str], tuple[float, int, str | None]] = {}
        for i in range(0, len(guids), 500):
            part = list(guids[i : i + 500])
            q = (
                "SELECT target_guid, sender, kind, emoji, ts FROM reactions "
                f"WHERE target_guid IN ({','.join('?' * len(part))}) ORDER BY ts"
            )
            for target, sender, kind, emoji, ts in self.conn.execute(q, part):
                latest[(target, sender)] = (ts, kind, emoji)
        out: dict[str, list[tuple[str, str]]] = {}
        for (target, sender), (_ts, kind, emoji) in sorted(latest.items()):
            if 3000 <= kind < 4000:
                continue
            label = emoji if kind == 2006 and emoji else REACTION_LABELS.get(kind, "reaction")
            out.setdefault(target, []).append((sender, label))
        return {k: tuple(v) for k, v in out.items()}

    def _rows_to_messages(self, rows: list[tuple[Any, ...]]) -> list[StoredMessage]:
        reactions = self._reactions_for([r[1] for r in rows]) if rows else {}
        return [
            StoredMessage(
                rowid=r[0],
                guid=r[1],
                chat_id=r[2],
                sender=r[3],
                ts=r[4],
                text=r[5],
                kind=r[6],
                edited=bool(r[7]),
                reply_to=r[8],
                attachments=tuple(tuple(a) for a in json.loads(r[9])) if r[9] else (),
                event=r[10],
                reactions=reactions.get(r[1], ()),
                carried=tuple(zip(CARRIED, r[_CARRIED_AT:], strict=True)) if CARRIED else (),
            )
            for r in rows
        ]

    def chat_messages(self, chat_id: int, *, since_ts: float | None = None) -> list[StoredMessage]:
        """A chat's messages in chronological order (optionally from a timestamp on)."""
        q = f"SELECT {_MSG_COLS} FROM messages WHERE chat_id=?"
        args: list[int | float] = [chat_id]
        if since_ts is not None:
            q += " AND ts >= ?"
            args.append(since_ts)
        rows = self.conn.execute(q + " ORDER BY ts, rowid", args).fetchall()
        return self._rows_to_messages(rows)

    def searchable_rows(
        self, chat_id: int, *, since_ts: float | None = None
    ) -> list[tuple[float, int, str, str, str]]:
        """A chat's searchable messages as the chunker reads them, `(ts, rowid, sender, text,
        guid)` in time order: only those columns, no StoredMessage and no reactions (a first
        index reads a million rows through here). Same set as `StoredMessage.searchable`."""
        searched = "".join(f", {c.name}" for c in SEARCHED)  # carried columns with words
        q = (
            f"SELECT ts, rowid, sender, text, guid{searched} FROM messages "
            "WHERE chat_id=? AND kind != 'system'"
        )
        args: list[int | float] = [chat_id]
        if since_ts is not None:
            q += " AND ts >= ?"
            args.append(since_ts)
        rows = self.conn.execute(q + " ORDER BY ts, rowid", args).fetchall()
        # str.strip() strips what str.isspace() calls whitespace: a blank body is left out
        if not SEARCHED:
            return [r for r in rows if r[3] and not r[3].isspace()]
        return [
            (r[0], r[1], r[2], searched_text(r[3], r[5:]), r[4])
            for r in rows
            if r[3] and not r[3].isspace()
        ]

    def chat_sizes(self) -> dict[int, int]:
        """Messages per chat as `index` and `doctor` count them (system events are not
        messages): the chunking stage's progress, so its total matches the summary's."""
        # every row from the covering (chat_id, ts) index, less the few system rows from their
        # partial index: `WHERE kind != 'system'` read each row from the table instead, 2.6 s
        # of a 1M-message first index (25× the covering count; docs/performance.md)
        sizes: dict[int, int] = dict(
            self.conn.execute("SELECT chat_id, count(*) FROM messages GROUP BY chat_id")
        )
        for chat_id, system in self.conn.execute(
            "SELECT chat_id, count(*) FROM messages WHERE kind = 'system' GROUP BY chat_id"
        ):
            sizes[chat_id] -= system
        return {chat_id: n for chat_id, n in sizes.items() if n}

    def messages_by_rowids(self, rowids: Sequence[int]) -> list[StoredMessage]:
        rows: list[tuple[Any, ...]] = []
        for i in range(0, len(rowids), 500):
            part = list(rowids[i : i + 500])
            rows += self.conn.execute(
                f"SELECT {_MSG_COLS} FROM messages WHERE rowid IN ({','.join('?' * len(part))})",
                part,
            ).fetchall()
        rows.sort(key=lambda r: (r[4], r[0]))
        return self._rows_to_messages(rows)

    def message(self, ref: str | int) -> StoredMessage | None:
        """A message by rowid (int or digits, optionally '#'-prefixed) or guid."""
        text = str(ref).strip().lstrip("#")
        arg: int | str
        if text.isdigit():
            if int(text) > _MAX_ROWID:  # beyond SQLite's integers: no message has it
                return None
            q, arg = f"SELECT {_MSG_COLS} FROM messages WHERE rowid=?", int(text)
        else:
            q, arg = f"SELECT {_MSG_COLS} FROM messages WHERE guid=?", str(ref).strip()
        rows = self.conn.execute(q, (arg,)).fetchall()
        found = self._rows_to_messages(rows)
        return found[0] if found else None

    def reaction(self, guid: str) -> tuple[str, str, str] | None:
        """(target guid, sender, label) of a tapback by its own guid ("removed ❤️" for a
        removal); None when `guid` is no reaction Casper folded in."""
        row = self.conn.execute(
            "SELECT target_guid, sender, kind, emoji FROM reactions WHERE guid=?", (guid,)
        ).fetchone()
        if row is None:
            return None
        target, sender, kind, emoji = row
        removed = 3000 <= kind < 4000
        kind = kind - 1000 if removed else kind
        label = emoji if kind == 2006 and emoji else REACTION_LABELS.get(kind, "reaction")
        return target, sender, f"removed {label}" if removed else label

    def context(
        self, message: StoredMessage, before: int = 5, after: int = 5
    ) -> list[StoredMessage]:
        """The message with up to `before`/`after` neighbours from the same chat, in order."""
        prev = self.conn.execute(
            f"SELECT {_MSG_COLS} FROM messages "
            "WHERE chat_id=? AND (ts < ? OR (ts = ? AND rowid < ?)) "
            "ORDER BY ts DESC, rowid DESC LIMIT ?",
            (message.chat_id, message.ts, message.ts, message.rowid, before),
        ).fetchall()
        nxt = self.conn.execute(
            f"SELECT {_MSG_COLS} FROM messages "
            "WHERE chat_id=? AND (ts > ? OR (ts = ? AND rowid > ?)) "
            "ORDER BY ts, rowid LIMIT ?",
            (message.chat_id, message.ts, message.ts, message.rowid, after),
        ).fetchall()
        here = self.conn.execute(
            f"SELECT {_MSG_COLS} FROM messages WHERE rowid=?", (message.rowid,)
        ).fetchall()
        return self._rows_to_messages(list(reversed(prev)) + here + nxt)

    def indexed_through(self) -> float | None:
        """The newest countable message the search index has (UTC seconds), or None: the store's
        newest outside the chats still waiting for their chunks (`dirty_chats`, cleared once the
        run that stored them has published its chunks), always a message the store still holds.
        Walks down the ts index that stop at the first message of a chat already chunked."""
        chunked, newest = self.conn.execute(
            "SELECT (SELECT ts FROM messages WHERE kind != 'system' AND ts > 0 "
            "AND chat_id NOT IN (SELECT chat_id FROM dirty_chats) ORDER BY ts DESC LIMIT 1), "
            "(SELECT ts FROM messages WHERE kind != 'system' AND ts > 0 ORDER BY ts DESC LIMIT 1)"
        ).fetchone()
        # a rebuild marks every chat dirty while readers still search the last published
        # generation: what that generation held (noted when it was published) still counts,
        # up to the newest message the history still holds (a rewind took the newer ones away)
        noted = self.get_meta(PUBLISHED_THROUGH)
        published = min(float(noted), newest) if noted is not None and newest is not None else None
        found = [float(v) for v in (chunked, published) if v is not None]
        return max(found) if found else None

    def note_published(self) -> None:
        """Remember what the generation just published holds (see indexed_through); called
        once its chats are marked done, in the same transaction."""
        through = self.indexed_through()
        if through is not None:
            self.set_meta(PUBLISHED_THROUGH, through)

    def coverage(self) -> tuple[float | None, float | None]:
        """First and last dated countable message: two short walks of the ts index, not a scan."""
        row = self.conn.execute(
            "SELECT (SELECT ts FROM messages WHERE kind != 'system' AND ts > 0 "
            "ORDER BY ts LIMIT 1), "
            "(SELECT ts FROM messages WHERE kind != 'system' ORDER BY ts DESC LIMIT 1)"
        ).fetchone()
        return row[0], row[1]
