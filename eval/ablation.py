"""The Retriever as two ablation rows search, which Casper's own search does not: the feedback
pass (a second pass with the best hits' words, eval.feedback) and the reading's rewrite alone
(nothing typed or dated searched beside it, the former reading). `eval.variants.make_search`
builds it for a RunSpec that asks for either; everything else is `Retriever`'s own code.

Imports: casper.search (retriever, query), casper.index, eval.feedback.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Literal

from casper.search.query import Understood
from casper.search.retriever import Retriever, chunk_texts
from eval.feedback import FEEDBACK_DOCS, expansion, with_feedback

if TYPE_CHECKING:
    from casper.index.chunk_table import Filter
    from casper.search.retriever import _Search
    from casper.vocab import Mode

# How a reading of the question joins the words: "add" (Casper's: the words as typed and the
# named dates' terms run beside the rewrite, a scope leads only with matching hits, dates outside
# the history are no scope) or "replace" (the rewrite alone, the former reading).
Rewrites = Literal["add", "replace"]
Ranked = list[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class Expanded(Understood):
    """A reading with the words the first pass's best hits lend, searched as one more leg."""

    expansion: tuple[str, ...] = ()


class AblationRetriever(Retriever):
    """`base`'s search (same index, models, reader and settings) with the feedback pass when
    `feedback_terms` > 0 (hybrid, not literal) and the rewrite alone when `rewrites` is
    "replace"."""

    def __init__(
        self, base: Retriever, *, feedback_terms: int = 0, rewrites: Rewrites = "add"
    ) -> None:
        super().__init__(
            base.index, base.embedder, base.reranker, names=base.names,
            load_messages=base.load_messages, candidates=base.candidates, top_k=base.top_k,
            lexical=base.lexical, vector_weight=base.vector_weight, fuse=base.fuse,
            reader=base.reader, by_message=base.by_message, days_after=base.days_after,
        )  # fmt: skip
        self.feedback_terms = feedback_terms
        self.rewrites = rewrites

    def _read(self, query: str, literal: bool, now: datetime | None) -> Understood:
        u = super()._read(query, literal, now)
        if self.rewrites == "replace" and self.reader is not None and not literal:
            return dataclasses.replace(u, typed="", weak=(), date_terms=(), date_outside=False)
        return u

    def _rank(
        self, run: _Search, u: Understood, where: Filter, mode: Mode
    ) -> tuple[Understood, Ranked]:
        """The first pass; then (hybrid) BM25 searched again with the best hits' distinctive
        words added, as one more lexical leg, and everything fused again (the first pass's
        legs are reused, not searched again). The whole first-pass candidate list stands in
        for document frequency."""
        u, ranked = super()._rank(run, u, where, mode)
        if mode != "hybrid" or u.literal or self.feedback_terms <= 0 or not ranked:
            return u, ranked
        started = time.perf_counter()
        texts = chunk_texts(self.index, [cid for cid, _ in ranked[: self.candidates]])
        words = expansion(u.lexical, texts[:FEEDBACK_DOCS], texts, self.feedback_terms)
        run.timings["feedback"] = (time.perf_counter() - started) * 1000.0
        if not words:
            return u, ranked
        fields = {f.name: getattr(u, f.name) for f in dataclasses.fields(u)}
        read = Expanded(**fields, expansion=tuple(words))
        return read, self._pass(run, read, where, "hybrid")

    def _legs(self, run: _Search, u: Understood, where: Filter, mode: str) -> list[Ranked]:
        legs = super()._legs(run, u, where, mode)
        if isinstance(u, Expanded) and mode in ("hybrid", "bm25"):
            query = f"{u.lexical} {' '.join(u.expansion)}"
            key = ("lexical", query, where)
            if key not in run.legs:  # the words leg alone (the n-grams are the question's)
                found = self._clock(run, "lexical", partial(self._lexical, query, where))
                run.legs[key] = found[:1]
            legs.extend(run.legs[key])
        return legs

    def _ranked(
        self,
        run: _Search,
        u: Understood,
        legs: list[Ranked],
        mode: str,
        wider: list[Ranked] | None = None,
    ) -> Ranked:
        """The feedback leg (the last) takes its share of the lexical side; with rrf it is one
        more ranked list, as Retriever fuses any leg."""
        if not isinstance(u, Expanded) or mode != "hybrid" or self.fuse == "rrf":
            return super()._ranked(run, u, legs, mode, wider)
        bounds = self._lexical_bounds(legs, mode, wider)
        fused = partial(with_feedback, legs[0], legs[1:-1], legs[-1],
                        vector_weight=self.vector_weight, lexical_bounds=bounds,
                        adaptive=self.fuse == "adaptive")  # fmt: skip
        return self._clock(run, "fuse", fused)
