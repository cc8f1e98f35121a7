"""Freshness is visible: `search --json` and `ask --json` carry `indexed_through`, the
newest message the index has; a question about today while chat.db holds messages the index
does not have yet says so. In-process, on the demo corpus with the fake models."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from casper.store.db import Store
from ingest.synthetic.demo import DemoCorpus
from ingest.synthetic.writer import ChatDbWriter
from tests.helpers import index_home, private_copy, use_fake_search_models

runner = CliRunner()


def newest_message(home: Path) -> float:
    store = Store.open(home / "casper.sqlite", create=False)
    try:
        return store.conn.execute("SELECT MAX(ts) FROM messages WHERE kind != 'system'").fetchone()[
            0
        ]
    finally:
        store.close()


def stamp(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def test_search_and_ask_say_how_far_the_index_reaches(demo_home: Path) -> None:
    newest = newest_message(demo_home)
    search = json.loads(runner.invoke(app, ["search", "wifi", "--home", str(demo_home),
                                            "--json"]).stdout)  # fmt: skip
    assert stamp(search["indexed_through"]) == pytest.approx(newest, abs=1)
    ask = runner.invoke(app, ["ask", "wifi password?", "--no-llm", "--json",
                              "--home", str(demo_home)])  # fmt: skip
    assert stamp(json.loads(ask.stdout)["indexed_through"]) == pytest.approx(newest, abs=1)


def test_a_message_waiting_for_its_chunks_is_not_counted_as_indexed(demo_home: Path) -> None:
    """Stored but not yet published (its chat waits for its chunks): not indexed; what the last
    published run held still is (readers search that generation meanwhile)."""
    store = Store.open(demo_home / "casper.sqlite")
    try:
        through = store.indexed_through()
        assert through is not None
        (chat,) = store.conn.execute(
            "SELECT chat_id FROM messages WHERE kind != 'system' ORDER BY ts DESC LIMIT 1"
        ).fetchone()
        with store.transaction():
            store.conn.execute(
                "INSERT INTO messages(rowid, guid, chat_id, sender, ts, text, lday, lhour, kind, "
                "edited) VALUES (?, 'new', ?, 'me', ?, 'just in', 0, 0, 'text', 0)",
                (10**9, chat, through + 60),
            )
            store.mark_dirty([chat])  # stored, its chunks not published yet
        assert store.indexed_through() == through
        with store.transaction():  # as a run does once its chunks are published
            store.clear_dirty(store.dirty_chats())
            store.note_published()
        assert store.indexed_through() == through + 60
    finally:
        store.close()


@pytest.fixture
def behind(demo_corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home indexed from a private chat.db that then got a message the index doesn't have."""
    source = private_copy(demo_corpus, tmp_path / "src")
    home = tmp_path / "h"
    use_fake_search_models(monkeypatch)
    index_home(home, source)
    with ChatDbWriter(source.chat_db) as writer:
        chat, handle = writer.conn.execute(
            "SELECT chat_id, handle_id FROM chat_handle_join LIMIT 1"
        ).fetchone()
        writer.add_message(chat, "running late, be there at 7", from_me=False, handle=handle,
                           ts=time.time() - 600)  # fmt: skip
    return home


def test_a_question_about_today_says_when_the_index_is_behind(behind: Path) -> None:
    result = runner.invoke(app, ["ask", "what did Sam say today?", "--no-llm", "--json",
                                 "--home", str(behind)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "the index is behind your messages: what arrived since" in result.stderr
    assert "casper index" in result.stderr  # the hint
    json.loads(result.stdout)  # the document is still the only thing on stdout


def test_other_questions_and_an_index_caught_up_say_nothing(behind: Path) -> None:
    result = runner.invoke(app, ["ask", "what is the gym wifi?", "--no-llm", "--home",
                                 str(behind)])  # fmt: skip
    assert "index is behind" not in result.stderr
    assert runner.invoke(app, ["index", "--home", str(behind)]).exit_code == 0
    result = runner.invoke(app, ["ask", "what did Sam say today?", "--no-llm", "--home",
                                 str(behind)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "index is behind" not in result.stderr
