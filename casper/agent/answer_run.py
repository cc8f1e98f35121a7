"""One `ask` request's answer: `answer.answer_question` run with the searches it makes
recorded, answered again from search alone when a model server fails mid-answer, and what
those searches said of the question's own words.

The handler (casper.app.handlers.ask) resolves the request (scope, model, where the engine runs)
and shapes the document; this decides the answer and returns it with what ran.

Imports: casper.agent.answer, casper.search.words (pure), casper.errors, casper.events; the
search function and the engine arrive as arguments.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from casper.agent.answer import Asked, answer_question
from casper.agent.core import Limits
from casper.agent.scope import NO_FILTERS, Filters
from casper.errors import ModelServerFailed
from casper.events import Emit, ignore
from casper.search.words import matched

if TYPE_CHECKING:
    from casper.protocols import Engine, Hit
    from casper.search.retriever import SearchResult
    from casper.store.db import Store

Search = Callable[..., "SearchResult"]  # a Retriever's search, kept to the request's scope


@dataclass(frozen=True, slots=True)
class Searched:
    """One search an answer ran: reranked or not and, when it searched the question itself,
    its words (casper.search.words), those in no message, and those its hits hold."""

    reranked: bool
    words: tuple[str, ...] = ()
    not_found: tuple[str, ...] = ()
    held: tuple[str, ...] = ()


class SearchTrail:
    """The search the agent is given: each call runs `search` and is recorded as a `Searched`
    (the agent calls it as many times as it likes; the records are read once it is done)."""

    def __init__(self, search: Search, question: str) -> None:
        self._search, self._question = search, question
        self.runs: list[Searched] = []

    def __call__(self, query: str, **options: object) -> list[Hit]:
        result = self._search(query, **options)
        if query.strip() != self._question:
            self.runs.append(Searched(result.reranked))
            return result.hits
        texts = [m.text for h in result.hits for m in h.messages]
        self.runs.append(
            Searched(
                result.reranked,
                tuple(result.words),
                tuple(result.words_not_found),
                tuple(matched(result.words, texts)),
            )
        )
        return result.hits


@dataclass(frozen=True, slots=True)
class AnswerRun:
    """The answer and what its searches ran: how many, whether any was reranked, and of the
    question's words those in no message and those in some message but in none the searches
    found (nor the answer cites)."""

    asked: Asked
    searches: int
    reranked: bool
    words_not_found: tuple[str, ...]
    words_not_in_hits: tuple[str, ...]


def run_answer(
    question: str,
    *,
    store: Store,
    search: Search,
    engine: Engine | None,
    tz: ZoneInfo,
    limits: Limits,
    load_s: float = 0.0,
    history: Sequence[str] = (),
    on_event: Emit = ignore,
    locale: str = "en_US",
    me_names: Sequence[str] = (),
    no_llm: bool = False,
    privacy: str = "full",
    now: datetime | None = None,
    filters: Filters = NO_FILTERS,
) -> AnswerRun:
    """Answer `question` (casper.agent.answer.answer_question); a model server that fails
    mid-answer leaves it to search alone, said in a notice every time (a server's failure is
    of the moment). `load_s`: the model's loading, counted in `elapsed_s` (a failed attempt's
    wait is too)."""
    trail = SearchTrail(search, question)

    def answer(engine: Engine | None) -> Asked:
        return answer_question(
            question,
            store=store,
            search=trail,
            engine=engine,
            tz=tz,
            limits=limits,
            now=now,
            history=history,
            on_event=on_event,
            locale=locale,
            me_names=me_names,
            no_llm=no_llm,
            privacy=privacy if engine is not None else "full",
            filters=filters,
        )

    answering = time.perf_counter()
    try:
        asked = answer(engine)
    except ModelServerFailed as exc:
        on_event({"event": "notice", "text": f"answering from search alone: {exc.message}",
                  "hint": exc.hint})  # fmt: skip
        asked = answer(None)
    elapsed = time.perf_counter() - answering + load_s
    asked = dataclasses.replace(asked, load_s=round(load_s, 3), elapsed_s=round(elapsed, 3))
    return settled(asked, trail.runs)


def settled(asked: Asked, runs: Sequence[Searched]) -> AnswerRun:
    """The answer after its searches: search_only on words no message holds is nothing found;
    a word the cited messages hold counts as found, by whichever search."""
    words = list(dict.fromkeys(w for r in runs for w in r.words))
    absent = list(dict.fromkeys(w for r in runs for w in r.not_found))
    if asked.grounding == "search_only" and words and set(words) <= set(absent):
        # the closest messages to words no message holds: nothing was found
        asked = dataclasses.replace(asked, grounding="nothing_found")
    held = {w for r in runs for w in r.held}
    if words:
        held.update(matched(words, [c["text"] or "" for c in asked.citations]))
    return AnswerRun(
        asked,
        searches=len(runs),
        reranked=any(r.reranked for r in runs),
        words_not_found=tuple(absent),
        words_not_in_hits=tuple(w for w in words if w not in held and w not in absent),
    )
