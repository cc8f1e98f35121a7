"""Date rules: the phrases a question uses for a time ("last March", "two weeks ago", "easter
2024", "in the summer") resolved to an inclusive local date range, with the words they matched.

Each rule reads the question, `today` and the time zone's key and returns (range, match) or None;
`first_rule` tries them most specific first. Used by `enrich` (questions) and `phrase_span`
(`--since`/`--until`).

Imports: stdlib, casper.dates.holidays, dateparser (lazily). Pure: `today`, the zone and
the locale are passed in.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

from casper.dates.holidays import holiday_date

HOLIDAY_SPAN = 3  # days either side of a holiday: plans and follow-ups sit around the day

_MONTHS = tuple(m.lower() for m in calendar.month_name[1:])
_MONTH_RE = "|".join(_MONTHS)
# "29 Dec 2023", "Jan 5": abbreviations count next to a day number only (a bare "mar" or "jan"
# is a word or a name); without them the year alone was read ("2023": the whole year)
_DAY_MONTH_RE = "|".join([*_MONTHS, "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sept",
                          "sep", "oct", "nov", "dec"])  # fmt: skip
WEEKDAYS = tuple(d.lower() for d in calendar.day_name)
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_NUM_RE = r"\d+|a couple of|couple of|a few|few|several|an?|" + "|".join(list(_NUMBERS)[2:13])
_SOUTHERN = (  # time zones where summer is December to February
    "Australia/",
    "Antarctica/",
    "Pacific/Auckland",
    "America/Argentina/",
    "America/Sao_Paulo",
    "America/Santiago",
    "America/Montevideo",
    "Africa/Johannesburg",
)
_NAME_LIKE_MONTHS = (4, 5, 6, 8)  # april, may, june, august: also names or words
_SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}

_SPECIFIC = re.compile(
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_DAY_MONTH_RE})(?:,?\s+\d{{4}})?\b"
    rf"|\b(?:{_DAY_MONTH_RE})\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b",
    re.I,
)
# two ISO days joined ("between 2023-01-01 and 2023-12-31"): the range a chat follow-up carries
# (casper.agent.followup), not its first day
ISO_RANGE = re.compile(
    r"\b(?:(?:between|from)\s+)?(\d{4}-\d{2}-\d{2})\s*(?:and|to|through|until|till|-|–|—)\s*"
    r"(\d{4}-\d{2}-\d{2})\b",
    re.I,
)
_AGO = re.compile(rf"\b({_NUM_RE})\s+(day|week|month|year)s?\s+ago\b", re.I)
_PAST_N = re.compile(rf"\b(?:last|past)\s+(?:({_NUM_RE})\s+)?(day|week|month|year)s\b", re.I)
_ROLLING = re.compile(r"\bpast\s+(week|month|year)\b", re.I)
_SEASON = re.compile(
    r"\b(?:(last|this|the|in the|over the|during the)\s+)?(spring|summer|fall|autumn|winter)"
    r"(?:\s+(?:of\s+)?((?:19|20)\d{2}))?\b",
    re.I,
)
_MONTH = re.compile(
    rf"\b(?:(in|during|last|this|since|from|of|early|late|mid)\s+)?(?:(?:early|late|mid)[\s-]+)?"
    rf"({_MONTH_RE})(?:,?\s+(?:of\s+)?((?:19|20)\d{{2}}))?\b",
    re.I,
)
_YEAR = re.compile(r"\b(?:(in|during|since|from|of)\s+)?((?:19|20)\d{2})\b", re.I)
_NAMED = re.compile(
    r"\b(the day before yesterday|yesterday|last night|today|tonight|this morning|"
    r"this afternoon|this evening|(?:last|this) (?:week|weekend|month|year))\b",
    re.I,
)
_WEEKDAY = re.compile(rf"\b(?:(on|last|this past|past)\s+)?({'|'.join(WEEKDAYS)})\b", re.I)
LEADING = re.compile(r"^(?:(?:about|on|from|in|at|since|during|of|the)\s+)+", re.I)  # "in June"

Found = tuple[tuple[date, date], re.Match[str]] | None  # (inclusive range, the words) or none


def first_rule(
    q: str, today: date, tz: str, locale: str, coverage: tuple[date, date] | None
) -> Found:
    """The first rule that reads a date phrase in `q`, most specific first; a phrase that
    starts with "since" runs to `today`."""
    rules: tuple[Callable[[str, date, str], Found], ...] = (
        _iso_range,
        functools.partial(holiday_rule, locale=locale, coverage=coverage),
        functools.partial(_season, coverage=coverage),
        _ago,
        _past_n,
        _specific,
        functools.partial(_month, coverage=coverage),
        _year,
        _named,
        _weekday,
    )
    for rule in rules:
        found = rule(q, today, tz)
        if found:
            span, match = found
            if match.group(0).lower().startswith("since "):
                span = (span[0], today)
            return span, match
    return None


def holiday_rule(
    q: str, today: date, tz: str, locale: str = "en_US", coverage: tuple[date, date] | None = None
) -> Found:
    """A named holiday of `locale` and the HOLIDAY_SPAN days either side of it."""
    for pattern, key in _HOLIDAYS:

        def day_of(year: int, key: str = key) -> date:
            return holiday_date(key, year, locale)

        m = re.search(
            rf"\b(?:(last|this)\s+)?(?:{pattern})(?:\s+(?:of\s+)?((?:19|20)\d{{2}}))?", q, re.I
        )
        if m and not (m.group(1) or m.group(2)):
            # A bare "Thanksgiving" could be any year's ("plan Thanksgiving" is about the
            # holiday, not a time): searching all years beats guessing. Only a time word
            # ("around Thanksgiving") with the indexed days known means the latest one covered.
            day = _covered_holiday(day_of, today, coverage) if _AT.search(q[: m.start()]) else None
            if day is not None:
                return (day - timedelta(HOLIDAY_SPAN), day + timedelta(HOLIDAY_SPAN)), m
        if m and (m.group(1) or m.group(2)):
            if m.group(2):
                day = day_of(int(m.group(2)))
            else:
                strict = (m.group(1) or "").lower() == "last"
                day = next(
                    d for y in range(today.year, today.year - 3, -1)
                    if (d := day_of(y)) < today or (d == today and not strict)
                )  # fmt: skip
            return (day - timedelta(HOLIDAY_SPAN), day + timedelta(HOLIDAY_SPAN)), m
    return None


_AT = re.compile(r"\b(?:around|over|during|at|on|near)\s+(?:the\s+)?$", re.I)


def _covered_holiday(
    day_of: Callable[[int], date], today: date, coverage: tuple[date, date] | None
) -> date | None:
    """The latest occurrence (not after `today`) whose days around it overlap the indexed days;
    None without coverage or when the history holds none."""
    if coverage is None:
        return None
    first, last = coverage
    for year in range(min(today.year, last.year + 1), first.year - 2, -1):
        day = day_of(year)
        if (
            day <= today
            and day - timedelta(HOLIDAY_SPAN) <= last
            and (day + timedelta(HOLIDAY_SPAN) >= first)
        ):
            return day
    return None


def _season(q: str, today: date, tz: str, coverage: tuple[date, date] | None = None) -> Found:
    m = next((m for m in _SEASON.finditer(q) if m.group(1) or m.group(3)), None)
    if not m:
        return None
    start_month = _SEASON_START[m.group(2).lower()]
    if tz.startswith(_SOUTHERN):
        start_month = (start_month + 5) % 12 + 1
    if m.group(3):
        year = int(m.group(3)) - (1 if start_month == 12 else 0)
        return _season_span(year, start_month), m
    word = (m.group(1) or "").lower()
    last = word == "last"
    for year in range(today.year, today.year - 3, -1):
        start, end = _season_span(year, start_month)
        if (end < today) if last else (start <= today):
            if coverage and word not in ("last", "this"):  # "in the summer": one with messages
                return _covered_season(year, start_month, coverage), m
            return (start, end), m
    return None


def _covered_season(year: int, start_month: int, coverage: tuple[date, date]) -> tuple[date, date]:
    """The latest season from `year` back that overlaps the indexed days (else `year`'s)."""
    first, last = coverage
    for y in range(year, first.year - 2, -1):
        start, end = _season_span(y, start_month)
        if start <= last and end >= first:
            return start, end
    return _season_span(year, start_month)


def _ago(q: str, today: date, tz: str) -> Found:
    m = _AGO.search(q)
    if not m:
        return None
    n, unit = _number(m.group(1)), m.group(2).lower()
    if unit == "day":
        day = today - timedelta(days=n)
        return (day, day), m
    if unit == "week":
        return _week_of(today - timedelta(weeks=n)), m
    if unit == "month":
        return _month_span(*_add_months(today.year, today.month, -n)), m
    return (date(today.year - n, 1, 1), date(today.year - n, 12, 31)), m


def _past_n(q: str, today: date, tz: str) -> Found:
    m = _PAST_N.search(q) or _ROLLING.search(q)
    if not m:
        return None
    n = _number(m.group(1)) if m.re is _PAST_N and m.group(1) else 1
    unit = m.group(m.lastindex or 1).lower()
    if unit == "year":
        start = date(today.year - n, today.month, min(today.day, 28 if today.month == 2 else 31))
    elif unit == "month":
        year, month = _add_months(today.year, today.month, -n)
        start = date(year, month, min(today.day, calendar.monthrange(year, month)[1]))
    else:
        start = today - timedelta(days=n * (7 if unit == "week" else 1))
    return (start, today), m


def _iso_range(q: str, today: date, tz: str) -> Found:
    m = ISO_RANGE.search(q)
    if not m:
        return None
    try:
        first, last = sorted(date.fromisoformat(m.group(i)) for i in (1, 2))
    except ValueError:  # "2023-02-30": not a day
        return None
    return (first, last), m


def _specific(q: str, today: date, tz: str) -> Found:
    m = _SPECIFIC.search(q)
    if not m:
        return None
    day = _dateparse(m.group(0), datetime.combine(today, datetime.min.time()))
    return ((day, day), m) if day else None


def _month(q: str, today: date, tz: str, coverage: tuple[date, date] | None = None) -> Found:
    for m in _MONTH.finditer(q):
        month = _MONTHS.index(m.group(2).lower()) + 1
        # "may", "june"... are also verbs and names: require a preposition or a year next to it
        if month in _NAME_LIKE_MONTHS and not (m.group(1) or m.group(3)):
            continue
        if m.group(3):
            return _month_span(int(m.group(3)), month), m
        word = (m.group(1) or "").lower()
        before = month < today.month or (month == today.month and word != "last")
        year = today.year if before else today.year - 1
        if coverage and word not in ("last", "this", "since"):
            year = _covered_year(year, month, coverage)
        return _month_span(year, month), m
    return None


def _covered_year(year: int, month: int, coverage: tuple[date, date]) -> int:
    """The latest year ≤ `year` whose `month` overlaps the indexed days (else `year`)."""
    first, last = coverage
    for y in range(year, first.year - 1, -1):
        start, end = _month_span(y, month)
        if start <= last and end >= first:
            return y
    return year


def _year(q: str, today: date, tz: str) -> Found:
    for m in _YEAR.finditer(q):
        year = int(m.group(2))
        if 1990 <= year <= today.year:
            return (date(year, 1, 1), date(year, 12, 31)), m
    return None


def _named(q: str, today: date, tz: str) -> Found:
    m = _NAMED.search(q)
    if not m:
        return None
    phrase = m.group(1).lower()
    if phrase == "the day before yesterday":
        return (today - timedelta(2), today - timedelta(2)), m
    if phrase == "yesterday":
        return (today - timedelta(1), today - timedelta(1)), m
    if phrase == "last night":
        return (today - timedelta(1), today), m
    if not phrase.startswith(("last", "this")):
        return (today, today), m
    last, unit = phrase.startswith("last"), phrase.split()[1]
    if unit == "week":
        monday = today - timedelta(today.weekday())
        return ((monday - timedelta(7), monday - timedelta(1)) if last else (monday, today)), m
    if unit == "weekend":
        saturday = today - timedelta((today.weekday() - 5) % 7)
        if last and today.weekday() >= 5:
            saturday -= timedelta(7)
        return (saturday, saturday + timedelta(1)), m
    if unit == "month":
        if last:
            return _month_span(*_add_months(today.year, today.month, -1)), m
        return (today.replace(day=1), today), m
    if last:
        return (date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)), m
    return (date(today.year, 1, 1), today), m


