"""Question enrichment: date phrases → local date ranges, ranking intent (pinned now)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from casper.agent.enrich import Enrichment, enrich, to_hints

LONDON = ZoneInfo("Europe/London")
LA = ZoneInfo("America/Los_Angeles")
SYDNEY = ZoneInfo("Australia/Sydney")
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=LONDON)  # a Sunday; Thanksgiving 2026 is Nov 26


def d(text: str) -> date:
    return date.fromisoformat(text)


CASES: list[tuple[str, str | None, str | None, str | None]] = [
    ("What did we eat last Thanksgiving?", "2025-11-24", "2025-11-30", "last Thanksgiving"),
    ("thanksgiving 2023 plans", "2023-11-20", "2023-11-26", "thanksgiving 2023"),
    ("who came for last christmas", "2025-12-22", "2025-12-28", "last christmas"),
    ("this 4th of july party", "2026-07-01", "2026-07-07", "this 4th of july"),
    ("easter 2026 brunch", "2026-04-02", "2026-04-08", "easter 2026"),
    ("what did Sam say in March", "2026-03-01", "2026-03-31", "in March"),
    ("last March plans", "2026-03-01", "2026-03-31", "last March"),
    ("in November", "2026-11-01", "2026-11-30", "in November"),
    ("last November", "2025-11-01", "2025-11-30", "last November"),
    ("party in june", "2026-06-01", "2026-06-30", "in june"),
    ("photos from December 2019", "2019-12-01", "2019-12-31", "from December 2019"),
    ("since March", "2026-03-01", "2026-11-22", "since March"),
    ("what happened two weeks ago", "2026-11-02", "2026-11-08", "two weeks ago"),
    ("a couple of weeks ago", "2026-11-02", "2026-11-08", "a couple of weeks ago"),
    ("dinner 3 days ago", "2026-11-19", "2026-11-19", "3 days ago"),
    ("3 months ago", "2026-08-01", "2026-08-31", "3 months ago"),
    ("in the past two weeks", "2026-11-08", "2026-11-22", "past two weeks"),
    ("over the past month", "2026-10-22", "2026-11-22", "past month"),
    ("how many messages in 2019", "2019-01-01", "2019-12-31", "in 2019"),
    ("who texted me yesterday", "2026-11-21", "2026-11-21", "yesterday"),
    ("trip last summer", "2026-06-01", "2026-08-31", "last summer"),
    ("summer of 2019", "2019-06-01", "2019-08-31", "summer of 2019"),
    ("last winter", "2025-12-01", "2026-02-28", "last winter"),
    ("what happened last week", "2026-11-09", "2026-11-15", "last week"),
    ("this week", "2026-11-16", "2026-11-22", "this week"),
    ("last weekend", "2026-11-14", "2026-11-15", "last weekend"),
    ("last month", "2026-10-01", "2026-10-31", "last month"),
    ("last year", "2025-01-01", "2025-12-31", "last year"),
    ("what did we talk about on Friday", "2026-11-20", "2026-11-20", "on Friday"),
    ("dentist on March 3rd", "2026-03-03", "2026-03-03", "March 3rd"),
    ("messages from 5 June 2021", "2021-06-05", "2021-06-05", "5 June 2021"),
    ("what did I say an hour ago", "2026-11-22", "2026-11-22", "an hour ago"),
    ("what did June say about the dentist", None, None, None),
    ("what did Summer say", None, None, None),
    ("we met at the cafe", None, None, None),
    ("may I ask what Sam said", None, None, None),
]


@pytest.mark.parametrize(("question", "start", "end", "phrase"), CASES)
def test_enrich_dates(
    question: str, start: str | None, end: str | None, phrase: str | None
) -> None:
    got = enrich(question, NOW, LONDON)
    expected = (d(start), d(end)) if start and end else None
    assert got.date_range == expected
    assert got.phrase == phrase


@pytest.mark.parametrize(
    ("question", "london", "los_angeles"),
    [
        ("yesterday", ("2026-11-21", "2026-11-21"), ("2026-11-20", "2026-11-20")),
        ("today", ("2026-11-22", "2026-11-22"), ("2026-11-21", "2026-11-21")),
        ("last week", ("2026-11-09", "2026-11-15"), ("2026-11-09", "2026-11-15")),
        ("last Thanksgiving", ("2025-11-24", "2025-11-30"), ("2025-11-24", "2025-11-30")),
    ],
)
def test_time_zone_decides_today(
    question: str, london: tuple[str, str], los_angeles: tuple[str, str]
) -> None:
    early_utc = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)  # 03:00 London, 19:00 the day before LA
    assert enrich(question, early_utc, LONDON).date_range == (d(london[0]), d(london[1]))
    assert enrich(question, early_utc, LA).date_range == (d(los_angeles[0]), d(los_angeles[1]))


def test_naive_now_is_read_as_local() -> None:
    naive = datetime(2026, 11, 22, 1, 0)
    assert enrich("yesterday", naive, LA).date_range == (d("2026-11-21"), d("2026-11-21"))


def test_southern_hemisphere_summer() -> None:
    got = enrich("last summer", NOW, SYDNEY)
    assert got.date_range == (d("2025-12-01"), d("2026-02-28"))


def test_thanksgiving_day_itself() -> None:
    day = datetime(2026, 11, 26, 18, 0, tzinfo=LA)
    assert enrich("this thanksgiving", day, LA).date_range == (d("2026-11-23"), d("2026-11-29"))
    assert enrich("last thanksgiving", day, LA).date_range == (d("2025-11-24"), d("2025-11-30"))


@pytest.mark.parametrize(
    ("question", "ranking"),
    [
        ("Who did I text the most?", True),
        ("who do I talk to least", True),
        ("How often do I message Sam?", True),
        ("how many messages did Alex send in 2019", True),
        ("What did Sam say about dinner?", False),
        ("When is the dentist appointment?", False),
    ],
)
def test_wants_ranking(question: str, ranking: bool) -> None:
    assert enrich(question, NOW, LONDON).wants_ranking is ranking


def test_to_hints() -> None:
    assert to_hints(Enrichment()) == ()
    day = Enrichment((d("2026-11-21"), d("2026-11-21")), "yesterday", False)
    assert to_hints(day) == ('"yesterday" means 2026-11-21 (inclusive); filter searches to it.',)
    both = to_hints(enrich("who did I text most last Thanksgiving", NOW, LONDON))
    assert both[0].startswith('"last Thanksgiving" means 2025-11-24 to 2025-11-30')
    assert "get_contact_stats" in both[1]


def test_a_bare_holiday_name_searches_every_year() -> None:
    # "when did Sam and I plan Thanksgiving?" may mean any year's: no range is guessed
    now = datetime(2026, 11, 22, 12, 0, tzinfo=LA)
    assert enrich("when did Sam and I plan Thanksgiving?", now, LA).date_range is None


@pytest.mark.parametrize(
    ("question", "locale", "start", "end"),
    [
        # labour day: the US/Canadian first Monday of September, the UK's May Day bank holiday,
        # May 1st in Germany (dates from the `holidays` calendars)
        ("last labour day", "en_US", "2026-09-04", "2026-09-10"),
        ("last labor day", "en_CA", "2026-09-04", "2026-09-10"),
        ("labour day 2025", "en_GB", "2025-05-02", "2025-05-08"),
        ("labour day 2025", "de_DE", "2025-04-28", "2025-05-04"),
        # Mother's Day: second Sunday of May (US), Mothering Sunday three weeks before Easter (UK)
        ("mother's day 2025", "en_US", "2025-05-08", "2025-05-14"),
        ("mother's day 2025", "en_GB", "2025-03-27", "2025-04-02"),
        ("mother's day 2025", "fr_FR", "2025-05-22", "2025-05-28"),
        ("father's day 2025", "en_AU", "2025-09-04", "2025-09-10"),
        # Canada's Thanksgiving is in October; a UK user's "Thanksgiving" is the American one
        ("thanksgiving 2025", "en_CA", "2025-10-10", "2025-10-16"),
        ("thanksgiving 2025", "en_GB", "2025-11-24", "2025-11-30"),
        ("independence day 2025", "en_IN", "2025-08-12", "2025-08-18"),
        ("easter 2027", "en_US", "2027-03-25", "2027-03-31"),  # dateutil.easter
    ],
)
def test_holidays_follow_the_locale(question: str, locale: str, start: str, end: str) -> None:
    assert enrich(question, NOW, LONDON, locale=locale).date_range == (d(start), d(end))


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        # the index ends in October 2024: "in January" means January 2024, not an empty 2026
        ("what did we say in January?", "2024-01-01", "2024-01-31"),
        ("plans in November", "2023-11-01", "2023-11-30"),  # Nov 2024 has no messages
        ("in March 2025", "2025-03-01", "2025-03-31"),  # a year written is a year meant
        ("last January", "2026-01-01", "2026-01-31"),  # "last" is relative to today
        ("in the summer", "2024-06-01", "2024-08-31"),  # a season too: the latest one indexed
        ("last summer", "2026-06-01", "2026-08-31"),
        # a holiday at a time word, no year: the latest one the history covers
        ("what did we do around Thanksgiving?", "2023-11-20", "2023-11-26"),
        ("who was there over christmas", "2023-12-22", "2023-12-28"),
        ("around last Thanksgiving", "2025-11-24", "2025-11-30"),
    ],
)
def test_month_without_a_year_means_one_with_messages(question: str, start: str, end: str) -> None:
    coverage = (d("2022-03-02"), d("2024-10-29"))
    got = enrich(question, NOW, LONDON, coverage=coverage)
    assert got.date_range == (d(start), d(end))


def test_locale_parsing_and_unknown_countries() -> None:
    from casper.dates.holidays import country_of, holiday_date

    assert [country_of(x) for x in ("en_GB", "de-DE", "fr_CA.UTF-8", "en", "C")] == [
        "GB", "DE", "CA", "US", "US",
    ]  # fmt: skip
    # a country the holidays package lacks still gets the rules: May 1, second Sunday of May
    assert holiday_date("labour_day", 2025, "en_XX") == d("2025-05-01")
    assert holiday_date("mothers_day", 2025, "en_XX") == d("2025-05-11")


def test_a_bare_holiday_is_no_date_unless_a_time_word_and_the_history_pin_it() -> None:
    coverage = (d("2022-03-02"), d("2024-10-29"))
    # "plan Thanksgiving" is about the holiday, any year's
    assert (
        enrich("when did Sam and I plan Thanksgiving?", NOW, LONDON, coverage=coverage).date_range
        is None
    )
    assert enrich("around Thanksgiving", NOW, LONDON).date_range is None  # no history known
    # a history with no Thanksgiving at all: no date, rather than an empty one
    spring = (d("2024-03-01"), d("2024-05-01"))
    assert enrich("around Thanksgiving", NOW, LONDON, coverage=spring).date_range is None
