"""The service keeps the index current by itself: a message written to chat.db the way
Messages writes it (WAL mode, ingest.synthetic's writer) is found by `casper search` within
seconds, an edit and an unsend show up the same way, a burst is one run, `--no-auto-index` turns
it off, a failing run backs off and is reported (status, doctor) instead of crashing, and a
manual `casper index` waits for an automatic run with a line saying so.

The service is its own process (tests/service_server.py: the real server with the fake
embedder); chat.db is a private WAL copy of the demo corpus. What depends on timing alone (a
burst is one run; switched off, nothing runs however long) is driven in this process: the
auto-indexer's own look at chat.db, on a clock the test moves.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from casper.app import handlers
from casper.app.runtime import Runtime
from casper.cli import app
from casper.config import load_config, remember
from casper.service import client
from casper.service.autoindex import AutoIndexer
from ingest.synthetic.demo import DemoCorpus
from ingest.synthetic.writer import ChatDbWriter
from tests.helpers import index_home, private_copy, use_fake_search_models

FOUND_WITHIN_S = 10.0  # the lexical leg's p95 target (performance.md); the fake embedder is as fast


@pytest.fixture
def live(demo_corpus: DemoCorpus, tmp_path: Path) -> tuple[Path, Path]:
    """(home, chat.db): a private WAL-mode copy of the demo chat.db, indexed (fake models)."""
    source = private_copy(demo_corpus, tmp_path / "src")
    conn = sqlite3.connect(source.chat_db)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.close()
    home = tmp_path / "h"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(home, source)
    return home, source.chat_db


@contextmanager
def messages_app(chat_db: Path) -> Iterator[tuple[ChatDbWriter, int, int]]:
    """Write like Messages: a WAL connection that commits each change; (writer, chat, handle)
    of a 1:1 chat to write into."""
    with ChatDbWriter(chat_db) as writer:
        writer.conn.execute("PRAGMA journal_mode=WAL")
        chat, handle = writer.conn.execute(
            "SELECT j.chat_id, j.handle_id FROM chat_handle_join j JOIN chat c ON c.ROWID = "
            "j.chat_id WHERE c.style = 45 ORDER BY j.chat_id LIMIT 1"
        ).fetchone()
        yield writer, chat, handle


def send(writer: ChatDbWriter, chat: int, handle: int, text: str) -> tuple[int, str, float]:
    """A received message, committed; (rowid, guid, its time)."""
    now = time.time()
    rowid, guid = writer.add_message(chat, text, from_me=False, handle=handle, ts=now,
                                     body="attributed")  # fmt: skip
    writer.conn.commit()
    return rowid, guid, now


def found(home: Path, query: str, mode: str = "bm25") -> dict[str, str]:
    """guid → text of every message in the hits of a search through the service."""
    args = {"query": query, "mode": mode, "k": 10, "rerank": False, "literal": True}
    doc = client.call(home, "search", args, autostart=False)
    return {m["guid"]: m["text"] for hit in doc["hits"] for m in hit["messages"]}


def within(seconds: float, check: Callable[[], Any], step: float = 0.1) -> float:
    """Seconds until `check()` is truthy; fails after `seconds`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(step)
    return time.monotonic() - started


def auto(home: Path) -> dict[str, Any]:
    return client.status(home)["auto_index"]


def caught_up(home: Path) -> None:
    """The service's first run (catching up with what came while it was off) is done."""
    within(20, lambda: auto(home)["runs"] >= 1 and auto(home)["state"] == "watching")


def test_a_new_message_an_edit_and_an_unsend_show_up_within_seconds(
    live: tuple[Path, Path],
    services,  # noqa: ANN001
) -> None:
    home, chat_db = live
    services.start(home)
    caught_up(home)
    with messages_app(chat_db) as (writer, chat, handle):
        _, guid, sent = send(writer, chat, handle, "the quokka borrowed my marmalade jar")
        within(FOUND_WITHIN_S, lambda: guid in found(home, "quokka marmalade"))
        within(FOUND_WITHIN_S, lambda: guid in found(home, "quokka marmalade", "vector"))
        doc = client.call(home, "search", {"query": "quokka"}, autostart=False)
        assert datetime.fromisoformat(doc["indexed_through"]).timestamp() >= int(sent)

        rowid = writer.conn.execute("SELECT ROWID FROM message WHERE guid=?", (guid,)).fetchone()[0]
        writer.edit_message(rowid, "the wombat borrowed my marmalade jar", ts=time.time())
        writer.conn.commit()
        # found by the new word only (the text a hit shows is the store's, newer at once)
        within(FOUND_WITHIN_S, lambda: guid in found(home, "wombat"))
        assert guid not in found(home, "quokka")
        assert found(home, "wombat")[guid] == "the wombat borrowed my marmalade jar"

        writer.unsend_message(rowid, ts=time.time())
        writer.conn.commit()
        within(FOUND_WITHIN_S, lambda: guid not in found(home, "wombat marmalade"))
    last = auto(home)["last_run"]
    assert last["outcome"] == "indexed" and last["duration_s"] > 0
    assert auto(home)["failures"] == 0


