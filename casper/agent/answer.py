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

from casper.agent import core, prompts, quotes
from casper.agent.answer_json import Answer, AnswerGrounding, Citation, ToolCallJson
from casper.agent.ceiling import CeilingToolbox
from casper.agent.enrich import enrich, to_hints
from casper.agent.figures import agreeing, written_names
from casper.agent.grounding import needs_messages
from casper.agent.loop import AgentResult, ToolRunner, Usage, run_agent
from casper.agent.plain import Plain, plain_answer, routed, searched
from casper.agent.prefetch import (
    STATS_NOTE,
    coverage_sentence,
    grounding_facts,
    named_person,
    prefetch_call,
)
from casper.agent.redact import FULL, Ceiling, region_of
from casper.agent.scope import NO_FILTERS, Filters, Scoped, within
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


def read_question(
    question: str,
    store: Store,
    tz: ZoneInfo,
    now: datetime,
    history: Sequence[str] = (),
    *,
    locale: str = "en_US",
    me_names: Sequence[str] = (),
    filters: Filters = NO_FILTERS,
    ceiling: Ceiling = FULL,
) -> tuple[Scoped, tuple[str, ...]]:
    """The question read inside the request's filters (casper.agent.scope: its dates, the
    person it is about) and the notes the model gets with it: dates, coverage, and the top
    contacts for a ranking question; the earlier turns and the names through `ceiling`'s gate
    (a model on another machine reads them)."""
    found = enrich(question, now, tz, locale=locale, coverage=covered_days(store, tz))
    named = named_person(question, store, me_names)
    scoped = within(found, named, filters, store.names())
    hints = [ceiling.shown(turn) for turn in history] + list(to_hints(scoped.found))
    note = coverage_note(store, tz)
    if note:
        hints.append(note)
    if scoped.found.wants_ranking:
        start, end = days_to_utc(*scoped.days, tz) if scoped.days else (None, None)
        names = store.names()
        top = top_people(store, tz, start, end, 5)
        if top:
            listed = ", ".join(f"{ceiling.shown(names.get(p, p))} ({n} messages)" for p, n in top)
            ranged = " in that range" if start or end else ""
            hints.append(f"Most messages exchanged{ranged}: {listed}.")
    return scoped, tuple(hints)


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
    filters: Filters = NO_FILTERS,
) -> Asked:
    """Run one question inside the request's `filters` (what they override is said, notice
    `filters_won`). With no engine, the answer without a model (casper.agent.plain; notice
    `no_llm` when asked for, else `model_unavailable`). With one: a question the stats or the
    store answer gets their answer first and the model's words after it only where its figures
    are theirs (guard `wrong_figure`); a model's reply that is not used gives way to the search
    answer `--no-llm` gives (`fallback`). Every answer then passes the citation check
    (casper.agent.verify): the messages it shows are rendered from the store, a misattribution
    is corrected or marked on its line (`corrected`), and a model's answer with no citation
    left that holds is replaced by the search answer, which says so.

    `privacy` limits what the model's tool results show (casper.agent.ceiling): the caller
    passes the setting for a model on another machine, `full` for one on this machine.

    `me_names` are the owner's own names: never a contact to filter by, and the model is told
    that they mean the user."""
    started = time.perf_counter()
    now = now or datetime.now(tz)
    # a model on another machine reads the question, the hints and the tool results through
    # the ceiling (casper.agent.ceiling); the search runs on the question as asked
    ceiling = Ceiling(privacy, region_of(locale))  # type: ignore[arg-type]
    scoped, hints = read_question(
        question,
        store,
        tz,
        now,
        history,
        locale=locale,
        me_names=me_names,
        filters=filters,
        ceiling=ceiling,
    )
    for note in scoped.notes:
        on_event(notice(note))
    said: tuple[str, ...] = ("filters_won",) if scoped.notes else ()
    if engine is None:
        why = "no_llm" if no_llm else "model_unavailable"
        plain = plain_answer(question, search, scoped, store, tz, me_names)
        asked, _ = checked(_plainly(plain, store, tz, (why, *said)), store, tz, me_names)
        return dataclasses.replace(asked, elapsed_s=round(time.perf_counter() - started, 3))
    stats_first = routed(question, scoped, store, tz, me_names)  # shown before the model's
    if stats_first is not None and privacy == "full":
        # (a fact quotes a message, a card holds handles: a model on another machine gets
        # neither; it words the answer from the question alone and its figures are held to
        # these just the same)
        hints = (*hints, f"{STATS_NOTE} {stats_first.text}")
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
        prefetch=prefetch_call(question, scoped) if stats_first is None else None,
        grounding=grounding_facts(
            question, hints, coverage_sentence(store, tz), stats_first is not None
        ),
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
        notices=said,
    )
    if stats_first is not None:
        asked = _figures_first(asked, stats_first, result, question, store, tz)
    elif result.reason == "fallback" and needs_messages(question):  # not used: search answers
        plain = searched(question, search, scoped, store, tz)
        asked = dataclasses.replace(
            asked,
            answer=f"{UNUSED}\n{plain.text}",
            citations=citations_for(store, plain.guids, tz),
            grounding="fallback" if plain.guids else "nothing_found",
        )
    asked, check = checked(asked, store, tz, me_names)
    if asked.grounding == "corrected" and not set(check.kept) - set(check.misattributed):
        # nothing the model cited holds what it said: the messages themselves answer
        plain = searched(question, search, scoped, store, tz)
        asked = dataclasses.replace(
            asked,
            answer=f"{MISQUOTED}\n{plain.text}",
            citations=citations_for(store, plain.guids, tz),
            grounding="search_only" if plain.guids else "nothing_found",
            notices=(*asked.notices, "misattributed_quote"),
        )
        on_event(notice(MISQUOTED_NOTICE))
    return dataclasses.replace(asked, elapsed_s=round(time.perf_counter() - started, 3))


