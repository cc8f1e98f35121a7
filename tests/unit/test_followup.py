"""Follow-ups in `casper chat`: "she"/"it" carry the previous turn's person, dates and topic."""

from __future__ import annotations

from datetime import date

import pytest

from casper.agent.followup import Turn, names_in, restate, rewrite, turn_of
from casper.agent.question_kind import kind_of

NAMES = ["Priya Natarajan", "Sam Rivera", "Mom"]


def test_a_pronoun_question_takes_the_last_person_topic_and_dates() -> None:
    last = turn_of(
        "what did Priya say about the dentist in June 2023?",
        [{"sender": "Priya Natarajan"}, {"sender": "me"}],
        NAMES,
        (date(2023, 6, 1), date(2023, 6, 30)),
    )
    asked, note = rewrite("what did she do about it?", last, NAMES)
    assert asked.startswith("what did she do about it? (")
    assert "about Priya Natarajan" in asked
    assert "dentist" in asked and "priya" not in asked.split("regarding")[1].lower()
    assert "between 2023-06-01 and 2023-06-30" in asked
    assert "Priya Natarajan" in note and "2023-06-01" in note


def test_the_only_other_sender_of_the_sources_is_the_person() -> None:
    last = turn_of("when is the dinner?", [{"sender": "me"}, {"sender": "Sam Rivera"}], NAMES, None)
    asked, _ = rewrite("did he confirm?", last, NAMES)
    assert "about Sam Rivera" in asked


def test_questions_that_stand_alone_are_left_alone() -> None:
    last = Turn("what did Priya say about the dentist?", ("Priya Natarajan",), None, ("dentist",))
    assert rewrite("what did Sam say about the flight?", last, NAMES) is None  # its own all
    assert rewrite("who texts me the most", last, NAMES) is None  # no pronoun, no opener
    assert rewrite("what did she do?", None, NAMES) is None  # no previous turn


def test_a_follow_up_that_names_someone_else_keeps_the_topic_not_the_person() -> None:
    last = Turn("what did Priya say about the dentist?", ("Priya Natarajan",), None, ("dentist",))
    asked, note = rewrite("what did Sam say about it?", last, NAMES)
    assert asked == "what did Sam say about it? (regarding dentist)"
    assert rewrite("and Mom?", last, NAMES)[0] == "and Mom? (regarding dentist)"  # type: ignore[index]
    assert note.startswith("read as: what did Sam say about it? (regarding dentist)")


def test_and_what_about_keeps_the_person_and_replaces_the_topic() -> None:
    last = Turn("what did Priya say about the dentist?", ("Priya Natarajan",), None, ("dentist",))
    for opener in ("and what about the license?", "what about the license?",
                   "how about the license", "And the license?"):  # fmt: skip
        asked, note = rewrite(opener, last, NAMES)  # type: ignore[misc]
        assert asked == f"{opener} (about Priya Natarajan)", asked
        assert note == f"read as: {asked} — carried from the last question"


def test_a_new_date_in_the_follow_up_wins_over_the_carried_one() -> None:
    last = Turn("dentist?", ("Priya Natarajan",), (date(2023, 6, 1), date(2023, 6, 30)), ())
    asked, _ = rewrite("what did she say in 2024?", last, NAMES)
    assert "2023-06-01" not in asked


def test_names_match_by_first_name_or_full_name_as_whole_words() -> None:
    assert names_in("did priya call", NAMES) == ["Priya Natarajan"]
    assert names_in("Sam Rivera and mom", NAMES) == ["Sam Rivera", "Mom"]
    assert names_in("samples of momentum", NAMES) == []


def test_a_chain_of_follow_ups_keeps_the_thread() -> None:
    first = turn_of(
        "what did Priya say about the dentist in June 2023?", [], NAMES,
        (date(2023, 6, 1), date(2023, 6, 30)),
    )  # fmt: skip
    asked, _ = rewrite("what did she do about it?", first, NAMES)
    second = turn_of("what did she do about it?", [], NAMES, None, previous=first)
    assert second.people == ("Priya Natarajan",) and second.topic == first.topic
    assert second.date_range == first.date_range
    again, _ = rewrite("and then?", second, NAMES)
    assert "dentist" in again and "regarding" not in second.topic


def test_a_person_follow_up_with_no_topic_of_its_own_keeps_the_last_topic() -> None:
    last = turn_of(
        "what did Priya say about the dentist?", [{"sender": "Priya Natarajan"}], NAMES, None
    )
    asked, note = rewrite("when did she go?", last, NAMES)
    assert asked == "when did she go? (about Priya Natarajan; regarding dentist)"
    assert note == f"read as: {asked} — carried from the last question"
    asked, _ = rewrite("what did she say about the flight?", last, NAMES)  # a topic of its own
    assert "dentist" not in asked and "about Priya Natarajan" in asked


