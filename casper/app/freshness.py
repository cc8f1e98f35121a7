"""How current the index is: the newest message it has, what chat.db holds that it does not yet,
and the service's record of its last automatic run (`auto_index.json`, for `casper doctor`).

`indexed_through` is read from the store (one walk down an index); the rest opens chat.db
read-only for two index-backed queries. Nothing here holds message text.

Imports: stdlib, ingest, casper.config, casper.store, casper.dates.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import ingest
from casper.config import Config
from casper.events import NoticeEvent
from casper.store.db import Store

# inside: the client path loads this module, not the date phrases

STATE_FILE = "auto_index.json"


@dataclass(frozen=True, slots=True)
class Freshness:
    """The index against chat.db at one moment."""

    indexed_through: float | None  # newest message the index has (UTC seconds)
    unindexed: int  # chat.db rows past what the store read (messages, tapbacks, events)
    unchunked_chats: int  # chats stored but whose chunks are not published yet
    waiting_since: float | None  # when the oldest of those rows was sent

    @property
    def behind(self) -> bool:
        return bool(self.unindexed or self.unchunked_chats)

    def lag_s(self, now: float | None = None) -> float:
        """How long the oldest message not yet searchable has waited (0 when none waits)."""
        if not self.behind:
            return 0.0
        since = self.waiting_since if self.waiting_since is not None else self.indexed_through
        now = time.time() if now is None else now
        return round(max(0.0, now - since), 1) if since is not None else 0.0


def measure(cfg: Config, store: Store) -> Freshness:
    """The index's freshness against `cfg.chat_db` (raises ingest's errors when it can't be
    read: no Full Disk Access, missing, busy)."""
    watermark = int(store.meta_float("watermark_rowid"))
    conn = ingest.open_chat_db(cfg.chat_db, busy_timeout_s=1.0)
    try:
        unindexed, first = ingest.rows_after(conn, watermark)
    finally:
        conn.close()
    return Freshness(store.indexed_through(), unindexed, len(store.dirty_chats()), first)


def about_today(question: str, tz: ZoneInfo, *, locale: str, now: datetime | None = None) -> bool:
    """True when the question's first date phrase reaches today ("today", "this week", "this
    morning"…): what the newest messages answer, so a stale index matters."""
    from casper.dates.phrases import find_dates

    now = now or datetime.now(tz)
    found = find_dates(question, now, tz, locale=locale)
    if found is None:
        return False
    (_first, last), _words = found
    return last >= now.astimezone(tz).date()


def behind_notice(fresh: Freshness, tz: ZoneInfo, now: float | None = None) -> NoticeEvent:
    """The notice an answer about today gets while the index is behind chat.db."""
    since = fresh.waiting_since
    lag = duration_text(fresh.lag_s(now))
    shown = f"since {_clock(since, tz)}" if since is not None else f"in the last {lag}"
    return {
        "event": "notice",
        "text": f"the index is behind your messages: what arrived {shown} is not searchable yet",
        "hint": "the casper service indexes new messages within seconds (auto_index); "
        "`casper index` does it now",
    }


def _clock(ts: float, tz: ZoneInfo) -> str:
    moment = datetime.fromtimestamp(ts, tz)
    same_day = moment.date() == datetime.now(tz).date()
    return moment.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M")


def duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ---- the service's record of its automatic runs ----------------------------------------------
@dataclass(frozen=True, slots=True)
class AutoRun:
    """One automatic run as the service records it (no message text: counts, times, errors)."""

    at: float  # when it started (UTC seconds)
    duration_s: float
    outcome: str  # "indexed", "up to date", "skipped", "failed"
    messages_new: int = 0
    deleted: int = 0
    error: str | None = None
    hint: str | None = None
    no_access: bool = False  # chat.db refused: Full Disk Access for the service's interpreter
    # chat.db's history was rewritten and read again: the run's counts (IngestReport.reconciled)
    reconciled: dict[str, Any] | None = None


def state_path(data_dir: Path) -> Path:
    return data_dir / STATE_FILE


def save_state(data_dir: Path, record: dict[str, Any]) -> None:
    """Write the service's auto-index record (0600, atomically: a reader sees old or new)."""
    path = state_path(data_dir)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, indent=1)
        os.replace(tmp, path)
    except OSError:  # a folder in its place: the service's status still says it; doctor too
        with contextlib.suppress(OSError):
            tmp.unlink()


def load_state(data_dir: Path) -> dict[str, Any] | None:
    """The last record a service wrote, or None."""
    try:
        data = json.loads(state_path(data_dir).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_json(run: AutoRun | None) -> dict[str, Any] | None:
    return asdict(run) if run is not None else None


def access_hint(executable: str | None = None) -> str:
    """How to let the service read chat.db on macOS: Full Disk Access for the interpreter it
    runs (a service started at login does not inherit the terminal's)."""
    exe = executable or os.path.realpath(sys.executable)
    return (
        "System Settings → Privacy & Security → Full Disk Access: add "
        f"{exe} with + (⌘⇧G takes a path), then `casper serve --stop` (the next command or "
        "login starts it again, with the access)"
    )
