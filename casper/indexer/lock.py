"""An advisory file lock so two index runs never write at once, and who holds it.

The holder writes one line of JSON into the lock file while it holds the lock (its pid, since
when, what it is), so a run that has to wait can say what it waits for; the line is cleared when
the lock is released. A run in the background (the service's auto-index) is waited for until it
ends, as it ends by itself; any other holder for at most `wait_s`.

Imports: stdlib, casper.errors, casper.datadir.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from casper.datadir import unusable
from casper.errors import DataDamaged, StoreBusy

_UNNAMED_GRACE_S = 0.5


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the index lock: a process id, since when (UTC seconds), what it runs."""

    pid: int
    since: float
    what: str
    background: bool = False  # a run nobody waits on (the service's), not a person's


def holder(path: Path) -> Holder | None:
    """The holder the lock file names, or None (free, or a holder that has not written yet)."""
    try:
        data = json.loads(Path(path).read_text() or "null")
        return Holder(int(data["pid"]), float(data["since"]), str(data["what"]),
                      bool(data.get("background", False)))  # fmt: skip
    except (OSError, ValueError, TypeError, KeyError):
        return None


@contextmanager
def exclusive(
    path: Path,
    *,
    what: str = "`casper index`",
    background: bool = False,
    wait_s: float = 60.0,
    on_wait: Callable[[Holder | None], None] | None = None,
) -> Iterator[Holder]:
    """Hold the lock as `what`; wait for another holder (a background one until it ends, any
    other for up to `wait_s`), then refuse with StoreBusy. `on_wait` is told once per holder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except (IsADirectoryError, PermissionError) as exc:  # a folder in its place, chmod 000
        raise DataDamaged("the index lock", path, unusable(path) or str(exc.strerror)) from exc
    try:
        started = time.monotonic()
        told: Holder | None | bool = False  # False: nobody told yet
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                other = holder(path)
                waited = time.monotonic() - started
                # no name: a holder between taking the lock and writing its line, or between
                # clearing it and letting go; decided on a moment later
                unnamed_too_long = other is None and waited >= wait_s + _UNNAMED_GRACE_S
                if waited >= wait_s and (other and not other.background or unnamed_too_long):
                    named = f"{other.what} (pid {other.pid})" if other else "another index run"
                    raise StoreBusy(f"{named} is still running") from None
                # a holder that has not written its line yet is named a moment later
                named_now = other is not None or (told is False and waited > 0.5)
                if on_wait and other != told and named_now:
                    on_wait(other)
                    told = other
                time.sleep(0.1)
        me = Holder(os.getpid(), time.time(), what, background)
        _write(fd, json.dumps({"pid": me.pid, "since": me.since, "what": what,
                               "background": background}))  # fmt: skip
        try:
            yield me
        finally:
            _write(fd, "")  # nobody named once released (a kill leaves the line: flock decides)
    finally:
        os.close(fd)  # closing releases the lock, also when the process is killed


def _write(fd: int, text: str) -> None:
    data = text.encode()
    os.pwrite(fd, data, 0)  # then cut: a reader never sees the file empty in between
    os.ftruncate(fd, len(data))
