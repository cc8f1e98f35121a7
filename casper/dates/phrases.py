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
_NEVER_A_THING = frozenset({"today", "yesterday", "tonight", "tomorrow", "now", "weekend"})
_NEXT_WORD = re.compile(r" ([a-z][a-z'’-]*)\b")  # the next word, lowercase, after one space
# what follows a day's name when it says when: the time of day, a word of the sentence
_NOT_A_NOUN = frozenset(
    """morning mornings afternoon afternoons evening evenings night nights noon midnight
    week weekend day time eve break
    a an the at on in to for with from of by about around after before until till during
    and or but so then too again ago if when while as than this that these those next last
    i me my we us our you your he him his she her they them their it its
    is was were are be been am did do does done had has have will would could should can
    might must may shall not no""".split()  # noqa: SIM905 - a word list reads better as text
)


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
    text = question
    for _ in range(4):  # each round masks one name that turned out to name a thing
        found = first_rule(text, local.date(), tz.key, locale, coverage)
        if found:
            span, match = found
            if names_a_thing(text, match.start(), match.end()):
                text = _masked(text, match.start(), match.end())
                continue
            return span, match.group(0).strip()
        generic = _generic(text, local.replace(tzinfo=None))
        if generic:
            day, phrase = generic
            at = text.lower().find(phrase.lower())
            if at >= 0 and names_a_thing(text, at, at + len(phrase)):
                text = _masked(text, at, at + len(phrase))
                continue
            return (day, day), phrase
        return None
    return None


def names_a_thing(text: str, start: int, end: int) -> bool:
    """True when the date phrase `text[start:end]` is a bare weekday, month or holiday name
    right before a noun: "Sunday dinner", "Friday drinks", "Easter brunch", "the January
    sales" name a thing, and the word is one to search, not a day ("on Sunday", "Friday
    night", "last Easter", "Sunday at 5" stay dates)."""
    phrase = LEADING.sub("", text[start:end].strip())
    if not phrase.isalpha() or phrase.lower() in _NEVER_A_THING:
        return False
    after = _NEXT_WORD.match(text, end)
    return after is not None and after.group(1) not in _NOT_A_NOUN


def _masked(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


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
