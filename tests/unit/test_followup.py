"""Follow-ups in `casper chat`: "she"/"it" carry the previous turn's person, dates and topic."""

from __future__ import annotations

from datetime import date

from casper.agent.followup import Turn, names_in, rewrite, turn_of

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