MISQUOTED = (
    "The model's answer put words on messages that do not say them; "
    "here are the messages search found instead:"
)
MISQUOTED_NOTICE = "the model misquoted the messages it cited: answering from search alone"
UNUSED = "The model did not write an answer that could be used."


def _plainly(plain: Plain, store: Store, tz: ZoneInfo, notices: tuple[str, ...]) -> Asked:
    """The answer without a model as `ask` prints it."""
    return Asked(
        plain.text, citations_for(store, plain.guids, tz), 0, [], [], None, 0.0,
        grounding=plain.grounding, notices=notices,
    )  # fmt: skip


def _figures_first(
    asked: Asked,
    first: Plain,
    result: AgentResult,
    question: str,
    store: Store,
    tz: ZoneInfo,
) -> Asked:
    """The stats' (or the store's) answer, then the model's words where every figure in them
    is theirs; a sentence with another figure is dropped (guard `wrong_figure`)."""
    # a reply that fell back or went round in circles is no wording worth showing
    used = (
        result.reason != "fallback"
        and result.grounding in ("cited", "stats", "exempt")
        and "repetitive_answer" not in result.guards
    )
    words, dropped = agreeing(
        asked.answer if used else "", first.text, question, written_names(store.names())
    )
    text = f"{first.text}\n\n{words}" if words and words not in first.text else first.text
    guards = [*asked.guards, "wrong_figure"] if dropped else asked.guards
    mine = citations_for(store, first.guids, tz)
    theirs = [c for c in asked.citations if f"[#{c['rowid']}]" in words and c not in mine]
    return dataclasses.replace(
        asked, answer=text, citations=mine + theirs, guards=guards, grounding="stats"
    )


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


def checked(
    asked: Asked, store: Store, tz: ZoneInfo, me_names: Sequence[str] = ()
) -> tuple[Asked, quotes.Checked]:
    """The answer after the citation check (casper.agent.verify): the messages it shows
    rendered from the store, misattributions corrected or marked (guard
    `misattributed_quote`; a model's cited answer is then `corrected`), uncited ids dropped
    from its citations, a cut-off said (notice `cut_off`)."""
    result = verify(asked.answer, store, tz, me_names)
    notices = (*asked.notices, "cut_off") if result.cut_off else asked.notices
    asked = dataclasses.replace(asked, answer=result.answer, notices=notices)
    if not result.misattributed:
        return asked, result
    bad = set(result.misattributed) - set(result.kept)
    guards = asked.guards if "misattributed_quote" in asked.guards else [
        *asked.guards, "misattributed_quote"
    ]  # fmt: skip
    grounding: AnswerGrounding = "corrected" if asked.grounding == "cited" else asked.grounding
    return dataclasses.replace(
        asked,
        citations=[c for c in asked.citations if c["id"] not in bad],
        guards=guards,
        misattributed_citations=result.misattributed,
        grounding=grounding,
    ), result