# ---- a follow-up of a count, a ranking or a last contact keeps the kind ----------
KIND_NAMES = ["Priya Natarajan", "Sam Rivera", "Mom", "Dana Okafor", "Alex Chen"]
# (question, follow-up, the question the follow-up is asked as); the periods are read the way
# `casper chat` reads them (casper.dates.phrases), at a fixed now
RESTATED = [
    ("how many messages with Sam in 2023?", "and Mom?", "how many messages with Mom in 2023?"),
    ("how many messages with Sam in 2023?", "and in 2022?", "how many messages with Sam in 2022?"),
    ("how many messages with Sam in 2023?", "and Mom in 2022?",
     "how many messages with Mom in 2022?"),
    ("how many messages with Priya in 2024?", "what about Alex?",
     "how many messages with Alex in 2024?"),
    ("how many messages with Priya in 2024?", "same for 2023",
     "how many messages with Priya in 2023?"),
    ("how many texts with Alex?", "and with Mom?", "how many texts with Mom?"),
    ("how many texts with Alex?", "and last year?", "how many texts with Alex last year?"),
    ("how often do I text Mom?", "how about Sam?", "how often do I text Sam?"),
    ("how many messages with Mom in March 2023?", "and in April 2023?",
     "how many messages with Mom in April 2023?"),
    ("how many messages did I exchange in 2023?", "and Dana?",
     "how many messages with Dana in 2023?"),
    ("who texts me most in 2024?", "and in 2023?", "who texts me most in 2023?"),
    ("who do I text the most?", "and in 2022?", "who do I text the most in 2022?"),
    ("who texts me most in 2024?", "what about Mom?", "how many messages with Mom in 2024?"),
    ("who are my top contacts in 2023?", "same for 2024", "who are my top contacts in 2024?"),
    ("who texts me most in 2024?", "and last month?", "who texts me most last month?"),
    ("when did I last talk to Priya?", "and Dana?", "when did I last talk to Dana?"),
    ("when did I last talk to Priya?", "and in 2023?", "when did I last talk to Priya in 2023?"),
    ("when did I first text Sam?", "and Alex?", "when did I first text Alex?"),
    ("when did I last talk to Priya?", "what about Mom?", "when did I last talk to Mom?"),
    ("when did I first talk to Dana?", "and Mom in 2023?",
     "when did I first talk to Mom in 2023?"),
    ("who texted me last?", "and Sam?", "when did I last talk to Sam?"),
    ("when did I last text Alex Chen?", "and with Priya?", "when did I last text Priya?"),
    ("when did I last talk to Priya in 2023?", "and Dana?",
     "when did I last talk to Dana in 2023?"),
]  # fmt: skip


def _read(question: str) -> tuple[tuple[date, date] | None, str | None]:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from casper.dates.phrases import find_dates

    tz = ZoneInfo("America/Los_Angeles")
    found = find_dates(question, datetime(2024, 11, 20, 12, tzinfo=tz), tz)
    return (found[0], found[1]) if found else (None, None)


@pytest.mark.parametrize(("first", "follow", "expected"), RESTATED)
def test_a_follow_up_of_a_stats_question_is_that_question_again(
    first: str, follow: str, expected: str
) -> None:
    span, period = _read(first)
    last = turn_of(first, [], KIND_NAMES, span, period=period)
    asked = restate(follow, last, KIND_NAMES, _read(follow)[1])
    assert asked == (expected, f"read as: {expected} — carried from the last question")
    # a count stays a count, a ranking a ranking (of one person: their count), a date a date
    ranked_one = last.kind == "ranking" and kind_of(expected) == "count"
    assert kind_of(expected) == last.kind or ranked_one


def test_a_chain_of_stats_follow_ups_keeps_the_kind() -> None:
    span, period = _read("how many messages with Sam in 2023?")
    turn = turn_of("how many messages with Sam in 2023?", [], KIND_NAMES, span, period=period)
    chain = [("and Mom?", "how many messages with Mom in 2023?"),
             ("and in 2022?", "how many messages with Mom in 2022?"),
             ("what about Dana?", "how many messages with Dana in 2022?")]  # fmt: skip
    for follow, expected in chain:
        asked, _ = restate(follow, turn, KIND_NAMES, _read(follow)[1]) or ("", "")
        assert asked == expected
        span, period = _read(asked)
        turn = turn_of(asked, [], KIND_NAMES, span, period=period)


@pytest.mark.parametrize(
    ("first", "follow"),
    [
        ("how many messages with Sam in 2023?", "and the flight?"),  # a topic of its own
        ("how many messages with Sam in 2023?", "and Thanksgiving?"),  # a topic, not a contact
        ("how many messages with Sam in 2023?", "what did she say?"),  # no opener: a search
        ("when did I last talk to Priya?", "and what about the dentist?"),
        ("what did Priya say about the dentist?", "and Mom?"),  # not a stats question
        ("who texts me most in 2024?", "and?"),  # says nothing to replace
    ],
)
def test_follow_ups_that_are_not_a_person_or_a_period_are_not_restated(
    first: str, follow: str
) -> None:
    span, period = _read(first)
    last = turn_of(first, [], KIND_NAMES, span, period=period)
    assert restate(follow, last, KIND_NAMES, _read(follow)[1]) is None


def test_a_stats_question_has_no_topic_and_dates_are_no_topic() -> None:
    """The old follow-up searched the words 'messages 2023' after a count."""
    span, period = _read("how many messages with Sam in 2023?")
    counted = turn_of("how many messages with Sam in 2023?", [], KIND_NAMES, span, period=period)
    assert counted.kind == "count" and counted.topic == () and counted.period == "in 2023"
    dated = turn_of("what did Priya say about the dentist in 2023?", [], KIND_NAMES, None)
    assert dated.topic == ("dentist",)
    asked, _ = rewrite("and the flight?", counted, KIND_NAMES) or ("", "")
    assert asked == "and the flight? (about Sam Rivera; between 2023-01-01 and 2023-12-31)"
