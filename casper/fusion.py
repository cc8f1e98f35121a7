"""PURE: rank fusion (RRF), overlap dedupe, score ordering (CrossEncoder.rank logic), top-k.

Imports: stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")

RRF_K = 60


def rrf(ranked_lists: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: score = Σ 1/(k + rank); ties broken by best rank, then id."""
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranked in ranked_lists:
        seen: set[str] = set()
        for rank, item in enumerate(ranked, start=1):
            if item in seen:  # a list naming an id twice counts it once, at its best rank
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def order_by_scores(ids: Sequence[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    """Pair ids with scores and sort by score, highest first; equal scores keep input order."""
    if len(ids) != len(scores):
        raise ValueError(f"{len(ids)} ids but {len(scores)} scores")
    indexed = sorted(range(len(ids)), key=lambda i: -float(scores[i]))
    return [(ids[i], float(scores[i])) for i in indexed]


def dedupe_overlapping(
    ids: Sequence[str],
    rowids: Mapping[str, Sequence[int]],
    *,
    max_overlap: float = 0.5,
) -> list[str]:
    """Drop an id whose messages are mostly (> max_overlap) shown by higher-ranked ids already."""
    shown: set[int] = set()
    kept: list[str] = []
    for item in ids:
        members = set(rowids.get(item, ()))
        if members and len(members & shown) / len(members) > max_overlap:
            continue
        kept.append(item)
        shown |= members
    return kept


def top_k(items: Sequence[T], k: int) -> list[T]:
    """The first k items (k ≤ 0 → none)."""
    return list(items[: max(k, 0)])


def minmax(scores: Sequence[float]) -> list[float]:
    """Scale scores to [0, 1] (all equal → all 1.0), for display and score-level blending."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if hi - lo <= 0:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]
