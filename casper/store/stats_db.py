"""Store queries behind contact stats (a mixin of `Store`): activity rows, saved stats state,
and the dirty-chat queue the search index drains.

Imports: sqlite3 (through the store's connection), casper.stats (pure).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from casper.records import ME
from casper.stats import StatRow, emoji_field

_STAT_COLS = "sender, ts, lday, lhour, emoji"


def _in_range(start_ts: float | None, end_ts: float | None) -> tuple[str, list[float]]:
    """The ` AND ts …` clause (start inclusive, end exclusive) and its parameters."""
    where, args = "", []
    if start_ts is not None:
        where += " AND ts >= ?"
        args.append(start_ts)
    if end_ts is not None:
        where += " AND ts < ?"
        args.append(end_ts)
    return where, args


class StatsQueries:
    """Activity and stats; expects `self.conn` from `Store`."""

    conn: sqlite3.Connection

    def activity(
        self, start_ts: float | None = None, end_ts: float | None = None
    ) -> list[tuple[str, int, float, str]]:
        """(sender, chat_id, ts, kind) of countable messages in a range, chronological."""
        q = "SELECT sender, chat_id, ts, kind FROM messages WHERE kind != 'system'"
        where, args = _in_range(start_ts, end_ts)
        return self.conn.execute(q + where + " ORDER BY ts, rowid", args).fetchall()

    def message_counts(
        self, start_ts: float | None = None, end_ts: float | None = None
    ) -> list[tuple[str, int, int]]:
        """(sender, chat_id, count) of countable messages in a range: one GROUP BY read from
        the (sender, chat_id, ts) index, less the few system rows (a partial index)."""
        where, args = _in_range(start_ts, end_ts)
        where = where.replace(" AND ", " WHERE ", 1)
        counts: dict[tuple[str, int], int] = {}
        for sender, chat_id, n in self.conn.execute(
            f"SELECT sender, chat_id, count(*) FROM messages{where} GROUP BY sender, chat_id",
            args,
        ):
            counts[(sender, chat_id)] = n
        system_where = " AND kind = 'system'" + _in_range(start_ts, end_ts)[0]
        for sender, chat_id, n in self.conn.execute(
            f"SELECT sender, chat_id, count(*) FROM messages WHERE 1{system_where} "
            "GROUP BY sender, chat_id",
            args,
        ):
            counts[(sender, chat_id)] -= n
        return [(s, c, n) for (s, c), n in counts.items() if n > 0]

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
        where, args = _in_range(start_ts, end_ts)
        return self.conn.execute(q + where + " ORDER BY ts, rowid", [*chat_ids, *args]).fetchall()

    def edge_message(
        self,
        person_id: str,
        chat_ids: Sequence[int],
        *,
        last: bool,
        start_ts: float | None = None,
        end_ts: float | None = None,
    ) -> int | None:
        """The rowid of the first or last dated message counted with a person in a range (the
        stats' `first`/`last`: mine in our 1:1 chats, theirs anywhere); None when none."""
        order = "DESC" if last else "ASC"
        holes = ",".join("?" * len(chat_ids))
        where, args = _in_range(start_ts, end_ts)
        row = self.conn.execute(
            "SELECT rowid FROM messages WHERE kind != 'system' AND ts > 0 AND "
            f"(sender = ? OR chat_id IN ({holes})){where} "
            f"ORDER BY ts {order}, rowid {order} LIMIT 1",
            [person_id, *chat_ids, *args],
        ).fetchone()
        return row[0] if row else None

    def latest_from_others(self) -> int | None:
        """The rowid of the newest dated message someone else sent (not a system event)."""
        row = self.conn.execute(
            "SELECT rowid FROM messages WHERE kind != 'system' AND ts > 0 "
            "AND sender != ? ORDER BY ts DESC, rowid DESC LIMIT 1",
            (ME,),
        ).fetchone()
        return row[0] if row else None

    def sent_by(
        self, person_id: str, start_ts: float | None, end_ts: float | None
    ) -> list[tuple[str, int, float, str]]:
        """Messages the person wrote anywhere (1:1 and groups)."""
        q = "SELECT sender, chat_id, ts, text FROM messages WHERE kind != 'system' AND sender = ?"
        where, args = _in_range(start_ts, end_ts)
        return self.conn.execute(q + where + " ORDER BY ts, rowid", [person_id, *args]).fetchall()

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
        where, args = _in_range(start_ts, end_ts)
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

    def chat_stat_rows(
        self,
        chat_ids: Sequence[int] | None,
        start_ts: float | None = None,
        end_ts: float | None = None,
        *,
        local: bool = True,
    ) -> list[tuple[int, StatRow]]:
        """(chat id, StatRow) of the countable messages of some chats (None: every chat), in
        (chat, ts, rowid) order: each chat's timeline for the stats of a chat or of the owner."""
        cols = _STAT_COLS if local else "sender, ts, NULL, NULL, emoji"
        where, args = _in_range(start_ts, end_ts)
        pick = ""
        if chat_ids is not None:
            if not chat_ids:
                return []
            pick = f" AND chat_id IN ({','.join('?' * len(chat_ids))})"
        rows = self.conn.execute(
            f"SELECT chat_id, {cols} FROM messages WHERE kind != 'system'{pick}{where} "
            "ORDER BY chat_id, ts, rowid",
            [*(chat_ids or ()), *args],
        )
        return [(r[0], r[1:]) for r in rows]

    def refresh_local(self, local: Callable[[float], tuple[int, int]], batch: int = 20_000) -> int:
        """Recompute every message's stats columns (after the configured time zone changed)."""
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

    # ---- stats and dirty chats -----------------------------------------------------------
    def set_stats(
        self, person_id: str, data: Mapping[str, object], state: str | None = None
    ) -> None:
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
