"""What the agent is told before its first model call: the prefetch search and grounding facts.

Imports: casper.agent.{grounding,loop,scope}, casper.protocols, casper.store, casper.dates.zones
(no backends). A small model often answers without calling a tool; running the retrieval the
question implies first (its words, its dates, the person it names) gives every answer messages
to cite.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from zoneinfo import ZoneInfo

from casper.agent.grounding import needs_messages
from casper.agent.loop import Grounding
from casper.agent.scope import Scoped
from casper.dates.ranges import beyond
from casper.dates.zones import iso
from casper.protocols import ToolCall
from casper.store.db import Store

PREFETCH_LIMIT = 3  # hits; the core caps the text at Limits.prefetch_chars
_WORD = re.compile(r"\w+")
RANKING_NOTE = "Most messages exchanged"  # build_hints' contact ranking line (stats evidence)
STATS_NOTE = "From the stats:"  # the stats' answer to the question, shown to the model


def coverage_sentence(store: Store, tz: ZoneInfo) -> str:
    """ "Your messages here run from 2023-12-01 to 2024-02-28." (or that nothing is indexed)."""
    first, last = store.coverage()
    if first is None:
        return "Nothing is indexed yet."
    start, end = (iso(first, tz) or "")[:10], (iso(last, tz) or "")[:10]
    return f"Your messages here run from {start} to {end}."


def outside_history(store: Store, tz: ZoneInfo, span: tuple[date, date] | None) -> str | None:
    """`coverage_sentence` when the days a question named lie wholly before or after the
    history ("last year" on one that ended earlier): zeros then are no finding, and the answer
    says what the history covers instead; None otherwise."""
    first, last = store.coverage()
    if span is None or first is None or last is None:
        return None
    covered = (datetime.fromtimestamp(first, tz).date(), datetime.fromtimestamp(last, tz).date())
    return coverage_sentence(store, tz) if beyond(span, covered) else None


def named_person(question: str, store: Store, me_names: Sequence[str] = ()) -> str | None:
    """The one contact the question names, if exactly one: by the first word of their name or
    any name on their card (nickname, last name, organization, full name), as whole words.

    A longer name wins over a shorter one inside it ("Sam Rivera" over another contact's
    "Sam"); the owner's own names (`me_names`) are never a contact.
    """
    text = f" {' '.join(_WORD.findall(question.lower()))} "
    mine = {" ".join(_WORD.findall(n.lower())) for n in me_names}
    hits: list[tuple[str, str]] = []
    for p in store.people():
        forms = [p.name.split()[0], *p.name_forms()] if p.name else list(p.name_forms())
        for form in {" ".join(_WORD.findall(f.lower())) for f in forms}:
            if len(form) >= 3 and form not in mine and f" {form} " in text:
                hits.append((form, p.id))
    found = {
        pid
        for form, pid in hits
        if not any(other != pid and f" {form} " in f" {longer} " for longer, other in hits)
    }
    return found.pop() if len(found) == 1 else None


def prefetch_call(question: str, scoped: Scoped) -> ToolCall | None:
    """The search the question implies inside the request's filters (its dates there, the
    person it is about), or None when it needs no messages."""
    if not needs_messages(question):
        return None
    args: dict[str, str | int] = {"query": question.strip(), "limit": PREFETCH_LIMIT}
    found = scoped.found
    if found.date_range:
        args["start_date"] = found.date_range[0].isoformat()
        args["end_date"] = found.date_range[1].isoformat()
    if scoped.person:
        args["person"] = scoped.person
    return ToolCall("search_messages", args)


def grounding_facts(
    question: str, hints: Sequence[str], coverage: str, answered: bool = False
) -> Grounding:
    """Exemption, which hints are stats evidence, and the coverage for abstentions.
    `answered`: the stats already answer it (their figures are in `hints`), so the model only
    words them — no tools and no grounding guard: its figures are held to the stats instead
    (casper.agent.figures)."""
    figures = tuple(h for h in hints if h.startswith((RANKING_NOTE, STATS_NOTE)))
    exempt = answered or not needs_messages(question)
    return Grounding(exempt=exempt, figures=figures, coverage=coverage)
