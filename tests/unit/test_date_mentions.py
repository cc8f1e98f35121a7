"""Dates messages mention, resolved against the day each was sent, and the terms a question's
dates are searched with (casper.dates.mentions)."""

from __future__ import annotations

from datetime import date

import pytest

from casper.dates.mentions import is_duration, message_terms, question_terms, range_terms
from casper.dates.phrases import find_dates


@pytest.mark.parametrize(
    ("text", "sent", "day"),
    [
        ("booked flights!! lisbon the 8th of july ✈️", date(2024, 5, 26), "d20240708"),
        ("my leaving do is 31 may, you coming?", date(2021, 4, 27), "d20210531"),
        ("feb 10th works for me", date(2024, 1, 20), "d20240210"),
        ("eye test on the 7th 😬", date(2023, 1, 18), "d20230207"),  # the next 7th
        ("my graduation is thurs the 10th", date(2023, 7, 22), "d20230810"),  # a Thursday
        ("dentist next mon", date(2023, 9, 2), "d20230904"),
        ("see you tmrw x", date(2024, 9, 21), "d20240922"),
        ("yesterday was mad", date(2024, 3, 1), "d20240229"),
        ("going to lisbon in 2 weeks", date(2024, 9, 21), "d20241005"),
        ("xmas at mums?", date(2024, 12, 20), "d20241225"),
        ("we were there dec 28th", date(2024, 1, 5), "d20231228"),  # just gone, not next year's
    ],
)
def test_a_day_a_message_mentions_is_resolved_from_the_day_it_was_sent(
    text: str, sent: date, day: str
) -> None:
    terms = message_terms(text, sent)
    assert day in terms
    # the day brings its month, its year and the same day in any year
    assert {f"m{day[1:7]}", f"y{day[1:5]}", f"md{day[5:]}"} <= set(terms)


def test_next_weekday_means_the_coming_one_or_next_weeks() -> None:
    # texted on a Saturday: "next sunday" is tomorrow to some, the 7th to others
    terms = message_terms("Booked flights!! porto next sunday ✈️", date(2023, 4, 29))
    assert {"d20230430", "d20230507"} <= set(terms)


@pytest.mark.parametrize(
    ("text", "sent", "year"),
    [
        ("still not over that final in '17 😭", date(2024, 4, 19), "y2017"),
        ("broke my wrist skiing back in 2015", date(2022, 4, 1), "y2015"),
        ("did the london marathon summer 2015", date(2022, 8, 4), "y2015"),
        ("i painted that last year", date(2023, 5, 1), "y2022"),
    ],
)
def test_a_year_a_message_mentions_is_a_term(text: str, sent: date, year: str) -> None:
    assert year in message_terms(text, sent)


@pytest.mark.parametrize(
    "text",
    [
        "my back has been killing me for 4 days",
        "3 days till payday",
        "walked 2000 steps lol",
        "call me on 07700 900123",
        "it's £2015 for the lot",
        "the 3rd time this week",
        "My 30th birthday!!",
        "may i ask u something",
        "i sat in the sun",
    ],
)
def test_durations_numbers_and_words_that_look_like_dates_are_not_dates(text: str) -> None:
    assert message_terms(text, date(2024, 9, 21)) == ()


def test_a_month_with_a_preposition_is_one() -> None:
    assert message_terms("see you in march", date(2024, 9, 21)) == ("m202503", "y2025")
    assert message_terms("in may we went to rome", date(2024, 6, 20)) == ("m202405", "y2024")


def test_seasons_follow_the_hemisphere() -> None:
    north = message_terms("last summer was mad", date(2024, 9, 18), "Europe/London")
    south = message_terms("last summer was mad", date(2024, 9, 18), "Australia/Sydney")
    assert {"m202406", "m202407", "m202408"} <= set(north)
    assert {"m202312", "m202401", "m202402"} <= set(south)


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("What match did Mum watch in 2017?", ("y2017",)),
        ("Where is Priya going on the 10th of February?", ("md0210",)),  # any year
        ("which concert am i going to on september 25th", ("md0925",)),
        ("When did Leo invite me on 10 August 2023?", ("d20230810",)),  # the day only
        ("Which concert is Nadia going to in September 2022?", ("m202209",)),
        ("What concert did I go to in September?", ("m202209", "m202309")),  # covered years
        ("When was Sam hungry for 3 days?", ()),
        ("What did Sam say about the match?", ()),
    ],
)
def test_a_question_names_dates_as_the_terms_that_find_them(
    question: str, terms: tuple[str, ...]
) -> None:
    assert question_terms(question, date(2026, 3, 1), "", (2022, 2023)) == terms


def test_a_question_and_the_message_that_planned_it_share_a_term() -> None:
    asked = question_terms("Where is Nadia going on March 30th?", date(2026, 3, 1))
    texted = message_terms("booked flights!! marrakech 30 march ✈️", date(2022, 3, 9))
    assert set(asked) & set(texted) == {"md0330"}


def test_range_terms_use_the_coarsest_whole_unit() -> None:
    assert range_terms(date(2017, 1, 1), date(2017, 12, 31)) == ("y2017",)
    assert range_terms(date(2024, 6, 1), date(2024, 8, 31)) == ("m202406", "m202407", "m202408")
    assert range_terms(date(2024, 2, 10), date(2024, 2, 11)) == ("d20240210", "d20240211")


@pytest.mark.parametrize(
    "phrase", ["3 days", "for 2 weeks", "a 10 minute", "four hours", "2 weeks long"]
)
def test_lengths_of_time_are_durations(phrase: str) -> None:
    assert is_duration(phrase)


@pytest.mark.parametrize("phrase", ["3 days ago", "March 30th", "in 2017", "last week"])
def test_dates_are_not_durations(phrase: str) -> None:
    assert not is_duration(phrase)


@pytest.mark.parametrize(
    "question",
    [
        "When was Sam hungry for 3 days?",
        "When was I delayed at an airport for 4 hours?",
        "Where did I spend 2 weeks?",
        "how was the 10 minute walk",
        "the trip was 2 weeks long",
    ],
)
def test_a_duration_in_a_question_is_no_date(question: str) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    now = datetime(2026, 3, 1, 12, tzinfo=ZoneInfo("UTC"))
    assert find_dates(question, now, ZoneInfo("UTC")) is None


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("What did Elise buy on 29 Dec 2023?", date(2023, 12, 29)),
        ("what happened on Dec 29, 2023", date(2023, 12, 29)),
        ("plans for 5 Jan 2024?", date(2024, 1, 5)),
        ("anything on 14 sept 2023", date(2023, 9, 14)),
        ("what did we do on 5 January 2024", date(2024, 1, 5)),
    ],
)
def test_a_day_with_an_abbreviated_month_is_that_day_not_its_year(question: str, day: date) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    found = find_dates(question, datetime(2024, 6, 1, 12), ZoneInfo("UTC"))
    assert found is not None and found[0] == (day, day), found


def test_a_month_abbreviation_alone_is_a_word() -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    # "mar" and "jan" next to no day number stay words (a name, a verb)
    assert find_dates("did jan mar the photos?", datetime(2024, 6, 1, 12), ZoneInfo("UTC")) is None
