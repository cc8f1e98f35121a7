"""Casper's SQLite store: people, chats, messages with reactions folded in, precomputed stats.

Imports: sqlite3, casper.records, casper.errors, casper.stats (pure), casper.store.schema.
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

from casper.errors import AmbiguousPerson, IndexMissing, PersonNotFound
from casper.records import ME, ChatInfo, Person, StoredMessage
from casper.stats import StatRow, emoji_field
from casper.store.schema import migrate

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

_MSG_COLS = "rowid, guid, chat_id, sender, ts, text, kind, edited, reply_to, attachments, event"
# Row layouts of put_messages. Most messages are plain text (no reply, attachment, event, edit
# or emoji), and sqlite3 binds each None through its adapter lookup (~1 µs), so plain rows go
# through a statement that writes those columns as literals.
FULL_COLS = (
    "rowid", "guid", "chat_id", "sender", "ts", "text", "kind", "edited", "reply_to",
    "attachments", "event", "lday", "lhour", "emoji",
)  # fmt: skip
PLAIN_COLS = ("rowid", "guid", "chat_id", "sender", "ts", "text", "lday", "lhour")
_FULL_SQL = f"INSERT OR REPLACE INTO messages({', '.join(FULL_COLS)}) VALUES "
_FULL_VALUES = f"({', '.join('?' * len(FULL_COLS))})"
_PLAIN_SQL = f"INSERT OR REPLACE INTO messages({', '.join(PLAIN_COLS)}, kind, edited) VALUES "
_PLAIN_VALUES = f"({', '.join('?' * len(PLAIN_COLS))}, 'text', 0)"
_INSERT_FULL = _FULL_SQL + _FULL_VALUES
# Rows per INSERT statement: one sqlite3_step (and GIL round trip) per 50 rows instead of per
# row saves ~20% of the insert's CPU; 50 × 14 parameters stays far below SQLite's limit.
_ROWS_PER_INSERT = 50
_STAT_COLS = "sender, ts, lday, lhour, emoji"
# Pages the store may cache (negative: KiB). Bulk loads and index builds touch tens of MB.
_CACHE_KIB = 64 * 1024


def ensure_private_dir(path: Path) -> None:
    """Create the data dir readable by the owner only (0700)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def _private_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            os.chmod(p, 0o600)


