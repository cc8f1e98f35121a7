"""Dates in words: the first date phrase of a question, or a whole phrase (`--since`), as the
inclusive local days it names.

The rules themselves are `casper.dates.rules`; this module picks the first that matches and
falls back to dateparser's search for other phrases. Pure: `now`, `tz`, the locale and the
indexed range are passed in.
Imports: stdlib, casper.dates (rules, mentions), dateparser (lazily).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from casper.dates.mentions import is_duration
from casper.dates.rules import HOLIDAY_SPAN, LEADING, WEEKDAYS, first_rule, holiday_rule

_GENERIC_OK = re.compile(  # months alone are names too ("June"): _month handles them
    rf"\d|\bago\b|yesterday|today|tonight|{'|'.join(WEEKDAYS)}", re.I
)

Span = tuple[date, date]


def find_dates(
    question: str,
    now: datetime,
    tz: ZoneInfo,
    *,
    locale: str = "en_US",
    coverage: Span | None = None,
) -> tuple[Span, str] | None:
    """The first date phrase in `question`, resolved relative to `now` in `tz`: (first and last
    local day, the words as written), or None.

    `locale` (Config.locale) decides which country's holidays ("labour day", Mother's Day)
    are meant; `coverage` (first and last indexed day) lets a month named without a year
    ("in January") mean the latest such month that has messages, not an empty one.
    """
    local = now.astimezone(tz) if now.tzinfo else now
    found = first_rule(question, local.date(), tz.key, locale, coverage)
    if found:
        span, match = found
        return span, match.group(0).strip()
    generic = _generic(question, local.replace(tzinfo=None))
    if generic:
        day, phrase = generic
        return (day, day), phrase
    return None


def phrase_span(
    text: str, today: date, tz: ZoneInfo, *, locale: str = "en_US"
) -> tuple[date, date] | None:
    """The local date range a whole phrase names ("last March", "easter 2024", "last summer"),
    or None when it is not only a date phrase: `--since`/`--until` use its first/last day."""
    text = LEADING.sub("", text.strip())
    holiday = holiday_rule(text, today, tz.key, locale)
    if holiday and _whole(holiday[1], text):  # the day itself, not the days around it
        day = holiday[0][0] + timedelta(HOLIDAY_SPAN)
        return day, day
    found = first_rule(text, today, tz.key, locale, None)
    return found[0] if found and _whole(found[1], text) else None


def _whole(match: re.Match[str], text: str) -> bool:
    return match.group(0).strip().lower() == text.lower()


def _generic(q: str, base: datetime) -> tuple[date, str] | None:
    from dateparser.search import search_dates

    settings = {"PREFER_DATES_FROM": "past", "RELATIVE_BASE": base}
    for phrase, when in search_dates(q, languages=["en"], settings=settings) or ():
        # search_dates reads words like "we" or "sat" as dates, and a length of time ("for 3
        # days", "a 10 minute walk") as that long ago: keep unmistakable dates only
        if is_duration(phrase):
            continue
        if _GENERIC_OK.search(phrase) and when.date() <= base.date():
            return when.date(), LEADING.sub("", phrase.strip())
    return None
