"""The auto-index hears a new message from the operating system (casper.service.filewatch): the
run for it starts once the writes pause, not at the next stat of chat.db. Here the stat is set
to once a minute, so only the file watch can start the run in time; the one-second poll is what
a machine without the watch keeps (test_file_watch.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from casper.app.runtime import Runtime
from casper.config import load_config
from casper.service.autoindex import AutoIndexer
from casper.service.watcher import Policy
from tests.helpers import use_fake_search_models
from tests.integration.test_auto_index import live, messages_app, send  # noqa: F401


def test_a_written_message_starts_its_run_once_the_writes_pause(
    live: tuple[Path, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home, chat_db = live
    use_fake_search_models(monkeypatch)
    host = SimpleNamespace(rt=Runtime(load_config(home)), data_lock=threading.Lock())
    policy = Policy(poll_s=60.0, settle_poll_s=60.0)
    indexer = AutoIndexer(host, home, policy=policy)
    indexer.start()
    try:
        deadline = time.monotonic() + 60
        while indexer.runs < 1:  # the catch-up run a service starts with
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
        with messages_app(chat_db) as (writer, chat, handle):
            send(writer, chat, handle, "the narwhal parade starts at noon")
            wrote = time.monotonic()
            while indexer.runs < 2:
                assert time.monotonic() - wrote < 10, "no run: the write was not heard"
                time.sleep(0.02)
            started = time.monotonic() - wrote
    finally:
        indexer.stop(10)
    assert indexer.status()["last_run"]["messages_new"] == 1
    # the quiet time after the write, then the run: nowhere near the minute-long poll
    assert started < policy.quiet_s + 5