class Store:
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
                path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=OFF")
            conn.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
            conn.execute("PRAGMA temp_store=MEMORY")  # index builds sort in memory
            migrate(conn)
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

    # ---- meta ----------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, str(value)),
        )

    def meta_float(self, key: str, default: float = 0.0) -> float:
        value = self.get_meta(key)
        return float(value) if value is not None else default

    # ---- people --------------------------------------------------------------------------
    def replace_people(self, people: Sequence[Person], contact_keys: dict[str, str]) -> None:
        """Rewrite people and their handles (cheap: a personal address book is small)."""
        self.conn.execute("DELETE FROM people")
        self.conn.execute("DELETE FROM handles")
        self.conn.executemany(
            "INSERT INTO people(id, name, contact_key) VALUES (?, ?, ?)",
            [(p.id, p.name, contact_keys.get(p.id)) for p in people],
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO handles(address, person_id) VALUES (?, ?)",
            [(h, p.id) for p in people for h in p.handles],
        )
        self._names = None

    def people(self) -> list[Person]:
        handles: dict[str, list[str]] = {}
        for address, pid in self.conn.execute("SELECT address, person_id FROM handles"):
            handles.setdefault(pid, []).append(address)
        rows = self.conn.execute("SELECT id, name FROM people ORDER BY name COLLATE NOCASE")
        return [Person(pid, name, tuple(sorted(handles.get(pid, [])))) for pid, name in rows]

    def person(self, person_id: str) -> Person | None:
        return next((p for p in self.people() if p.id == person_id), None)

    def names(self) -> dict[str, str]:
        """person id → display name (plus ME → "me")."""
        if self._names is None:
            self._names = dict(self.conn.execute("SELECT id, name FROM people").fetchall())
            self._names[ME] = "me"
        return self._names

    def find_people(self, query: str) -> list[Person]:
        """People whose id, handle or name matches: exact matches win over partial ones."""
        q = query.strip().lower()
        if not q:
            return []
        people = self.people()
        digits = "".join(ch for ch in q if ch.isdigit())
        exact = [
            p
            for p in people
            if q == p.id.lower()
            or q == p.name.lower()
            or q in (h.lower() for h in p.handles)
            or (len(digits) >= 7 and any(h.endswith(digits[-10:]) for h in p.handles))
        ]
        if exact:
            return exact
        words = q.split()
        return [
            p
            for p in people
            if all(any(part.startswith(w) for part in p.name.lower().split()) for w in words)
            or q in p.name.lower()
        ]

    def resolve_person(self, query: str) -> Person:
        """Exactly one person for a name, handle or id; otherwise an error listing candidates."""
        found = self.find_people(query)
        if not found:
            raise PersonNotFound(f"no contact matches '{query}'")
        if len(found) > 1:
            raise AmbiguousPerson(query, [(p.id, p.name) for p in found])
        return found[0]

    # ---- chats ---------------------------------------------------------------------------
    def upsert_chats(self, chats: Iterable[ChatInfo]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO chats(id, guid, name, is_group, members) VALUES (?,?,?,?,?)",
            [(c.id, c.guid, c.name, int(c.is_group), json.dumps(list(c.members))) for c in chats],
        )

    def chats(self) -> list[ChatInfo]:
        rows = self.conn.execute("SELECT id, guid, name, is_group, members FROM chats ORDER BY id")
        return [ChatInfo(r[0], r[1], r[2], bool(r[3]), tuple(json.loads(r[4]))) for r in rows]

    def chat(self, chat_id: int) -> ChatInfo | None:
        return next((c for c in self.chats() if c.id == chat_id), None)

    def one_to_one_chat_ids(self, person_id: str) -> list[int]:
        """The 1:1 chats with a person (one per handle they texted from)."""
        return [c.id for c in self.chats() if not c.is_group and c.members == (person_id,)]

    def find_chats(self, query: str) -> list[ChatInfo]:
        q = query.strip().lower()
        return [c for c in self.chats() if q == str(c.id) or q in c.name.lower()]

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
            )
            for m in messages
        ]  # fmt: skip
        self.conn.executemany(_INSERT_FULL, rows)
        return len(rows)

    def put_messages(self, full: Sequence[tuple], plain: Sequence[tuple] = ()) -> None:
        """Insert or replace message rows laid out as FULL_COLS, and plain ones as PLAIN_COLS."""
        self._insert_rows(_FULL_SQL, _FULL_VALUES, full)
        self._insert_rows(_PLAIN_SQL, _PLAIN_VALUES, plain)

    def _insert_rows(self, head: str, values: str, rows: Sequence[tuple]) -> None:
        """`head` + many `values` groups per statement; the remainder one row at a time."""
        n = _ROWS_PER_INSERT
        whole = len(rows) - len(rows) % n
        if whole:
            sql = head + ", ".join([values] * n)
            execute, flat = self.conn.execute, chain.from_iterable
            for i in range(0, whole, n):
                execute(sql, tuple(flat(rows[i : i + n])))
        if whole < len(rows):
            self.conn.executemany(head + values, rows[whole:])

    @contextmanager
    def bulk_load(self, alongside: Callable[[], None] | None = None) -> Iterator[None]:
        """Insert many messages without maintaining indexes (guid's too), then build them once.

        Runs inside the caller's transaction, so a crash leaves the previous store intact.
        `alongside` (which must not touch the store) runs while the indexes build: SQLite
        builds them without the GIL, so pure-Python work there costs no wall time.
        """
        indexes = self.conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='index' AND tbl_name='messages' "
            "AND sql IS NOT NULL AND name != 'messages_system'"  # tiny: kept up as rows come
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
        self.conn.executemany(
            "INSERT OR REPLACE INTO reactions(guid, target_guid, sender, kind, emoji, ts) "
            "VALUES (?,?,?,?,?,?)",
            rows,
        )

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

    def message_count(self, *, kind: str | None = None) -> int:
        if kind:
            return self.conn.execute(
                "SELECT count(*) FROM messages WHERE kind=?", (kind,)
            ).fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM messages").fetchone()[0]

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
            )
            for r in rows
        ]

    def chat_messages(self, chat_id: int, *, since_ts: float | None = None) -> list[StoredMessage]:
        """A chat's messages in chronological order (optionally from a timestamp on)."""
        q = f"SELECT {_MSG_COLS} FROM messages WHERE chat_id=?"
        args: list[Any] = [chat_id]
        if since_ts is not None:
            q += " AND ts >= ?"
            args.append(since_ts)
        rows = self.conn.execute(q + " ORDER BY ts, rowid", args).fetchall()
        return self._rows_to_messages(rows)

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
        if text.isdigit():
            q, arg = f"SELECT {_MSG_COLS} FROM messages WHERE rowid=?", int(text)
        else:
            q, arg = f"SELECT {_MSG_COLS} FROM messages WHERE guid=?", str(ref).strip()
        rows = self.conn.execute(q, (arg,)).fetchall()
        found = self._rows_to_messages(rows)
        return found[0] if found else None

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

    def activity(
        self, start_ts: float | None = None, end_ts: float | None = None
    ) -> list[tuple[str, int, float, str]]:
        """(sender, chat_id, ts, kind) of countable messages in a range, chronological."""
        q = "SELECT sender, chat_id, ts, kind FROM messages WHERE kind != 'system'"
        args: list[float] = []
        if start_ts is not None:
            q += " AND ts >= ?"
            args.append(start_ts)
        if end_ts is not None:
            q += " AND ts < ?"
            args.append(end_ts)
        return self.conn.execute(q + " ORDER BY ts, rowid", args).fetchall()

    def texts_for_person(
        self, chat_ids: Sequence[int], start_ts: float | None, end_ts: float | None
    ) -> list[tuple[str, int, float, str]]:
        """(sender, chat_id, ts, text) of countable messages in the given chats, chronological."""
        if not chat_ids:
            return []
        q = (
            "SELECT sender, chat_id, ts, text FROM messages WHERE kind != 'system' AND chat_id IN "
            f"({','.join('?' * len(chat_ids))})"
        )
        args: list[Any] = list(chat_ids)
        if start_ts is not None:
            q += " AND ts >= ?"
            args.append(start_ts)
        if end_ts is not None:
            q += " AND ts < ?"
            args.append(end_ts)
        return self.conn.execute(q + " ORDER BY ts, rowid", args).fetchall()

    def sent_by(
        self, person_id: str, start_ts: float | None, end_ts: float | None
    ) -> list[tuple[str, int, float, str]]:
        """Messages the person wrote anywhere (1:1 and groups)."""
        q = "SELECT sender, chat_id, ts, text FROM messages WHERE kind != 'system' AND sender = ?"
        args: list[Any] = [person_id]
        if start_ts is not None:
            q += " AND ts >= ?"
            args.append(start_ts)
        if end_ts is not None:
            q += " AND ts < ?"
            args.append(end_ts)
        return self.conn.execute(q + " ORDER BY ts, rowid", args).fetchall()

    def stat_rows(
        self,
        person_id: str,
        chat_ids: Sequence[int],
        start_ts: float | None = None,
        end_ts: float | None = None,
        *,
        local: bool = True,
    ) -> tuple[list[StatRow], list[StatRow]]:
        """StatRows of the 1:1 chats' messages (in order) and of the person's own, anywhere.

        Without `local` the precomputed local day/hour come back as None (another zone).
        """
        cols = _STAT_COLS if local else "sender, ts, NULL, NULL, emoji"
        where, args = "", []
        if start_ts is not None:
            where += " AND ts >= ?"
            args.append(start_ts)
        if end_ts is not None:
            where += " AND ts < ?"
            args.append(end_ts)
        timeline: list[StatRow] = []
        if chat_ids:
            timeline = self.conn.execute(
                f"SELECT {cols} FROM messages WHERE chat_id IN ({','.join('?' * len(chat_ids))})"
                f" AND kind != 'system'{where} ORDER BY ts, rowid",
                [*chat_ids, *args],
            ).fetchall()
        authored = self.conn.execute(
            f"SELECT {cols} FROM messages WHERE sender = ? AND kind != 'system'{where}",
            [person_id, *args],
        ).fetchall()
        return timeline, authored

    def refresh_local(self, local: Callable[[float], tuple[int, int]], batch: int = 20_000) -> int:
        """Recompute every message's stats columns (after the time zone changed, or a migration)."""
        done, last = 0, -1
        while True:
            rows = self.conn.execute(
                "SELECT rowid, ts, text FROM messages WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (last, batch),
            ).fetchall()
            if not rows:
                return done
            self.conn.executemany(
                "UPDATE messages SET lday = ?, lhour = ?, emoji = ? WHERE rowid = ?",
                [(*local(ts), emoji_field(text), rowid) for rowid, ts, text in rows],
            )
            done += len(rows)
            last = rows[-1][0]

    def coverage(self) -> tuple[float | None, float | None]:
        """First and last countable message: two short walks of the ts index, not a scan."""
        row = self.conn.execute(
            "SELECT (SELECT ts FROM messages WHERE kind != 'system' ORDER BY ts LIMIT 1), "
            "(SELECT ts FROM messages WHERE kind != 'system' ORDER BY ts DESC LIMIT 1)"
        ).fetchone()
        return row[0], row[1]

    # ---- stats and dirty chats -----------------------------------------------------------
    def set_stats(self, person_id: str, data: dict[str, Any], state: str | None = None) -> None:
        """A person's stats, and optionally what they are made of (StatsState JSON)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO contact_stats(person_id, data, state) VALUES (?, ?, ?)",
            (person_id, json.dumps(data), state),
        )

    def stats_state(self, person_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT state FROM contact_stats WHERE person_id=?", (person_id,)
        ).fetchone()
        return row[0] if row else None

    def stats(self, person_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT data FROM contact_stats WHERE person_id=?", (person_id,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def mark_dirty(self, chat_ids: Iterable[int], *, full: bool = False) -> None:
        self.conn.executemany(
            "INSERT INTO dirty_chats(chat_id, full) VALUES (?, ?) "
            "ON CONFLICT(chat_id) DO UPDATE SET full = max(full, excluded.full)",
            [(c, int(full)) for c in chat_ids],
        )

    def dirty_chats(self) -> dict[int, bool]:
        return {c: bool(f) for c, f in self.conn.execute("SELECT chat_id, full FROM dirty_chats")}

    def clear_dirty(self, chat_ids: Iterable[int]) -> None:
        self.conn.executemany("DELETE FROM dirty_chats WHERE chat_id=?", [(c,) for c in chat_ids])
