"""Checks on what a user types into `search` and `ask`, before any store or model is opened.

Each failure is a CasperError with a hint, so the CLI prints `error:` + `hint:` and exits 1.
Imports: casper.errors, casper.timeutil (dateparser lazily).
"""

from __future__ import annotations

from datetime import date, datetime, tzinfo

from casper.errors import CasperError
from casper.timeutil import days_to_utc, span_days


def require_text(text: str, *, what: str, example: str) -> None:
    """An empty or blank query or question is an error, not a search for everything."""
    if not text.strip():
        raise CasperError(f"the {what} is empty", hint=f"say what you are looking for: {example}")


def require_positive_k(k: int | None) -> None:
    """`-k` counts hits: zero or fewer would silently print nothing."""
    if k is not None and k < 1:
        raise CasperError(f"-k must be at least 1 (got {k})", hint="e.g. -k 10 for ten hits")


def date_range(
    since: str | None,
    until: str | None,
    tz: tzinfo,
    now: datetime | None = None,
    *,
    locale: str = "en_US",
) -> tuple[float | None, float | None]:
    """`--since`/`--until` as UTC seconds (as `timeutil.day_bounds`: the first day of what
    --since names, the last of what --until names); a range that ends before it starts is an
    error."""
    first, last = span_days(since, until, tz, now, locale=locale)
    if first is not None and last is not None and first > last:
        raise CasperError(
            f"--since {_shown(since, first)} is after --until {_shown(until, last)}",
            hint="swap the two dates, or drop one of them",
        )
    return days_to_utc(first, last, tz)


def _shown(text: str | None, day: date) -> str:
    """The date as typed, with the day it was read as when that is not plain to see."""
    typed = (text or "").strip()
    return day.isoformat() if typed == day.isoformat() else f"{typed!r} ({day.isoformat()})"