class Clock:
    """A monotonic clock the test moves by hand (AutoIndexer's `clock`)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def in_process(home: Path, clock: Clock) -> AutoIndexer:
    """The service's auto-index without its thread: the test calls `look()` (what the thread
    does each poll) and moves the clock; the runs are real ones (the models as the caller set
    them)."""
    host = SimpleNamespace(rt=Runtime(load_config(home)), data_lock=threading.Lock())
    return AutoIndexer(host, home, clock=clock)


def found_here(home: Path, query: str) -> dict[str, str]:
    """`found`, in this process."""
    args = {"query": query, "mode": "bm25", "k": 10, "rerank": False, "literal": True}
    doc = handlers.run(Runtime(load_config(home)), "search", args)
    assert isinstance(doc, dict)
    return {m["guid"]: m["text"] for hit in doc["hits"] for m in hit["messages"]}


def test_a_burst_of_messages_is_one_run(
    live: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, chat_db = live
    use_fake_search_models(monkeypatch)
    clock = Clock()
    indexer = in_process(home, clock)
    indexer.look()  # the catch-up run a service starts with
    assert indexer.runs == 1
    quiet = indexer.watcher.policy.quiet_s
    guids = []
    with messages_app(chat_db) as (writer, chat, handle):
        # each write closer to the last than the quiet time, and a look after every one (more
        # often than the thread polls): no run while they come, one once they pause
        for i in range(20):
            guids.append(send(writer, chat, handle, f"the narwhal parade, float nr{i}x")[1])
            clock.advance(quiet / 5)
            indexer.look()
            assert indexer.runs == 1, f"a run started after write {i + 1} of 20"
        clock.advance(quiet)  # they pause (Messages still open: closing it is a write too)
        indexer.look()
        assert indexer.runs == 2
    assert indexer.status()["last_run"]["messages_new"] == 20
    for i, guid in enumerate(guids):  # each by its own word
        assert guid in found_here(home, f"nr{i}x")


def test_switched_off_by_the_flag_nothing_watches(live: tuple[Path, Path], services) -> None:  # noqa: ANN001
    home, _ = live
    services.start(home, "--no-auto-index")
    # the status a service without an auto-indexer gives: it built none, so nothing runs
    state = auto(home)
    assert (state["enabled"], state["off_reason"], state["state"]) == (
        False, "--no-auto-index", "off"
    )  # fmt: skip


def test_switched_off_in_the_config_it_leaves_the_index_alone(
    live: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, chat_db = live
    use_fake_search_models(monkeypatch)
    with (home / "config.toml").open("a") as fh:
        fh.write("auto_index = false\n")
    clock = Clock()
    indexer = in_process(home, clock)
    with messages_app(chat_db) as (writer, chat, handle):
        _, guid, _ = send(writer, chat, handle, "a pangolin at the door")
    for _ in range(10):  # far past the quiet time, the longest delay and any backoff
        clock.advance(indexer.watcher.policy.max_delay_s)
        indexer.look()
    state = indexer.status()
    assert (indexer.runs, state["enabled"], state["off_reason"], state["state"]) == (
        0, False, "auto_index = false", "off"
    )  # fmt: skip
    assert guid not in found_here(home, "pangolin")
    # switched on (the service rebuilds its runtime when config.toml changes): the next look
    # catches up with what came meanwhile
    indexer.host.rt = Runtime(dataclasses.replace(indexer.host.rt.cfg, auto_index=True))
    indexer.look()
    assert indexer.runs == 1 and guid in found_here(home, "pangolin")


def test_a_failing_run_backs_off_and_is_reported_not_fatal(
    home: Path,
    services,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remember(home, chat_db=home / "gone" / "chat.db")  # chat.db vanished (an unplugged disk)
    services.start(home)
    within(20, lambda: auto(home)["failures"] >= 1)
    state = auto(home)
    assert state["state"] == "backing off" and 0 < state["retry_in_s"] <= 5
    assert state["last_run"]["outcome"] == "failed"
    assert "does not exist" in state["last_run"]["error"] and state["last_run"]["hint"]
    time.sleep(1.5)
    assert auto(home)["failures"] == 1  # not retried in a loop: the next try is 5 s later
    assert found(home, "wifi password")  # searches keep answering from the index it has
    saved = json.loads((home / "auto_index.json").read_text())
    assert saved["last_run"]["outcome"] == "failed"
    assert oct((home / "auto_index.json").stat().st_mode & 0o777) == oct(0o600)
    # `casper doctor` says so, with the error and its hint
    monkeypatch.setenv("CASPER_SERVICE", "1")
    result = CliRunner().invoke(app, ["doctor", "--home", str(home), "--json"])
    line = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "auto-index")
    # 1 or, on a slow machine where doctor took past the 5 s backoff, 2 failures in a row
    assert line["status"] == "warn" and re.search(r"failing \([12] in a row", line["detail"])
    assert line["hint"] == state["last_run"]["hint"]


def test_doctor_shows_how_current_the_index_is_and_the_last_run(
    live: tuple[Path, Path],
    services,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home, _ = live
    services.start(home)
    caught_up(home)
    monkeypatch.setenv("CASPER_SERVICE", "1")
    result = CliRunner().invoke(app, ["doctor", "--home", str(home), "--json"])
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    line = checks["auto-index"]
    assert line["status"] == "ok", line
    assert "indexed through 2024-" in line["detail"] and "lag 0 s" in line["detail"]
    assert "last auto-run" in line["detail"] and "took" in line["detail"]
    assert checks["service access"]["status"] == "ok"


def test_a_manual_index_waits_for_an_automatic_run_and_says_so(
    demo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casper.config import load_config
    from casper.indexer.lock import exclusive
    from casper.service.autoindex import WHAT

    taken, release = threading.Event(), threading.Event()

    def service_run() -> None:
        with exclusive(load_config(demo_home).lock_path, what=WHAT, background=True):
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=service_run)
    holder.start()
    assert taken.wait(5)
    threading.Timer(1.5, release.set).start()  # longer than the line takes to appear
    started = time.monotonic()
    result = CliRunner().invoke(app, ["index", "--home", str(demo_home), "--json"])
    holder.join()
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started >= 1.0  # it waited, then ran
    assert f"waiting for the casper service's auto-index (pid {os.getpid()}, running since" in (
        result.stderr
    )
    assert "it ends by itself" in result.stderr
    assert json.loads(result.stdout)["noop"] is True


def test_without_full_disk_access_it_names_the_interpreter_to_grant(
    demo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS refuses chat.db to a service started at login until its own interpreter has Full
    Disk Access (the terminal's doesn't count): the run fails as "no access" and doctor's
    "service access" line says which binary to add. The refusal is simulated where macOS
    gives it, at the first stat of chat.db (EPERM)."""
    import sys
    from types import SimpleNamespace

    import ingest.connect
    from casper.app.doctor_service import service_access_check
    from casper.config import load_config
    from casper.service.autoindex import AutoIndexer
    from ingest.errors import ChatDbUnreadable

    def refused(path: Path) -> None:
        raise ChatDbUnreadable(f"cannot access {path}: Operation not permitted")

    monkeypatch.setattr(ingest.connect, "_check_file", refused)
    host = SimpleNamespace(rt=SimpleNamespace(cfg=load_config(demo_home)),
                           data_lock=threading.Lock())  # fmt: skip
    indexer = AutoIndexer(host, demo_home)
    indexer.start()
    try:
        within(20, lambda: indexer.status()["failures"] >= 1)
    finally:
        indexer.stop(timeout=10)
    live = indexer.status()
    assert live["last_run"]["no_access"] is True and live["state"] == "backing off"
    exe = os.path.realpath(sys.executable)
    line = service_access_check({"pid": os.getpid()}, live, live, login_agent=False)
    assert line is not None and line["status"] == "fail"
    assert exe in line["detail"] and "Operation not permitted" in line["detail"]
    assert "Full Disk Access" in line["hint"] and exe in line["hint"]
