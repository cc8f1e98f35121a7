"""PURE: what `ask --since/--until/--person/--chat` name, and the question read inside them.

The filters are what the person asked for, so what the question says never widens, moves or
replaces them. The question's dates are used when they lie inside the filters' days ("in
March" with `--since 2023-01-01` narrows the answer to March); otherwise the filters' days are,
and the answer says which it used. A person the question names who is not the one `--person`
names is not used either, said the same way. The stats route, the fact route, the prefetch and
the search-only answer all read the question through this, so they keep to the same days and
person.

Imports: stdlib, casper.agent.enrich.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date

from casper.agent.enrich import Enrichment

Days = tuple[date | None, date | None]  # inclusive local days; None: open on that side


@dataclass(frozen=True, slots=True)
class Filters:
    """The filters of one `ask`, resolved: local days, a person's and a chat's ids, and how
    each was written (for the notes that say a filter was used)."""

    days: Days = (None, None)
    person_id: str | None = None
    chat_id: int | None = None
    said_days: str = ""  # "--since 2024-01-01", "--since 2024-01-01 --until 2024-03-31"
    said_person: str = ""  # "--person Mom"
    chat_name: str = ""

    @property
    def dated(self) -> bool:
        return self.days != (None, None)


NO_FILTERS = Filters()


@dataclass(frozen=True, slots=True)
class Scoped:
    """The question read inside the filters: its dates only when inside them, the days and
    the person the answer is about, and what the filters overrode (one sentence each)."""

    found: Enrichment
    days: Days | None  # the question's days, else the filters', else None (all of history)
    person: str | None
    chat_id: int | None = None
    chat_name: str = ""
    notes: tuple[str, ...] = ()


def within(found: Enrichment, named: str | None, filters: Filters, names: dict[str, str]) -> Scoped:
    """`found` (the question's dates) and `named` (the person it names, if one) kept inside
    `filters`; `names` are the display names, for the notes."""
    notes: list[str] = []
    days: Days | None = filters.days if filters.dated else None
    if found.date_range is not None and filters.dated:
        if _inside(found.date_range, filters.days):
            days = found.date_range
        else:
            start, end = found.date_range
            notes.append(
                f"the question says {found.phrase!r} ({start} to {end}), outside "
                f"{filters.said_days}: this answer keeps to {filters.said_days}"
            )
            found = dataclasses.replace(found, date_range=None, phrase=None)
    elif found.date_range is not None:
        days = found.date_range
    person = named
    if filters.person_id is not None:
        if named is not None and named != filters.person_id:
            notes.append(
                f"the question names {names.get(named, named)}: this answer keeps to "
                f"{filters.said_person}"
            )
        person = filters.person_id
    return Scoped(found, days, person, filters.chat_id, filters.chat_name, tuple(notes))


def span_words(days: Days | None) -> str:
    """The days as an answer says them: "between 2023-01-01 and 2023-12-31", "since …"."""
    if days is None or days == (None, None):
        return "in all your messages"
    start, end = days
    if start is not None and end is not None:
        return f"between {start} and {end}"
    return f"since {start}" if start is not None else f"until {end}"


def _inside(span: tuple[date, date], days: Days) -> bool:
    start, end = days
    return (start is None or span[0] >= start) and (end is None or span[1] <= end)
