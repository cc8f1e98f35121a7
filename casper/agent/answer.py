"""One question end to end: enrich → agent loop (or retrieval-only) → the `ask --json` shape.

Imports: casper.agent, casper.store, casper.store.stats_query, casper.protocols. No backends: the
engine and search function are passed in by the CLI.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, TypedDict
from zoneinfo import ZoneInfo

from casper.agent import core, prompts
from casper.agent.enrich import Enrichment, enrich, to_hints
from casper.agent.fact_route import fact_answer
from casper.agent.loop import Event, Usage, UsageJson, run_agent
from casper.agent.prefetch import (
    coverage_sentence,
    grounding_facts,
    outside_history,
    prefetch_call,
)
from casper.agent.stats_route import stats_answer
from casper.agent.tools import Toolbox
from casper.dates.ranges import days_to_utc
from casper.dates.zones import iso
from casper.protocols import Engine, Hit
from casper.store.db import Store
from casper.store.stats_query import top_people


class Citation(TypedDict):
    """A cited message of `ask --json`."""

    guid: str
    rowid: int
    ts: str | None
    sender: str
    text: str


class ToolCallJson(TypedDict):
    name: str
    arguments: dict[str, Any]
    ok: bool


class Tokens(TypedDict):
    prompt: int
    completion: int


class Answer(TypedDict):
    """`ask --json` as the agent makes it (Asked.to_dict; casper.app.documents.AskDoc adds
    what the request ran)."""

    answer: str
    citations: list[Citation]
    iterations: int
    tool_calls: list[ToolCallJson]
    guards: list[str]
    model: str | None
    tokens: Tokens
    elapsed_s: float
    load_s: float
    usage: UsageJson
    grounding: str
    invalid_citations: int


@dataclass(frozen=True, slots=True)
class Asked:
    """Everything `casper ask` prints."""

    answer: str
    citations: list[Citation]
    iterations: int
    tool_calls: list[ToolCallJson]
    guards: list[str]
    model: str | None
    elapsed_s: float  # wall time of the whole answer; the CLI adds the model load (load_s)
    usage: Usage = Usage()
    grounding: str = "cited"  # cited | stats | abstained | exempt (see agent.core)
    invalid_citations: int = 0
    load_s: float = 0.0  # loading the model, when this answer had to

    def to_dict(self) -> Answer:
        return {
            "answer": self.answer,
            "citations": self.citations,
            "iterations": self.iterations,
            "tool_calls": self.tool_calls,
            "guards": self.guards,
            "model": self.model,
            # the contract's `tokens` (../shared/design/CLI.md): the usage's counts
            "tokens": {
                "prompt": self.usage.prompt_tokens,
                "completion": self.usage.completion_tokens,
            },
            "elapsed_s": self.elapsed_s,
            "load_s": self.load_s,
            "usage": self.usage.to_dict(),
            "grounding": self.grounding,
            "invalid_citations": self.invalid_citations,
        }


def coverage_note(store: Store, tz: ZoneInfo) -> str | None:
    first, last = store.coverage()
    if first is None:
        return None
    return f"The user's messages cover {(iso(first, tz) or '')[:7]} → {(iso(last, tz) or '')[:7]}."


def covered_days(store: Store, tz: ZoneInfo) -> tuple[date, date] | None:
    """The first and last local day with messages: a month named without a year means one
    inside this range."""
    first, last = store.coverage()
    if first is None or last is None:
        return None
    return datetime.fromtimestamp(first, tz).date(), datetime.fromtimestamp(last, tz).date()


def build_hints(
    question: str,
    store: Store,
    tz: ZoneInfo,
    now: datetime,
    history: Sequence[str] = (),
    *,
    locale: str = "en_US",
) -> tuple[Enrichment, tuple[str, ...]]:
    """Dates resolved by dateparser, coverage, and top contacts for ranking questions."""
    found = enrich(question, now, tz, locale=locale, coverage=covered_days(store, tz))
    hints = list(history) + list(to_hints(found))
    note = coverage_note(store, tz)
    if note:
        hints.append(note)
    if found.wants_ranking:
        start, end = days_to_utc(*found.date_range, tz) if found.date_range else (None, None)
        names = store.names()
        top = top_people(store, tz, start, end, 5)
        if top:
            listed = ", ".join(f"{names.get(p, p)} ({n} messages)" for p, n in top)
            hints.append(f"Most messages exchanged{' in that range' if start else ''}: {listed}.")
    return found, tuple(hints)


def citations_for(store: Store, guids: Sequence[str], tz: ZoneInfo) -> list[Citation]:
    names = store.names()
    out: list[Citation] = []
    for guid in guids:
        m = store.message(guid)
        if m is not None:
            out.append(
                {
                    "guid": m.guid,
                    "rowid": m.rowid,
                    "ts": iso(m.ts, tz),
                    "sender": names.get(m.sender, m.sender),
                    "text": m.text,
                }
            )
    return out


def retrieval_only(
    question: str,
    search: Callable[..., Sequence[Hit]],
    found: Enrichment,
    store: Store,
    tz: ZoneInfo,
) -> tuple[str, list[str]]:
    """No model: the best-matching messages, cited; or a clear 'nothing found' with coverage."""
    start, end = days_to_utc(*found.date_range, tz) if found.date_range else (None, None)
    hits = list(search(question, since=start, until=end, k=3))
    lines = ["These messages match best:"]
    if not hits and found.date_range:
        hits = list(search(question, k=3))
        covered = outside_history(store, tz, found.date_range)  # the history's span, if beyond
        lines = [
            f"Nothing between {found.date_range[0]} and {found.date_range[1]}"
            + (f" ({covered[:-1].replace('Your', 'your')})" if covered else "")
            + "; the closest matches from other dates:"
        ]
    if not hits:
        return f"I found nothing about that in your messages. {coverage_sentence(store, tz)}", []
    guids: list[str] = []
    for hit in hits:
        lines.append(f"{hit.chat}, {(iso(hit.start, tz) or '')[:10]}:")
        for m in hit.messages:
            if m.guid not in guids:
                lines.append(f"  {prompts.cite_tag(m.rowid)} {m.sender}: {m.text}")
                guids.append(m.guid)
    return "\n".join(lines), guids[:8]


def answer_question(
    question: str,
    *,
    store: Store,
    search: Callable[..., Sequence[Hit]],
    engine: Engine | None,
    tz: ZoneInfo,
    limits: core.Limits,
    now: datetime | None = None,
    history: Sequence[str] = (),
    on_event: Callable[[Event], None] = lambda e: None,
    locale: str = "en_US",
    me_names: Sequence[str] = (),
) -> Asked:
    """Run one question; with no engine, answer from retrieval alone (guard model_unavailable).

    `me_names` are the owner's own names: never a contact to filter by, and the model is told
    that they mean the user."""
    started = time.perf_counter()
    now = now or datetime.now(tz)
    found, hints = build_hints(question, store, tz, now, history, locale=locale)
    if engine is None:
        figures = stats_answer(question, found, store, tz, me_names)
        facts = fact_answer(question, found, store, tz, me_names) if figures is None else None
        if figures is not None:
            text, guids = figures, list[str]()
        elif facts is not None:  # a date or a card the store holds, citing its message
            text, guids = facts
        else:
            text, guids = retrieval_only(question, search, found, store, tz)
        return Asked(
            text,
            citations_for(store, guids, tz),
            0,
            [],
            ["model_unavailable"],
            None,
            round(time.perf_counter() - started, 3),
            grounding="cited" if guids else ("stats" if figures else "abstained"),
        )
    toolbox = Toolbox(store, search, tz, now=now, me_names=me_names)
    system = prompts.system_prompt(now.date(), getattr(tz, "key", str(tz)), owner=me_names)
    result = run_agent(
        question,
        engine,
        toolbox,
        limits,
        on_event=on_event,
        hints=hints,
        system=system,
        prefetch=prefetch_call(question, found, store, me_names),
        grounding=grounding_facts(question, hints, coverage_sentence(store, tz)),
    )
    return Asked(
        answer=result.answer,
        citations=citations_for(store, result.citations, tz),
        iterations=result.iterations,
        tool_calls=[{"name": n, "arguments": dict(a), "ok": ok} for n, a, ok in result.tool_calls],
        guards=list(result.guards),
        model=getattr(engine, "name", None),
        elapsed_s=round(time.perf_counter() - started, 3),
        usage=result.usage,
        grounding=result.grounding,
        invalid_citations=result.invalid_citations,
    )
