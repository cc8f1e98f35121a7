"""`--since`/`--until` and date phrases → local days → UTC seconds: the one range function.

An ISO date or a phrase ("last March", "2 weeks ago", "easter 2024") names local days; a range
is checked once (an end before its start is an error) and turned into UTC seconds here.
Imports: stdlib, casper.errors; casper.dates.phrases and dateparser inside `parse_date` (slow to
import; `casper mcp` loads this module and parses no date at start).
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, tzinfo

from casper.errors import CasperError

_AGO = re.compile(r"\bago\b", re.I)  # "2 weeks ago" is a point in time, not a period


def parse_span(
    text: str, tz: tzinfo, now: datetime | None = None, *, locale: str = "en_US"
) -> tuple[date, date]:
    """An ISO date or a phrase → the local days it names, first and last.

    A period ("last March", "March", "last summer", "easter 2024", "last week", "2023") is
    resolved by the same rules as questions (casper.dates.phrases), so `--since` starts on its
    first day and `--until` ends on its last; "2 weeks ago" and other points go to dateparser.
    """
    text = text.strip()
    try:
        day = date.fromisoformat(text)
        return day, day
    except ValueError:
        pass
    now = now.astimezone(tz) if now is not None and now.tzinfo else now or datetime.now(tz)
    if not _AGO.search(text):
        from casper.dates.phrases import phrase_span

        span = phrase_span(text, now.date(), tz, locale=locale)  # type: ignore[arg-type]
        if span:
            return span
    import dateparser

    parsed = dateparser.parse(
        text,
        settings={
            "PREFER_DATES_FROM": "past",
            "RELATIVE_BASE": now.replace(tzinfo=None),
            "PREFER_DAY_OF_MONTH": "first",
        },
    )
    if parsed is None:
        raise CasperError(
            f"cannot read the date {text!r}",
            hint='use YYYY-MM-DD or a phrase like "last March", "2 weeks ago", "last summer"',
        )
    return parsed.date(), parsed.date()


def parse_day(text: str, tz: tzinfo, now: datetime | None = None) -> date:
    """An ISO date or a natural phrase ("last March", "2 weeks ago") → its first local day."""
    return parse_span(text, tz, now)[0]


def days_to_utc(
    first: date | None, last: date | None, tz: tzinfo
) -> tuple[float | None, float | None]:
    """Local calendar days → UTC seconds: the start of `first`, the end of the whole `last` day.

    The one place a day range becomes timestamps (CLI options, the agent's date hints).
    """
    start = None if first is None else _start_of(first, tz)
    end = None if last is None else _start_of(last, tz, after=True)
    return start, end


def _start_of(day: date, tz: tzinfo, *, after: bool = False) -> float:
    """UTC seconds at the start of `day` (of the day after it); a day at the very edge of the
    calendar (9999-12-31, 0001-01-01) is an error that names it, not an OverflowError."""
    try:
        return datetime.combine(day + timedelta(days=after), time.min, tz).timestamp()
    except (OverflowError, ValueError, OSError):
        raise CasperError(
            f"the date {day.isoformat()} is out of range",
            hint="use a date up to 9999-12-30, or leave it out for a range with no end",
        ) from None


def span_days(
    since: str | None,
    until: str | None,
    tz: tzinfo,
    now: datetime | None = None,
    *,
    locale: str = "en_US",
) -> tuple[date | None, date | None]:
    """The first day `since` names and the last day `until` names (None where not given); a
    range that ends before it starts is an error."""
    first = parse_span(since, tz, now, locale=locale)[0] if since else None
    last = parse_span(until, tz, now, locale=locale)[1] if until else None
    if first is not None and last is not None and first > last:
        raise CasperError(
            f"--since {_shown(since, first)} is after --until {_shown(until, last)}",
            hint="swap the two dates, or drop one of them",
        )
    return first, last


def date_range(
    since: str | None,
    until: str | None,
    tz: tzinfo,
    now: datetime | None = None,
    *,
    locale: str = "en_US",
) -> tuple[float | None, float | None]:
    """`--since`/`--until` as UTC seconds: the start of the first day of what --since names,
    the end of the last day of what --until names (`span_days`, then `days_to_utc`)."""
    return days_to_utc(*span_days(since, until, tz, now, locale=locale), tz)


def beyond(span: tuple[date | None, date | None], covered: tuple[date, date] | None) -> bool:
    """True when the days of `span` (either end may be open) lie wholly before or after the
    `covered` days (the history's first and last): "last March" on a history that ended
    earlier names a time with no messages at all, which every surface says."""
    first, last = span
    if covered is None or (first is None and last is None):
        return False
    return (first is not None and first > covered[1]) or (last is not None and last < covered[0])


def _shown(text: str | None, day: date) -> str:
    """The date as typed, with the day it was read as when that is not plain to see."""
    typed = (text or "").strip()
    return day.isoformat() if typed == day.isoformat() else f"{typed!r} ({day.isoformat()})"
