"""An advisory file lock so two `casper index` runs never write at once. Imports: stdlib."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from casper.errors import StoreBusy


@contextmanager
def exclusive(
    path: Path, *, wait_s: float = 60.0, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the lock; wait up to `wait_s` for another holder, then refuse with StoreBusy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreBusy("another `casper index` is still running") from None
                if on_wait and not told:
                    on_wait()
                    told = True
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock, also when the process is killed
