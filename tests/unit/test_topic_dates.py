"""A weekday, month or holiday named just before a noun is what the question is about, not a day:
"Sunday dinner", "Friday drinks", "Easter brunch", "the January sales". Both readers of a question
(the agent's dates, casper.agent.enrich, and search's, casper.search.query) keep the word as a
word to search and read no date from it; "on Sunday", "Friday night", "last Easter" stay dates."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from casper.agent.enrich import enrich
from casper.search.query import understand

TZ = ZoneInfo("America/Los_Angeles")
NOW = datetime(2024, 11, 29, 12, tzinfo=TZ)
COVERAGE = (date(2022, 3, 2), date(2024, 10, 28))

TOPICS = [
    ("what did Mom cook for Sunday dinner?", "Sunday"),
    ("who came to Friday drinks?", "Friday"),
    ("what did we eat at Easter brunch?", "Easter"),
    ("did you buy anything in the January sales?", "January"),
    ("when is the monday meeting?", "monday"),
]
DATES = [
    "what did we do on Sunday?",
    "what did Mom cook on Sunday?",
    "what did we do Friday night?",
    "what did we do last Sunday?",
    "where did we go in January?",
    "did Sam text Sunday?",
    "what happened Sunday at the park?",
]


@pytest.mark.parametrize(("question", "word"), TOPICS)
def test_a_name_before_a_noun_is_a_topic(question: str, word: str) -> None:
    assert enrich(question, NOW, TZ, coverage=COVERAGE).date_range is None
    read = understand(question, now=NOW, tz=TZ, coverage=COVERAGE)
    assert read.date_range is None
    assert word.lower() in read.lexical.lower().split()


@pytest.mark.parametrize("question", DATES)
def test_a_name_that_says_when_is_still_a_date(question: str) -> None:
    assert enrich(question, NOW, TZ, coverage=COVERAGE).date_range is not None
    assert understand(question, now=NOW, tz=TZ, coverage=COVERAGE).date_range is not None
