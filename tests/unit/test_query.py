"""Query understanding: dates, people and scaffolding read out of a search question."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from casper.search.query import NameIndex, day_first, numeric_date, understand

NOW = datetime(2024, 6, 1, 12, tzinfo=UTC)
TZ = ZoneInfo("Europe/Berlin")
PEOPLE = [("p_paola", "Paola Rossi"), ("p_fahim", "Fahim Khan"), ("p_kevin", "Kevin Smith")]


def read(question: str, **kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {"now": NOW, "tz": TZ, "people": PEOPLE, "locale": "en_US"}
    return understand(question, **{**args, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("locale", "expected"),
    [("en_US", False), ("en_GB", True), ("de_DE", True), ("fr", True), ("en-PH", False)],
)
def test_day_first_follows_the_locale_country(locale: str, expected: bool) -> None:
    assert day_first(locale) is expected


@pytest.mark.parametrize(
    ("text", "locale", "day", "order"),
    [
        ("on 3/4/2024", "en_US", date(2024, 3, 4), "month-first"),
        ("on 3/4/2024", "en_GB", date(2024, 4, 3), "day-first"),
        ("on 17.01.2024", "en_US", date(2024, 1, 17), "unambiguous"),  # 17 cannot be a month
        ("on 03.04.2024", "en_US", date(2024, 4, 3), "day-first"),  # dots are day-first
        ("on 2024-01-17", "en_US", date(2024, 1, 17), "unambiguous"),
        ("on 1/2/24", "en_US", date(2024, 1, 2), "month-first"),
    ],
)
def test_numeric_dates_resolve_by_locale(text: str, locale: str, day: date, order: str) -> None:
    found = numeric_date(f"what happened {text}?", locale)
    assert found is not None
    span, phrase, got_order, _ = found
    assert span == (day, day)
    assert got_order == order
    assert phrase == text


def test_an_impossible_numeric_date_is_not_a_date() -> None:
    assert numeric_date("score was 31/31/2024", "en_US") is None


def test_a_written_date_becomes_a_scope_and_leaves_both_queries() -> None:
    u = read("What did Paola have in math class on 17.01.2024?")
    assert u.date_range == (date(2024, 1, 17), date(2024, 1, 17))
    assert "17" not in u.lexical and "17" not in u.semantic
    assert u.to_json()["dates"]["from"] == "2024-01-17"


@pytest.mark.parametrize(
    "text",
    ["between 2023-01-01 and 2023-12-31", "from 2023-01-01 to 2023-12-31",
     "2023-12-31 - 2023-01-01"],
)  # fmt: skip
def test_two_iso_days_are_the_range_between_them_not_the_first_day(text: str) -> None:
    """A chat follow-up carries its dates this way ("and Mom? (…; between 2023-01-01 and
    2023-12-31)"); read as its first day it said "Nothing between 2023-01-01 and 2023-01-01"."""
    from casper.dates.phrases import find_dates

    whole = (date(2023, 1, 1), date(2023, 12, 31))
    assert read(f"and Mom? (regarding dentist; {text})").date_range == whole
    assert find_dates(f"and Mom? ({text})", NOW, TZ) == (whole, text)


@pytest.mark.parametrize(
    ("question", "lexical", "dropped"),
    [
        ("when did Paola and I plan the trip to Rome?", "the trip to Rome", {"and", "plan"}),
        ("did Fahim text me about the dentist?", "about the dentist", {"text"}),
        ("what did Kevin say about the flight and the hotel?", "about the flight the hotel",
         {"say", "and"}),
        ("when did we discuss the budget?", "the budget", {"discuss"}),
    ],
)  # fmt: skip
def test_asking_verbs_and_joiners_never_outrank_the_topic(
    question: str, lexical: str, dropped: set[str]
) -> None:
    """ "plan" matched "any plans this weekend?" above "thanksgiving" in Sam's chats:
    beside a topic word, the verbs a question asks with and "and" are not searched."""
    u = read(question)
    assert u.lexical == lexical and u.typed == lexical
    assert dropped <= set(u.dropped)


@pytest.mark.parametrize(
    ("question", "lexical"),
    [
        ("what are our plans for new year?", "plans for new year"),  # a noun: the topic
        ("did you read the text about the party?", "read the text about the party"),
        ("what did we talk about?", "talk about"),  # nothing else to search
        ("what plans do I have after the event?", "plans after the event"),
        ("what did Paola plan to do that evening?", "plan to that evening"),  # an intention
    ],
)  # fmt: skip
def test_the_same_words_as_a_topic_are_kept(question: str, lexical: str) -> None:
    assert read(question).lexical == lexical


