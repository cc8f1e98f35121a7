"""One question end to end: enrich → agent loop (or retrieval-only) → the `ask --json` shape.

Imports: casper.agent, casper.store, casper.store.stats_query, casper.protocols. No backends: the
engine and search function are passed in by the CLI.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from casper.agent import core, prompts
from casper.agent.answer_json import Answer, AnswerGrounding, Citation, ToolCallJson
from casper.agent.ceiling import CeilingToolbox
from casper.agent.enrich import Enrichment, enrich, to_hints
from casper.agent.fact_route import fact_answer
from casper.agent.loop import ToolRunner, Usage, run_agent
from casper.agent.prefetch import (
    coverage_sentence,
    grounding_facts,
    outside_history,
    prefetch_call,
)
from casper.agent.quoting import message_line
from casper.agent.redact import FULL, Ceiling, region_of
from casper.agent.stats_route import stats_answer
from casper.agent.tools import Toolbox
from casper.agent.verify import verify
from casper.dates.ranges import days_to_utc
from casper.dates.zones import iso
from casper.events import Emit, ignore, notice
from casper.protocols import Engine, Hit
from casper.store.db import Store
from casper.store.stats_query import top_people


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
    grounding: AnswerGrounding = "cited"  # what the answer rests on (answer_json)
    invalid_citations: int = 0
    load_s: float = 0.0  # loading the model, when this answer had to
    # what the answer is, not a check on the model's reply (those are guards): no_llm,
    # model_unavailable, misattributed_quote (answered from search alone after the check)
    notices: tuple[str, ...] = ()
    misattributed_citations: tuple[int, ...] = ()  # ids cited for words they do not hold

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
            "notices": list(self.notices),
            "misattributed_citations": list(self.misattributed_citations),
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
    ceiling: Ceiling = FULL,
) -> tuple[Enrichment, tuple[str, ...]]:
    """Dates resolved by dateparser, coverage, and top contacts for ranking questions; the
    earlier turns and the names through `ceiling`'s gate (a model on another machine reads
    them)."""
    found = enrich(question, now, tz, locale=locale, coverage=covered_days(store, tz))
    hints = [ceiling.shown(turn) for turn in history] + list(to_hints(found))
    note = coverage_note(store, tz)
    if note:
        hints.append(note)
    if found.wants_ranking:
        start, end = days_to_utc(*found.date_range, tz) if found.date_range else (None, None)
        names = store.names()
        top = top_people(store, tz, start, end, 5)
        if top:
            listed = ", ".join(f"{ceiling.shown(names.get(p, p))} ({n} messages)" for p, n in top)
            hints.append(f"Most messages exchanged{' in that range' if start else ''}: {listed}.")
    return found, tuple(hints)


def citations_for(store: Store, guids: Sequence[str], tz: ZoneInfo) -> list[Citation]:
    names = store.names()
    out: list[Citation] = []
    for guid in guids:
        m = store.message(guid)
        if m is not None:
            chat = store.chat(m.chat_id)
            time = iso(m.ts, tz)
            out.append(
                {
                    "id": m.rowid,
                    "guid": m.guid,
                    "time": time,
                    "sender": names.get(m.sender, m.sender),
                    "text": m.text,
                    "chat": chat.name if chat else str(m.chat_id),
                    "rowid": m.rowid,
                    "ts": time,
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
                lines.append(f"  {message_line(m.rowid, '', m.sender, m.text)}")
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
    on_event: Emit = ignore,
    locale: str = "en_US",
    me_names: Sequence[str] = (),
    no_llm: bool = False,
    privacy: str = "full",
) -> Asked:
    """Run one question; with no engine, answer from retrieval alone (notice `no_llm` when
    asked for, else `model_unavailable`). Every answer then passes the citation check
    (`agent.verify`): a citation whose message does not hold what the answer attributes to
    it is removed and its claim marked; a model's answer left with no true citation is
    replaced by the search-only answer, and that is said.

    `privacy` limits what the model's tool results show (casper.agent.ceiling): the caller
    passes the setting for a model on another machine, `full` for one on this machine.

    `me_names` are the owner's own names: never a contact to filter by, and the model is told
    that they mean the user."""
    started = time.perf_counter()
    now = now or datetime.now(tz)
    # a model on another machine reads the question, the hints and the tool results through
    # the ceiling (casper.agent.ceiling); the search runs on the question as asked
    ceiling = Ceiling(privacy, region_of(locale))  # type: ignore[arg-type]
    found, hints = build_hints(question, store, tz, now, history, locale=locale, ceiling=ceiling)
    if engine is None:
        why = "no_llm" if no_llm else "model_unavailable"
        asked = _without_model(question, search, found, store, tz, me_names, (why,))
        return checked(
            dataclasses.replace(asked, elapsed_s=round(time.perf_counter() - started, 3)), store
        )
    toolbox: ToolRunner = Toolbox(store, search, tz, now=now, me_names=me_names)
    if privacy != "full":
        toolbox = CeilingToolbox(toolbox, ceiling, store, tz)
    system = prompts.system_prompt(now.date(), getattr(tz, "key", str(tz)), owner=me_names)
    result = run_agent(
        question if privacy == "full" else ceiling.shown(question),  # the prefetch: as asked
        engine,
        toolbox,
        limits,
        on_event=on_event,
        hints=hints,
        system=system,
        prefetch=prefetch_call(question, found, store, me_names),
        grounding=grounding_facts(question, hints, coverage_sentence(store, tz)),
    )
    asked = Asked(
        answer=result.answer,
        citations=citations_for(store, result.citations, tz),
        iterations=result.iterations,
        tool_calls=[
            {"name": n, "arguments": dict(a), "ok": ok, "prefetch": first}
            for first, calls in ((True, result.prefetched), (False, result.tool_calls))
            for n, a, ok in calls
        ],
        guards=list(result.guards),
        model=getattr(engine, "name", None),
        elapsed_s=0.0,
        usage=result.usage,
        grounding=_model_grounding(result.reason, result.grounding),
        invalid_citations=result.invalid_citations,
    )
    asked = checked(asked, store)
    if asked.misattributed_citations and not asked.citations and result.grounding == "cited":
        # nothing the model cited holds what it said: the messages themselves answer
        text, guids = retrieval_only(question, search, found, store, tz)
        asked = dataclasses.replace(
            asked,
            answer=f"{MISQUOTED}\n{text}",
            citations=citations_for(store, guids, tz),
            grounding="search_only" if guids else "nothing_found",
            notices=(*asked.notices, "misattributed_quote"),
        )
        on_event(notice(MISQUOTED_NOTICE))
    return dataclasses.replace(asked, elapsed_s=round(time.perf_counter() - started, 3))


MISQUOTED = (
    "The model's answer put words on messages that do not say them; "
    "here are the messages search found instead:"
)
MISQUOTED_NOTICE = "the model misquoted the messages it cited: answering from search alone"


def _without_model(
    question: str,
    search: Callable[..., Sequence[Hit]],
    found: Enrichment,
    store: Store,
    tz: ZoneInfo,
    me_names: Sequence[str],
    notices: tuple[str, ...],
) -> Asked:
    """The answer with no model: the stats, a fact the store holds, or search alone."""
    figures = stats_answer(question, found, store, tz, me_names)
    facts = fact_answer(question, found, store, tz, me_names) if figures is None else None
    kind: AnswerGrounding
    if figures is not None:
        text, guids, kind = figures, list[str](), "stats"
    elif facts is not None:  # a date or a card the store holds, citing its message
        (text, guids), kind = facts, "stats"
    else:
        text, guids = retrieval_only(question, search, found, store, tz)
        kind = "search_only" if guids else "nothing_found"
    return Asked(
        text, citations_for(store, guids, tz), 0, [], [], None, 0.0, grounding=kind,
        notices=notices,
    )  # fmt: skip


def _model_grounding(reason: core.Reason, kind: core.Grounding) -> AnswerGrounding:
    """The core's kind, said as what happened: its deterministic summary is a fallback (or
    nothing found), not an answer the model cited."""
    if kind == "ungrounded":  # the core summarises an ungrounded reply; it never ends on one
        raise AssertionError("the agent core finished on an ungrounded answer")
    if reason == "fallback" and kind == "cited":
        return "fallback"
    if reason == "fallback" and kind == "abstained":
        return "nothing_found"
    return kind


def checked(asked: Asked, store: Store) -> Asked:
    """The answer after the citation check: misattributed `[#rowid]`s removed, claims marked,
    their citations dropped (guard `misattributed_quote`)."""
    result = verify(asked.answer, store)
    if not result.misattributed:
        return asked
    bad = set(result.misattributed) - set(result.kept)
    guards = asked.guards if "misattributed_quote" in asked.guards else [
        *asked.guards, "misattributed_quote"
    ]  # fmt: skip
    return dataclasses.replace(
        asked,
        answer=result.answer,
        citations=[c for c in asked.citations if c["id"] not in bad],
        guards=guards,
        misattributed_citations=result.misattributed,
    )
