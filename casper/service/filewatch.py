"""chat.db's changes as the operating system reports them (inotify on Linux, FSEvents on macOS),
so the auto-index hears of a new message when it is written instead of at its next stat.

A `ChatDbWatch` runs one daemon thread iterating watchfiles' `watch` (the Rust notify crate:
events are gathered in Rust, without the GIL) over chat.db's folder, not recursively, keeping
the events of chat.db and chat.db-wal (the -shm file changes with every reader, ours included);
each sets `woken`. The auto-index thread waits on it (`wait`) with its poll interval as the
timeout, so the one-second stat stays as the fallback: without the folder, or when the watch
fails (watchfiles missing, no Full Disk Access, no inotify watches left), `active` is False
and `wait` only times out — the poll it always was.

Imports: stdlib; watchfiles in the watch thread.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

log = logging.getLogger("casper.service")

# the Rust side hands a change over once no other came for STEP_MS (at most DEBOUNCE_MS after
# the first): a write is heard within about that
STEP_MS = 20
DEBOUNCE_MS = 60
SET_UP_S = 0.3  # how long the constructor waits to hear that the watch could not be set up


class ChatDbWatch:
    """Wakes `wait` when chat.db or chat.db-wal changes."""

    def __init__(self, chat_db: Path) -> None:
        self.chat_db = chat_db
        self.woken = threading.Event()
        self._stop = threading.Event()
        self._failed = threading.Event()
        self._thread: threading.Thread | None = None
        if chat_db.parent.is_dir():
            self._thread = threading.Thread(target=self._run, name="chat.db watch", daemon=True)
            self._thread.start()
            self._failed.wait(SET_UP_S)  # a folder the OS refuses to watch says so at once
        else:
            self._failed.set()

    @property
    def active(self) -> bool:
        """The OS watch runs: a change wakes `wait` as it happens."""
        return not self._failed.is_set() and not self._stop.is_set()

    def wait(self, timeout: float) -> bool:
        """Block until chat.db changes or `timeout` seconds pass; True when it changed. The
        wake-up is used up: the next call waits for the next change."""
        woke = self.woken.wait(timeout) if timeout > 0 else self.woken.is_set()
        self.woken.clear()
        return woke and not self._stop.is_set()

    def close(self) -> None:
        self._stop.set()
        self.woken.set()  # a waiter returns at once
        if self._thread is not None:
            self._thread.join(2.0)

    def _run(self) -> None:
        names = {self.chat_db.name, f"{self.chat_db.name}-wal"}
        try:
            from watchfiles import watch

            for _changes in watch(
                self.chat_db.parent, watch_filter=lambda _c, path: os.path.basename(path) in names,
                debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=self._stop, rust_timeout=1_000,
                raise_interrupt=False, recursive=False,
            ):  # fmt: skip
                self.woken.set()
        except Exception as exc:  # noqa: BLE001 - the poll carries on without it
            log.info("no file watch on %s (%s): polling it every second", self.chat_db, exc)
        finally:
            self._failed.set()