def test_words_for_dates_use_the_enrichment_rules() -> None:
    u = read("Where did we go around Thanksgiving 2023?")
    assert u.date_range is not None
    assert u.date_range[0] <= date(2023, 11, 23) <= u.date_range[1]
    assert "Thanksgiving" not in u.lexical


def test_a_named_contact_scopes_to_them_and_leaves_the_lexical_query() -> None:
    u = read("When did Fahim visit the natural history museum?")
    assert u.person_id == "p_fahim"
    assert "Fahim" not in u.lexical
    assert "museum" in u.lexical
    assert u.to_json()["people"] == [{"id": "p_fahim", "name": "Fahim Khan", "said": "Fahim"}]


def test_possessives_and_full_names_are_recognised() -> None:
    assert read("what is Paola Rossi's new address").person_id == "p_paola"
    assert "Paola" not in read("what is Paola's new address").lexical


def test_the_owners_own_name_means_me_not_a_contact() -> None:
    u = read("When did Kevin go to Paris?", me_names=("Kevin",))
    assert u.me == ("Kevin",)
    assert u.person_id is None  # Kevin Smith the contact is not meant
    assert "Kevin" not in u.lexical


def test_a_first_name_shared_by_two_contacts_scopes_to_nobody() -> None:
    people = [*PEOPLE, ("p_paola2", "Paola Bianchi")]
    u = read("what did Paola say about the trip", people=people)
    assert u.person_id is None
    assert u.to_json()["people_use"] == "ambiguous, not used"


def test_scaffolding_does_not_reach_bm25() -> None:
    u = read("How many times did I go to the climbing gym?")
    assert u.lexical == "many times go to the climbing gym"
    assert {"how", "did", "i"} <= set(u.dropped)


def test_a_question_of_only_scaffolding_keeps_its_words() -> None:
    assert read("what did you do?").lexical == "what did you do"


def test_literal_reads_nothing_into_the_question() -> None:
    u = read("When did Fahim visit on 17.01.2024?", literal=True)
    assert (u.lexical, u.semantic, u.date_range, u.people) == (u.text, u.text, None, ())
    assert u.to_json() == {"literal": True, "lexical_query": u.text}


def test_lowercase_words_that_look_like_names_are_not_people() -> None:
    people = [("p_will", "Will Turner")]
    u = read("what will the weather be", people=people)
    assert u.people == ()


def test_a_contact_name_in_lower_case_is_the_contact_unless_a_common_word() -> None:
    people = [*PEOPLE, ("p_mom", "Mom"), ("p_mark", "Mark Lee")]
    u = read("what did mom say about the wifi", people=people)
    assert u.person_id == "p_mom" and "mom" not in u.lexical
    assert read("when did fahim visit the museum", people=people).person_id == "p_fahim"
    assert read("mark the date for the trip", people=people).people == ()  # a word first
    assert read("the paola rossi plan", people=people).person_id == "p_paola"


def test_the_summary_line_says_what_was_read() -> None:
    u = read("When did Fahim visit the museum on 17.01.2024?")
    assert (
        u.summary()
        == "words 'visit the museum' · 'on 17.01.2024' = 2024-01-17 · chats with Fahim Khan"
    )


@pytest.mark.parametrize(
    ("asked", "semantic"),
    [
        ("When did Kevin go to Paris?", "When did I go to Paris?"),
        ("What is Kevin's favourite food?", "What is my favourite food?"),
        ("Kevin went where?", "I went where?"),
        ("Did Sam and Kevin meet?", "Did Sam and I meet?"),
        ("What did Sam give Kevin?", "What did Sam give me?"),
    ],
)
def test_the_embedder_is_asked_in_the_first_person(asked: str, semantic: str) -> None:
    assert read(asked, me_names=("Kevin",)).semantic == semantic


def test_a_month_without_a_year_means_one_the_index_covers() -> None:
    covered = (date(2023, 1, 5), date(2023, 12, 20))
    u = read("where did we go hiking in October?", coverage=covered)
    assert u.date_range == (date(2023, 10, 1), date(2023, 10, 31))


def names(**aliases: tuple[str, ...]) -> NameIndex:
    return NameIndex(PEOPLE, (), {f"p_{k}": v for k, v in aliases.items()})


