"""`ask` and `chat` take `--person`, `--chat`, `--since` and `--until` with `search`'s meaning:
every search behind the answer (the prefetch, the model's, search alone) stays inside them."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from tests.service_helpers import fake_factory, runner

QUESTION = "dinner plans"


@pytest.fixture(autouse=True)
def _fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_factory(monkeypatch)  # SearchThenAnswerEngine: it searches, then cites what it found


def _run(home: Path, *args: str):  # noqa: ANN202
    from casper.cli import app

    return runner.invoke(app, [*args, "--home", str(home)])


def _json(home: Path, *args: str) -> dict:
    result = _run(home, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("no_llm", [True, False])
def test_ask_person_keeps_every_search_to_that_persons_messages(home: Path, no_llm: bool) -> None:
    extra = ("--no-llm",) if no_llm else ()
    doc = _json(home, "ask", QUESTION, "--person", "Priya", *extra)
    found = _json(home, "search", QUESTION, "--person", "Priya", "-k", "50")
    allowed = {m["rowid"] for h in found["hits"] for m in h["messages"]}
    assert doc["citations"] and {c["rowid"] for c in doc["citations"]} <= allowed
    assert doc["filters"]["person"] == found["filters"]["person"]
    everywhere = _json(home, "ask", QUESTION, *extra)
    assert {c["rowid"] for c in everywhere["citations"]} - allowed  # the filter did something


def test_ask_since_until_keep_the_answer_to_those_days(home: Path) -> None:
    doc = _json(home, "ask", QUESTION, "--no-llm", "--since", "2024-01-01", "--until", "2024-06-30")
    assert doc["citations"] and doc["filters"]["days"] == ["2024-01-01", "2024-06-30"]
    for cited in doc["citations"]:
        assert (
            "2024-01-01" <= datetime.fromisoformat(cited["ts"]).date().isoformat() <= "2024-06-30"
        )


def test_ask_chat_that_matches_several_is_an_error_with_the_fix(home: Path) -> None:
    result = _run(home, "ask", QUESTION, "--no-llm", "--chat", "a")
    assert result.exit_code != 0 and "chats" in result.output


def test_chat_keeps_its_turns_to_the_range(home: Path) -> None:
    from casper.cli import app

    turns = f"{QUESTION}\n/quit\n"
    args = ["chat", "--no-llm", "--home", str(home)]
    scoped = runner.invoke(app, [*args, "--since", "2031-01-01", "--person", "Priya"], input=turns)
    assert scoped.exit_code == 0, scoped.output
    assert "I found nothing about that" in scoped.stdout  # after the history ends: nothing
    free = runner.invoke(app, args, input=turns)
    assert "These messages match best" in free.stdout