def _weekday(q: str, today: date, tz: str) -> Found:
    m = _WEEKDAY.search(q)
    if not m:
        return None
    back = (today.weekday() - WEEKDAYS.index(m.group(2).lower())) % 7 or 7
    day = today - timedelta(days=back)
    return (day, day), m


def _dateparse(text: str, base: datetime) -> date | None:
    import dateparser

    settings = {"PREFER_DATES_FROM": "past", "RELATIVE_BASE": base}
    parsed = dateparser.parse(LEADING.sub("", text), languages=["en"], settings=settings)
    return parsed.date() if parsed else None


def _number(word: str | None) -> int:
    if not word:
        return 1
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _month_span(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _season_span(year: int, start_month: int) -> tuple[date, date]:
    end_year, end_month = _add_months(year, start_month, 2)
    return date(year, start_month, 1), _month_span(end_year, end_month)[1]


def _week_of(day: date) -> tuple[date, date]:
    monday = day - timedelta(day.weekday())
    return monday, monday + timedelta(6)


_HOLIDAYS: tuple[tuple[str, str], ...] = (  # phrase → holiday_dates key, most specific first
    (r"thanksgiving", "thanksgiving"),
    (r"christmas eve|xmas eve", "christmas_eve"),
    (r"christmas|xmas", "christmas"),
    (r"new year'?s eve|\bnye\b", "new_years_eve"),
    (r"new year'?s(?: day)?|new year\b", "new_year"),
    (r"halloween", "halloween"),
    (r"valentine'?s(?: day)?", "valentines_day"),
    (r"(?:the )?(?:fourth|4th) of july|july 4(?:th)?\b", "fourth_of_july"),
    (r"independence day", "independence_day"),
    (r"easter", "easter"),
    (r"memorial day", "memorial_day"),
    (r"labou?r day|may day", "labour_day"),
    (r"mother'?s day|mothering sunday", "mothers_day"),
    (r"father'?s day", "fathers_day"),
)