def test_a_cards_nickname_and_organization_name_the_person() -> None:
    index = names(paola=("Paola Rossi", "Pao", "Rossi Dental"), fahim=("Fa",))
    u = read("What did Pao say about the filling at Rossi Dental?", people=index)
    assert u.person_id == "p_paola"
    assert [p.said for p in u.people] == ["Pao", "Rossi Dental"]
    assert u.lexical == "about the filling at"  # both names (and the verb "say") left out
    assert read("did Fa call", people=index).person_id == "p_fahim"  # a chosen two-letter name


def test_card_names_match_whole_and_capitalised_only() -> None:
    index = names(paola=("Rossi Dental",), fahim=("Bear",))
    assert read("the dental bill", people=index).people == ()  # an organization word alone
    assert read("a bear at the zoo", people=index).people == ()  # a lower-case word
    assert read("what did Bear send", people=index).person_id == "p_fahim"


def test_the_owners_own_name_is_never_a_contact_alias() -> None:
    index = NameIndex(PEOPLE, ("Kev",), {"p_kevin": ("Kev",), "p_paola": ("Pao",)})
    u = read("what did Kev tell Pao", people=index, me_names=("Kev",))
    assert u.me == ("Kev",) and u.person_id == "p_paola"


def test_the_words_as_typed_keep_dates_and_set_the_scaffolding_apart() -> None:
    u = read("When did Fahim visit the museum on 17.01.2024?")
    assert "Fahim" not in u.lexical and "17" not in u.lexical  # the reading's query
    # searched beside it; Fahim is a scope already (it leads only with what matches)
    assert u.typed == "visit the museum on 17 01 2024"
    assert set(u.weak) == {"when", "did"}
    assert u.date_terms == ("d20240117",)


def test_the_dates_a_question_names_become_terms_whatever_the_scope() -> None:
    u = read("What match did Fahim watch in 2017?", coverage=(date(2021, 1, 1), date(2024, 6, 1)))
    assert u.date_terms == ("y2017",)
    assert u.typed == "match watch in 2017"


def test_dates_outside_the_indexed_history_are_no_scope() -> None:
    covered = (date(2021, 1, 1), date(2024, 6, 1))
    before = read("What match did Fahim watch in 2017?", coverage=covered)
    assert before.date_range == (date(2017, 1, 1), date(2017, 12, 31))  # still read, and said
    assert before.date_outside and before.scope_dates is None
    assert before.to_json()["dates"]["use"] == "outside the indexed history, not a scope"
    inside = read("What did Fahim say on 17.01.2024?", coverage=covered)
    assert not inside.date_outside and inside.scope_dates == inside.date_range


def test_a_duration_is_neither_a_scope_nor_left_out_of_the_words() -> None:
    u = read("When was Fahim hungry for 3 days?")
    assert u.date_range is None and u.date_terms == ()
    assert "3 days" in u.lexical and "3 days" in u.typed


def test_a_contact_who_shares_the_owners_first_name_is_the_contact() -> None:
    people = [*PEOPLE, ("p_kevin2", "Kevin Park")]
    alone = read("When did Kevin Park have covid?", people=people, me_names=("Kevin",))
    assert alone.person_id == "p_kevin2" and alone.me == ()
    assert alone.semantic == alone.text  # not "When did I Park have covid?"
    both = read("When did Kevin Park tell Kevin about the job?", people=people, me_names=("Kevin",))
    assert both.person_id == "p_kevin2" and both.me == ("Kevin",)
    assert both.semantic == "When did Kevin Park tell me about the job?"
    assert both.typed == "about the job"  # both names (and the verb "tell") leave the typed leg


def test_a_month_inside_the_history_is_its_scope_not_a_mention() -> None:
    # every day a message mentions in May 2023 carries "m202305": searching it pulled them all
    covered = (date(2022, 1, 1), date(2024, 6, 1))
    may = read("Which country was I visiting in May 2023?", coverage=covered)
    assert may.scope_dates is not None and may.date_terms == ()
    day = read("What is Fahim doing on 10 May 2023?", coverage=covered)
    assert day.date_terms == ("d20230510",)  # a day is kept: plans name the day they are for


def test_the_owners_name_on_a_contacts_card_is_said_ambiguous() -> None:
    u = read("When did Kevin go to Paris?", me_names=("Kevin",))
    assert u.ambiguous == (("Kevin", 2),)  # the owner and Kevin Smith
    assert "Kevin: 2 people, not narrowed" in u.summary() and "= me" not in u.summary()
    two = read("what did Paola say", people=[*PEOPLE, ("p_paola2", "Paola Bianchi")])
    assert two.ambiguous == (("Paola", 2),) and two.person_id is None
