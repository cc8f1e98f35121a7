"""The service hears chat.db change from the operating system (inotify here, FSEvents on a Mac,
through watchfiles) instead of finding out at its next one-second stat: a write to chat.db or
its -wal wakes the auto-index thread at once; a file it does not follow does not; without a
watch (no such folder) the wait is the poll it always was."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from casper.service.filewatch import ChatDbWatch


@pytest.fixture
def messages(tmp_path: Path) -> Path:
    folder = tmp_path / "Messages"
    folder.mkdir()
    (folder / "chat.db").write_bytes(b"x")
    return folder / "chat.db"


def _woken_after(watch: ChatDbWatch, write: Path, timeout: float = 10.0) -> float | None:
    """Seconds from a write to `write` until `wait` returns (None: it timed out)."""
    woke: list[float] = []
    waiting = threading.Event()

    def waiter() -> None:
        waiting.set()
        if watch.wait(timeout):
            woke.append(time.monotonic())

    thread = threading.Thread(target=waiter)
    thread.start()
    waiting.wait()
    time.sleep(0.1)
    wrote = time.monotonic()
    with open(write, "ab") as fh:
        fh.write(b"a row")
    thread.join(timeout + 1)
    return woke[0] - wrote if woke else None


def test_a_write_to_the_wal_wakes_the_waiter_at_once(messages: Path) -> None:
    watch = ChatDbWatch(messages)
    try:
        assert watch.active
        took = _woken_after(watch, Path(f"{messages}-wal"))
        assert took is not None and took < 0.5
        took = _woken_after(watch, messages)
        assert took is not None and took < 0.5
    finally:
        watch.close()


def test_files_it_does_not_follow_do_not_wake_it(messages: Path) -> None:
    watch = ChatDbWatch(messages)
    try:
        assert _woken_after(watch, messages.parent / "chat.db-shm", timeout=1.0) is None
        assert _woken_after(watch, messages.parent / "notes.txt", timeout=1.0) is None
    finally:
        watch.close()


def test_without_a_folder_to_watch_the_wait_is_the_poll(tmp_path: Path) -> None:
    watch = ChatDbWatch(tmp_path / "nowhere" / "chat.db")
    try:
        assert not watch.active
        started = time.monotonic()
        assert watch.wait(0.3) is False
        assert 0.25 < time.monotonic() - started < 2.0
    finally:
        watch.close()


def test_close_stops_its_thread(messages: Path) -> None:
    before = set(threading.enumerate())
    watch = ChatDbWatch(messages)
    watch.close()
    time.sleep(0.2)
    assert set(threading.enumerate()) <= before
