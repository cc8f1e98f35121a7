"""Question enrichment: the dates a question names (casper.dates.phrases) and whether it asks
for a ranking, turned into hints for the model.

Imports: stdlib, casper.dates.phrases. Pure: `now`, `tz`, the locale and the indexed range are
passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from casper.dates.phrases import find_dates

_RANKING = re.compile(
    r"\b(?:who|whom|most|least|how often|how many|how much|top|rank(?:ed|ing)?|busiest)\b", re.I
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
    """The first date phrase in `question` (see `casper.dates.phrases.find_dates`) and whether
    it asks for a ranking."""
    ranking = bool(_RANKING.search(question))
    found = find_dates(question, now, tz, locale=locale, coverage=coverage)
    if found:
        return Enrichment(found[0], found[1], ranking)
    return Enrichment(None, None, ranking)


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
