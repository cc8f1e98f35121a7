"""The answer without a model: what `ask --no-llm` says, and what an answer falls back to when
the model's is not used — the stats, a fact the store holds (citing its message), or the
messages search found, with the same ranking and the same number of hits every time.

Imports: casper.agent.{fact_route,prefetch,quoting,scope,stats_route}, casper.dates,
casper.store, casper.protocols (no backends: search arrives as an argument).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from casper.agent.fact_route import fact_answer
from casper.agent.prefetch import coverage_sentence, outside_history
from casper.agent.quoting import message_line
from casper.agent.scope import Scoped
from casper.agent.stats_route import stats_answer
from casper.dates.ranges import days_to_utc
from casper.dates.zones import iso
from casper.protocols import Hit
from casper.store.db import Store
from casper.vocab import Grounding

SEARCH_HITS = 3  # hits a search-only answer shows
CITED_MAX = 8  # messages it cites, at most


@dataclass(frozen=True, slots=True)
class Plain:
    """An answer without a model: its text, the guids it cites, what it rests on."""

    text: str
    guids: tuple[str, ...]
    grounding: Grounding  # stats, search_only or nothing_found


def plain_answer(
    question: str,
    search: Callable[..., Sequence[Hit]],
    scoped: Scoped,
    store: Store,
    tz: ZoneInfo,
    me_names: Sequence[str] = (),
) -> Plain:
    """The stats' answer, a fact the store holds, or search alone."""
    return routed(question, scoped, store, tz, me_names) or searched(
        question, search, scoped, store, tz
    )


def routed(
    question: str, scoped: Scoped, store: Store, tz: ZoneInfo, me_names: Sequence[str] = ()
) -> Plain | None:
    """The answer of a question the stats or the store answer outright, else None."""
    figures = stats_answer(question, scoped, store, tz)
    if figures is not None:
        return Plain(figures, (), "stats")
    facts = fact_answer(question, scoped, store, tz, me_names)
    if facts is not None:  # a date or a card the store holds, citing its message
        return Plain(facts[0], tuple(facts[1]), "stats")
    return None


def searched(
    question: str,
    search: Callable[..., Sequence[Hit]],
    scoped: Scoped,
    store: Store,
    tz: ZoneInfo,
) -> Plain:
    """The best-matching messages, cited; or a clear 'nothing found' with the coverage."""
    dates = scoped.found.date_range
    start, end = days_to_utc(*dates, tz) if dates else (None, None)
    hits = list(search(question, since=start, until=end, k=SEARCH_HITS))
    lines = ["These messages match best:"]
    if not hits and dates:
        hits = list(search(question, k=SEARCH_HITS))
        covered = outside_history(store, tz, dates)  # the history's span, if beyond
        lines = [
            f"Nothing between {dates[0]} and {dates[1]}"
            + (f" ({covered[:-1].replace('Your', 'your')})" if covered else "")
            + "; the closest matches from other dates:"
        ]
    if not hits:
        said = f"I found nothing about that in your messages. {coverage_sentence(store, tz)}"
        return Plain(said, (), "nothing_found")
    guids: list[str] = []
    for hit in hits:
        lines.append(f"{hit.chat}, {(iso(hit.start, tz) or '')[:10]}:")
        for m in hit.messages:
            if m.guid not in guids:
                lines.append(f"  {message_line(m.rowid, '', m.sender, m.text)}")
                guids.append(m.guid)
    return Plain("\n".join(lines), tuple(guids[:CITED_MAX]), "search_only")
