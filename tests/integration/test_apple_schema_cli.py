"""A Mac on Sequoia or Tahoe, end to end: chat.db and the AddressBook each carry a trigger in
syntax only Apple's SQLite parses. `casper index` (first run and incremental), `doctor`,
`contacts`, `search`, `stats` and `show` work and give what they give on the same files without
the trigger, with and without a -wal file; the service follows new messages written into such a
chat.db; both files stay byte-identical. A really damaged chat.db is still named damaged by
`casper index`, never an "unexpected" error."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from casper.cli import app
from casper.service import client
from ingest.synthetic import ChatDbWriter
from ingest.synthetic.demo import DemoCorpus, build_tiny_corpus
from ingest.synthetic.tahoe import (
    CONTACTS_TRIGGER_NAME,
    REPORTED_ERROR,
    TRIGGER_NAME,
    add_contacts_trigger,
    add_trigger,
)
from tests.helpers import index_json, private_copy, use_fake_search_models
from tests.tahoe import digests, multipage_chat_db, stock_error

runner = CliRunner()
SAME = ("messages_total", "chunks_total", "reactions", "events", "deleted", "decode_failures",
        "coverage", "vectors_total")  # fmt: skip


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> DemoCorpus:
    return build_tiny_corpus(tmp_path_factory.mktemp("tiny") / "src")


def _tahoe(corpus: DemoCorpus, dest: Path) -> tuple[DemoCorpus, Path]:
    """A private copy of `corpus` whose chat.db and AddressBook carry an Apple-only trigger;
    (corpus, the .abcddb file)."""
    copy = private_copy(corpus, dest)
    book = next(copy.contacts.rglob("*.abcddb"))
    add_trigger(copy.chat_db)
    add_contacts_trigger(book)
    assert stock_error(copy.chat_db) == REPORTED_ERROR
    assert stock_error(book) is not None
    return copy, book


def run(home: Path, *args: str) -> Any:
    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


@contextmanager
def messages_app(chat_db: Path, wal: bool) -> Iterator[tuple[ChatDbWriter, int, int]]:
    """Write as Messages does (it parses its own triggers; the stand-in skips them); with `wal`
    the writer stays open and what it commits stays in chat.db-wal."""
    with ChatDbWriter(chat_db, skip_unparsable=True) as writer:
        if wal:
            assert writer.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
            writer.conn.execute("PRAGMA wal_autocheckpoint=0")
        chat, handle = writer.conn.execute(
            "SELECT j.chat_id, j.handle_id FROM chat_handle_join j JOIN chat c ON c.ROWID = "
            "j.chat_id WHERE c.style = 45 ORDER BY j.chat_id LIMIT 1"
        ).fetchone()
        yield writer, chat, handle


def _send(writer: ChatDbWriter, chat: int, handle: int, text: str) -> str:
    _, guid = writer.add_message(chat, text, from_me=False, handle=handle, ts=time.time(),
                                 body="attributed")  # fmt: skip
    writer.conn.commit()
    return guid


def _found(home: Path, query: str) -> set[str]:
    doc = run(home, "search", query, "--mode", "bm25", "--literal", "--json")
    return {m["guid"] for hit in doc["hits"] for m in hit["messages"]}


def _check(report: dict, name: str) -> dict:
    return next(c for c in report["checks"] if c["name"] == name)


@pytest.mark.parametrize("wal", [False, True], ids=["journal", "wal"])
def test_the_whole_path_on_a_mac_with_apple_only_triggers(
    tiny: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wal: bool
) -> None:
    use_fake_search_models(monkeypatch)
    monkeypatch.setenv("CASPER_SERVICE", "0")
    plain_home, home = tmp_path / "plain-home", tmp_path / "home"
    plain = index_json(plain_home, tiny)
    corpus, book = _tahoe(tiny, tmp_path / "src")
    with messages_app(corpus.chat_db, wal) as (writer, chat, handle):
        files = (corpus.chat_db, Path(f"{corpus.chat_db}-wal"), book)
        before = digests(*files)

        first = index_json(home, corpus)
        assert {k: first[k] for k in SAME} == {k: plain[k] for k in SAME}
        assert first["messages_new"] == first["messages_total"] > 0

        report = run(home, "doctor", "--json")
        assert _check(report, "chat.db")["status"] == "ok"
        line = _check(report, "chat.db schema")
        assert line["status"] == "ok" and TRIGGER_NAME in line["detail"]
        assert "1 trigger in Apple-only syntax skipped" in line["detail"]
        assert "read-only, nothing written" in line["detail"]
        assert CONTACTS_TRIGGER_NAME in _check(report, "AddressBook schema")["detail"]
        assert _check(report, "contacts")["status"] == "ok"
        skipped = report["counts"]["skipped_schema"]
        assert skipped[str(corpus.chat_db)] == [
            {"kind": "trigger", "name": TRIGGER_NAME, "reason": 'near "ON": syntax error'}
        ]
        text = run(home, "doctor")
        assert "chat.db schema: 1 trigger in Apple-only syntax skipped" in text

        # names come from the AddressBook carrying the trigger
        people = run(home, "contacts", "--json")
        assert people == run(plain_home, "contacts", "--json")
        assert "Sam Rivera" in {p["name"] for p in people}
        assert run(home, "stats", "Sam", "--json") == run(plain_home, "stats", "Sam", "--json")
        wifi = tiny.facts["keys"]["wifi"]
        assert wifi in _found(home, "wifi password")
        shown = run(home, "show", wifi, "--json")
        assert shown["message"]["guid"] == wifi
        assert shown == run(plain_home, "show", wifi, "--json")
        assert digests(*files) == before, "Casper must never write chat.db or the AddressBook"

        # Messages writes a new message: the next run reads just that one
        guid = _send(writer, chat, handle, "the quokka borrowed my marmalade jar")
        if wal:
            assert Path(f"{corpus.chat_db}-wal").stat().st_size > 0
        before = digests(*files)
        second = index_json(home, corpus)
        assert second["messages_new"] == 1
        assert second["messages_total"] == first["messages_total"] + 1
        assert guid in _found(home, "quokka marmalade")
        assert digests(*files) == before


FOUND_WITHIN_S = 10.0


def _within(seconds: float, check: Any) -> None:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.1)


@pytest.mark.parametrize("when", ["from the start", "added while it runs"])
def test_the_service_follows_a_chat_db_with_apple_only_triggers(
    tiny: DemoCorpus,
    tmp_path: Path,
    services,  # noqa: ANN001
    when: str,
) -> None:
    """The service indexes new messages written into a chat.db holding the trigger, whether it
    was there when the service started or a macOS update adds it while the service runs."""
    if when == "from the start":
        corpus, book = _tahoe(tiny, tmp_path / "src")
    else:
        corpus = private_copy(tiny, tmp_path / "src")
        book = next(corpus.contacts.rglob("*.abcddb"))
    conn = sqlite3.connect(corpus.chat_db)
    conn.execute("PRAGMA writable_schema=ON")
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"  # as Messages keeps it
    conn.close()
    book_before = digests(book)
    home = tmp_path / "h"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        mp.setenv("CASPER_SERVICE", "0")
        index_json(home, corpus)
    services.start(home)
    _within(20, lambda: client.status(home)["auto_index"]["runs"] >= 1)
    if when == "added while it runs":
        add_trigger(corpus.chat_db)  # as the migration of a macOS update would
        add_contacts_trigger(book)
        book_before = digests(book)

    def found(query: str) -> set[str]:
        args = {"query": query, "mode": "bm25", "k": 10, "rerank": False, "literal": True}
        doc = client.call(home, "search", args, autostart=False)
        return {m["guid"] for hit in doc["hits"] for m in hit["messages"]}

    with messages_app(corpus.chat_db, wal=True) as (writer, chat, handle):
        guid = _send(writer, chat, handle, "a pangolin rang the doorbell twice")
        _within(FOUND_WITHIN_S, lambda: guid in found("pangolin doorbell"))
        second = _send(writer, chat, handle, "the axolotl wants the window seat")
        _within(FOUND_WITHIN_S, lambda: second in found("axolotl window"))
    state = client.status(home)["auto_index"]
    assert state["failures"] == 0 and state["last_run"]["outcome"] == "indexed"
    assert digests(book) == book_before


def _damage(path: Path, how: str) -> None:
    size = path.stat().st_size
    with path.open("r+b") as f:
        if how == "cut in half":
            f.truncate(size // 2 // 4096 * 4096)
        else:
            f.seek(4096 * int(how.split()[-1]))
            f.write(bytes(range(256)) * 16 * 8)


@pytest.fixture(scope="module")
def multipage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return multipage_chat_db(tmp_path_factory.mktemp("multipage") / "chat.db")


@pytest.mark.parametrize("how", ["cut in half", "random bytes at page 3",
                                 "random bytes at page 8", "random bytes at page 200"])  # fmt: skip
@pytest.mark.parametrize("apple_trigger", [False, True], ids=["plain", "tahoe"])
def test_index_names_a_really_damaged_chat_db_damaged(
    multipage: Path, tmp_path: Path, how: str, apple_trigger: bool
) -> None:
    path = tmp_path / "chat.db"
    shutil.copy(multipage, path)
    if apple_trigger:
        add_trigger(path)
    _damage(path, how)
    result = runner.invoke(
        app, ["index", "--home", str(tmp_path / "home"), "--chat-db", str(path), "--no-contacts"]
    )
    assert result.exit_code == 1
    assert "is damaged" in result.output and "unexpected" not in result.output
    assert "copy chat.db again" in result.output
