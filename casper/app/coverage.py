"""What a search's dates had against what the history covers, said in one line.

A relative date ("last March") is read against today's clock; on a history that ends before
today it can name a time with no messages at all. Rather than an empty answer with no word, or
hits from other dates with no word, search says the range it used and what the history covers
(as `ask --no-llm` does): "nothing between 2026-03-01 and 2026-03-31; your messages run from
2022-03-02 to 2024-10-29". `stats --since` and the MCP tools' dates say it the same way
(`outside`).

Imports: stdlib, casper.dates.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, tzinfo

from casper.dates.ranges import beyond, days_to_utc
from casper.dates.zones import iso


def coverage_days(first: float | None, last: float | None, tz: tzinfo) -> tuple[str, str] | None:
    """The store's coverage (UTC seconds) as local ISO days; None when nothing is indexed."""
    if first is None or last is None:
        return None
    return (iso(first, tz) or "")[:10], (iso(last, tz) or "")[:10]


def span_text(first: date | None, last: date | None) -> str:
    """`between 2026-03-01 and 2026-03-31`, `on 2026-03-01`, `since …`, `until …`."""
    if first is not None and last is not None:
        if first == last:
            return f"on {first}"
        return f"between {first} and {last}"
    if first is not None:
        return f"since {first}"
    return f"until {last}"


def runs_from(coverage: tuple[str, str] | None) -> str:
    if coverage is None:
        return "nothing is indexed yet"
    return f"your messages run from {coverage[0]} to {coverage[1]}"


def nothing_then(
    span: tuple[date | None, date | None],
    starts: Sequence[float],
    coverage: tuple[str, str] | None,
    tz: tzinfo,
) -> str | None:
    """For dates a question named (they rank, they don't filter): when none of the hits (their
    start times) falls inside them, the line that says so; None when some do."""
    lo, hi = days_to_utc(*span, tz)
    inside = [t for t in starts if (lo is None or t >= lo) and (hi is None or t < hi)]
    if inside:
        return None
    others = "; these are from other dates" if starts else ""
    return f"nothing {span_text(*span)} ({runs_from(coverage)}){others}"


def outside(span: tuple[date | None, date | None], coverage: tuple[str, str] | None) -> str | None:
    """`no messages between 2026-03-01 and 2026-03-31; your messages run from 2022-03-02 to
    2024-10-29` when the days lie wholly before or after the history (`stats --since`, an MCP
    call's start_date/end_date); None when they meet it or name no days."""
    covered = coverage and (date.fromisoformat(coverage[0]), date.fromisoformat(coverage[1]))
    if not beyond(span, covered or None):
        return None
    return f"no messages {span_text(*span)}; {runs_from(coverage)}"
