"""The filters a person gives `ask` win over the dates and names read from the question.

`--since/--until/--person/--chat` are what they asked for: a date phrase in the question
("Sunday", "in March 2023") never narrows the answer to days outside them, a counting question
counts inside them, and when the question's dates and the filters disagree the answer says
which were used. A weekday or month before a noun ("Sunday dinner") names a thing, searched as
words, not a day.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from casper.dates.ranges import days_to_utc
from casper.store.db import Store
from casper.store.stats_query import chat_split, exchanged, top_people
from tests.helpers import use_fake_search_models

runner = CliRunner()
SINCE = "2024-01-01"


@pytest.fixture(autouse=True)
def _fake_search(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_search_models(monkeypatch)


def ask(home: Path, question: str, *extra: str) -> tuple[dict, str]:
    from casper.cli import app

    args = ["ask", question, "--json", "--no-llm", "--home", str(home), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), " ".join(result.stderr.split())


def _tz(home: Path) -> ZoneInfo:
    from casper.config import load_config
    from casper.dates.zones import local_tz

    return local_tz(load_config(home).timezone)


def _since(home: Path) -> float:
    start, _ = days_to_utc(date.fromisoformat(SINCE), None, _tz(home))
    assert start is not None
    return start


def _numbers(text: str) -> set[int]:
    return {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)}


def test_a_weekday_before_a_noun_is_what_it_is_about_not_a_day(home: Path) -> None:
    doc, _ = ask(home, "what did Mom cook for Sunday dinner?", "--person", "Mom", "--since", SINCE)
    assert "Nothing between" not in doc["answer"] and "2026-" not in doc["answer"]
    texts = [c["text"].lower() for c in doc["citations"]]
    assert any("sunday" in t and "dinner" in t for t in texts)  # searched as the words they are
    since = datetime.fromisoformat(SINCE).replace(tzinfo=_tz(home))
    assert all(datetime.fromisoformat(c["ts"]) >= since for c in doc["citations"])


def test_a_count_keeps_to_the_days_asked_for(home: Path) -> None:
    store = Store.open(home / "casper.sqlite", create=False)
    sam = store.resolve_person("Sam").id
    split = chat_split(store, sam, _since(home), None)
    doc, _ = ask(home, "how many messages with Sam?", "--since", SINCE)
    assert doc["grounding"] == "stats"
    assert {split["sent_one_to_one"], split["received_one_to_one"]} <= _numbers(doc["answer"])
    assert "in all your messages" not in doc["answer"]


def test_a_ranking_keeps_to_the_days_asked_for(home: Path) -> None:
    store = Store.open(home / "casper.sqlite", create=False)
    top = top_people(store, _tz(home), _since(home), None, 5)
    doc, _ = ask(home, "who do I text the most?", "--since", SINCE)
    names = store.names()
    parts = exchanged(store, _since(home), None)
    ranked = [line.strip() for line in doc["answer"].splitlines() if re.match(r"\s*\d+\.", line)]
    assert ranked == [
        f"{i}. {names[p]}: {n:,} messages ({parts[p][0]:,} one-to-one, {parts[p][1]:,} theirs "
        "in groups)"
        for i, (p, n) in enumerate(top, 1)
    ]


def test_a_count_keeps_to_the_person_asked_for(home: Path) -> None:
    store = Store.open(home / "casper.sqlite", create=False)
    mom = store.resolve_person("Mom").id
    split = chat_split(store, mom)
    doc, said = ask(home, "how many messages with Sam?", "--person", "Mom")
    assert {split["sent_one_to_one"], split["received_one_to_one"]} <= _numbers(doc["answer"])
    assert "Sam" not in doc["answer"]
    assert "--person" in said  # the question named Sam; the filter was used


def test_a_count_keeps_to_the_chat_asked_for(home: Path) -> None:
    store = Store.open(home / "casper.sqlite", create=False)
    crew = next(c.id for c in store.chats() if c.name == "Climbing crew")
    total, mine = store.conn.execute(
        "SELECT count(*), sum(sender = 'me') FROM messages WHERE chat_id = ? AND kind != 'system'",
        (crew,),
    ).fetchone()
    doc, _ = ask(home, "how many messages?", "--chat", "Climbing crew")
    assert doc["grounding"] == "stats"
    assert {total, mine} <= _numbers(doc["answer"])


@pytest.mark.parametrize(
    "question", ["what did Sam say in March 2023?", "how many messages with Sam in 2023?"]
)
def test_question_dates_outside_the_filters_are_not_used_and_that_is_said(
    home: Path, question: str
) -> None:
    doc, said = ask(home, question, "--since", SINCE)
    assert "Nothing between 2023" not in doc["answer"]
    since = datetime.fromisoformat(SINCE).replace(tzinfo=_tz(home))
    assert all(datetime.fromisoformat(c["ts"]) >= since for c in doc["citations"])
    assert f"--since {SINCE}" in f"{said} {doc['answer']}"
    if question.startswith("how many"):  # the count is the filter's, not 2023's nor none
        assert doc["grounding"] == "stats"
        store = Store.open(home / "casper.sqlite", create=False)
        split = chat_split(store, store.resolve_person("Sam").id, _since(home), None)
        assert split["sent_one_to_one"] in _numbers(doc["answer"])
