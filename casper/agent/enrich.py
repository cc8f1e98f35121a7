"""Question enrichment: resolve date phrases to local date ranges and spot ranking questions.

The date rules themselves are `date_rules`; this module picks the first that matches, falls back
to dateparser's search for other phrases, and turns the result into hints for the model.

Imports: stdlib, casper.agent.date_rules, dateparser (lazily). Pure: `now`, `tz`, the locale and
the indexed range are passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from casper.agent.date_rules import HOLIDAY_SPAN, LEADING, WEEKDAYS, first_rule, holiday_rule

_RANKING = re.compile(
    r"\b(?:who|whom|most|least|how often|how many|how much|top|rank(?:ed|ing)?|busiest)\b", re.I
)
_GENERIC_OK = re.compile(  # months alone are names too ("June"): _month handles them
    rf"\d|\bago\b|yesterday|today|tonight|{'|'.join(WEEKDAYS)}", re.I
)


@dataclass(frozen=True, slots=True)
class Enrichment:
    """What a question implies beyond its words: an inclusive local date range, a ranking intent."""

    date_range: tuple[date, date] | None = None
    phrase: str | None = None  # the words the range came from, as written
    wants_ranking: bool = False


def enrich(
    question: str,
    now: datetime,
    tz: ZoneInfo,
    *,
    locale: str = "en_US",
    coverage: tuple[date, date] | None = None,
) -> Enrichment:
    """Resolve the first date phrase in `question` relative to `now` in `tz`.

    `locale` (Config.locale) decides which country's holidays ("labour day", Mother's Day)
    are meant; `coverage` (first and last indexed day) lets a month named without a year
    ("in January") mean the latest such month that has messages, not an empty one.
    """
    local = now.astimezone(tz) if now.tzinfo else now
    today = local.date()
    ranking = bool(_RANKING.search(question))
    found = first_rule(question, today, tz.key, locale, coverage)
    if found:
        span, match = found
        return Enrichment(span, match.group(0).strip(), ranking)
    generic = _generic(question, local.replace(tzinfo=None))
    if generic:
        day, phrase = generic
        return Enrichment((day, day), phrase, ranking)
    return Enrichment(None, None, ranking)


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


def to_hints(enrichment: Enrichment) -> tuple[str, ...]:
    """Short notes for the model about what the question's dates and intent resolve to."""
    hints: list[str] = []
    if enrichment.date_range:
        start, end = enrichment.date_range
        when = start.isoformat() if start == end else f"{start.isoformat()} to {end.isoformat()}"
        hints.append(f'"{enrichment.phrase}" means {when} (inclusive); filter searches to it.')
    if enrichment.wants_ranking:
        hints.append(
            "This asks for counts or a ranking: list_contacts, get_contact_stats and "
            "get_message_volume_by_period answer that better than search."
        )
    return tuple(hints)


def _generic(q: str, base: datetime) -> tuple[date, str] | None:
    from dateparser.search import search_dates

    settings = {"PREFER_DATES_FROM": "past", "RELATIVE_BASE": base}
    for phrase, when in search_dates(q, languages=["en"], settings=settings) or ():
        # search_dates reads words like "we" or "sat" as dates; keep unmistakable phrases only
        if _GENERIC_OK.search(phrase) and when.date() <= base.date():
            return when.date(), LEADING.sub("", phrase.strip())
    return None
