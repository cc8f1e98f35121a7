"""Retriever.search: vector + lexical legs (filters inside each) → RRF → dedupe → rerank → top-k.

Imports: casper.fusion, casper.store.index, casper.store.lexical (lazily), protocols, records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypeVar

from casper import fusion
from casper.protocols import Embedder, Hit, HitMessage, Reranker
from casper.records import ME, StoredMessage
from casper.store.index import ChunkIndex, Filter
from casper.store.vectors import ChunkMeta

if TYPE_CHECKING:
    from casper.store.db import Store
    from casper.store.lexical import RankBM25Index

Mode = Literal["hybrid", "bm25", "vector"]
LoadMessages = Callable[[Sequence[int]], Sequence[StoredMessage]]
MODES: tuple[str, ...] = ("hybrid", "bm25", "vector")
LEXICAL: tuple[str, ...] = ("lancedb", "rank-bm25")
T = TypeVar("T")


class Retriever:
    """Hybrid search over the chunk index; one instance per process (it caches the matrix)."""

    def __init__(
        self,
        index: ChunkIndex,
        embedder: Embedder,
        reranker: Reranker | None = None,
        *,
        names: Mapping[str, str] | None = None,
        store: Store | None = None,
        load_messages: LoadMessages | None = None,
        candidates: int = 50,
        top_k: int = 8,
        lexical: str = "lancedb",
        rrf_k: int = fusion.RRF_K,
    ) -> None:
        if lexical not in LEXICAL:
            raise ValueError(f"lexical must be one of {LEXICAL}, not {lexical!r}")
        self.index = index
        self.embedder = embedder
        self.reranker = reranker
        self.names: Mapping[str, str] = (
            names if names is not None else (store.names() if store is not None else {})
        )
        self.load_messages = load_messages or (store.messages_by_rowids if store else None)
        self.candidates = candidates
        self.top_k = top_k
        self.lexical = lexical
        self.rrf_k = rrf_k
        self.timings: dict[str, float] = {}
        self._bm25: RankBM25Index | None = None

    def search(
        self,
        query: str,
        *,
        person_id: str | None = None,
        chat_id: int | None = None,
        since: float | None = None,
        until: float | None = None,
        k: int | None = None,
        mode: Mode = "hybrid",
        rerank: bool = True,
    ) -> list[Hit]:
        """Find the chunks that best answer `query`.

        Args:
            query: free text; CJK and emoji are matched by a character n-gram leg.
            person_id: only chats this person is a member of.
            chat_id: only this chat.
            since: UTC seconds; chunks ending before it are excluded.
            until: UTC seconds, exclusive; chunks starting at or after it are excluded.
            k: number of hits (default `top_k`).
            mode: "hybrid" (vector + lexical, RRF), "bm25" or "vector".
            rerank: rescore the fused candidates with the reranker, when there is one.

        Returns:
            Hits, best first. `score` is the reranker's score when reranked, else the RRF score
            (hybrid, or bm25 with several lexical legs), else the leg's own score.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        started = time.perf_counter()
        self.timings = {}
        where = Filter(person_id=person_id, chat_id=chat_id, since=since, until=until)
        legs = self._legs(query, where, mode)
        ranked = self._clock("fuse", lambda: self._fuse(legs))
        if rerank and self.reranker is not None and ranked:
            ranked = self._rerank(query, ranked)
        final = fusion.top_k(ranked, k if k is not None else self.top_k)
        hits = self._clock("fetch", lambda: self._hits(final))
        self.timings["total"] = _ms(started)
        return hits

    # ---- legs ----------------------------------------------------------------------------
    def _legs(self, query: str, where: Filter, mode: str) -> list[list[tuple[str, float]]]:
        n = self.candidates
        legs: list[list[tuple[str, float]]] = []
        if mode in ("hybrid", "vector"):
            vec = self._clock("embed", lambda: self.embedder.embed_query(query))
            legs.append(self._clock("vector", lambda: self.index.vector_search(vec, n, where)))
        if mode in ("hybrid", "bm25"):
            legs.extend(self._clock("lexical", lambda: self._lexical(query, where)))
        return legs

    def _lexical(self, query: str, where: Filter) -> list[list[tuple[str, float]]]:
        n = self.candidates
        if self.lexical == "rank-bm25":
            return [self.bm25().search(query, n, where)]
        words = self.index.fts_search(query, n, where)
        grams = self.index.ngram_search(query, n, where)
        return [words, grams] if grams else [words]

    def bm25(self) -> RankBM25Index:
        """The rank-bm25 backend, loaded on first use."""
        if self._bm25 is None:
            from casper.store.lexical import RankBM25Index

            self._bm25 = RankBM25Index(self.index)
        return self._bm25

    # ---- fusion, rerank, hits ------------------------------------------------------------
    def _fuse(self, legs: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
        if len(legs) == 1:
            return self._dedupe(legs[0])
        return self._dedupe(fusion.rrf([[cid for cid, _ in leg] for leg in legs], k=self.rrf_k))

    def _dedupe(self, ranked: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
        if not ranked:
            return []
        ids = [cid for cid, _ in ranked]
        kept = set(fusion.dedupe_overlapping(ids, self.index.matrix().rowids_of(ids)))
        return [(cid, score) for cid, score in ranked if cid in kept]

    def _rerank(self, query: str, ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
        assert self.reranker is not None
        started = time.perf_counter()
        pool = self.index.get([cid for cid, _ in ranked[: self.candidates]])
        scores = self.reranker.score(query, [c.embed_text for c in pool])
        reranked = fusion.order_by_scores([c.id for c in pool], scores)
        self.timings["rerank"] = _ms(started)
        return self._dedupe(reranked)

    def _hits(self, ranked: Sequence[tuple[str, float]]) -> list[Hit]:
        metas = self.index.matrix().meta([cid for cid, _ in ranked])
        messages: dict[int, StoredMessage] = {}
        if self.load_messages is not None:
            wanted = [r for cid, _ in ranked if cid in metas for r in metas[cid].rowids]
            messages = {m.rowid: m for m in self.load_messages(wanted)}
        return [self._hit(metas[cid], score, messages) for cid, score in ranked if cid in metas]

    def _hit(self, meta: ChunkMeta, score: float, messages: Mapping[int, StoredMessage]) -> Hit:
        shown = [messages[r] for r in meta.rowids if r in messages]
        return Hit(
            chunk_id=meta.id,
            chat=meta.chat_name,
            score=float(score),
            start=meta.start,
            end=meta.end,
            participants=meta.participants,
            messages=tuple(
                HitMessage(
                    rowid=m.rowid,
                    guid=m.guid,
                    ts=m.ts,
                    sender=self.names.get(m.sender, "me" if m.sender == ME else m.sender),
                    text=m.text,
                )
                for m in sorted(shown, key=lambda m: (m.ts, m.rowid))
            ),
        )

    def _clock(self, key: str, fn: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return fn()
        finally:
            self.timings[key] = self.timings.get(key, 0.0) + _ms(started)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
