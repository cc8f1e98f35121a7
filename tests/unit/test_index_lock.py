"""The index lock names its holder (pid, since, what): a run that has to wait says what it waits
for; a background holder (the service's auto-index) is waited for until it ends, any other for
`wait_s` at most."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from casper.errors import StoreBusy
from casper.indexer.lock import Holder, exclusive, holder


def hold(path: Path, seconds: float, **kwargs: object) -> tuple[threading.Thread, threading.Event]:
    """Hold the lock in another thread for `seconds` (flock: a second open file waits)."""
    taken = threading.Event()

    def run() -> None:
        with exclusive(path, **kwargs):  # type: ignore[arg-type]
            taken.set()
            time.sleep(seconds)

    thread = threading.Thread(target=run)
    thread.start()
    assert taken.wait(5)
    return thread, taken


def test_the_holder_is_recorded_while_held_and_cleared_after(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    before = time.time()
    with exclusive(lock, what="the test's run", background=True) as me:
        found = holder(lock)
        assert found == me
        assert found.pid == os.getpid() and found.what == "the test's run" and found.background
        assert before <= found.since <= time.time()
    assert holder(lock) is None
    assert oct(lock.stat().st_mode & 0o777) == oct(0o600)


def test_a_waiting_run_is_told_who_holds_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    thread, _ = hold(lock, 0.6, what="`casper index`")
    told: list[Holder | None] = []
    with exclusive(lock, wait_s=10, on_wait=told.append):
        pass
    thread.join()
    assert len(told) == 1 and told[0] is not None
    assert told[0].what == "`casper index`" and told[0].pid == os.getpid()


def test_another_persons_run_is_waited_for_at_most_wait_s(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    thread, _ = hold(lock, 2.0, what="`casper index`")
    started = time.monotonic()
    busy = r"`casper index` \(pid \d+\) is still running"
    with pytest.raises(StoreBusy, match=busy), exclusive(lock, wait_s=0.3):
        pass
    assert time.monotonic() - started < 1.5
    thread.join()


def test_a_background_run_is_waited_for_until_it_ends(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    thread, _ = hold(lock, 1.0, what="the casper service's auto-index", background=True)
    started = time.monotonic()
    with exclusive(lock, wait_s=0.2):  # past wait_s: it ends by itself, so wait for it
        waited = time.monotonic() - started
    thread.join()
    assert waited >= 0.7


def test_not_waiting_at_all_refuses_at_once(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    thread, _ = hold(lock, 0.5)
    with pytest.raises(StoreBusy), exclusive(lock, wait_s=0):
        pass
    thread.join()
