"""PURE: leg fusion (convex combination, RRF), overlap dedupe, score ordering, top-k.

Imports: stdlib only.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")

RRF_K = 60
# Hybrid fusion: the convex combination of min-max normalised leg scores (Bruch et al. 2023,
# "An Analysis of Fusion Functions for Hybrid Retrieval"); the weight is the vector leg's.
# Tuned on LoCoMo conversations 26-43 + the synthetic set (3x1 and 8x4), reported on 44-50
# (README): 0.4; more vector weight lost LoCoMo, less lost the synthetic set; RRF (k = 60)
# lost LoCoMo (the eval's feedback pass, eval/feedback.py, was tuned with it too). Re-checked
# with the scope first: 0.35 / 0.45 / 0.5 are no better than 0.4 (README).
VECTOR_WEIGHT = 0.4
# The fusions (casper.vocab.FUSIONS): convex, the fixed weights above; adaptive, those weights
# moved per query by how peaked each leg's scores are (`adapt_weights`); rrf, the former
# default, kept for the ablation.
# `adapt_weights`: a leg whose scores are flat keeps this share of a fully peaked leg's trust, so
# it is never silenced (it still breaks the other legs' ties). Tune halves: 0.05 and 0.15 alike,
# 0.3 lost a LoCoMo tune cell by 0.6 point, 0.05 a report-half one by 0.9 (docs/retrieval.md).
PEAK_FLOOR = 0.15
Scored = Sequence[tuple[str, float]]
Bounds = tuple[float, float] | None  # a leg's score range in a wider search (see `convex`)


def convex(
    legs: Sequence[Scored], weights: Sequence[float], bounds: Sequence[Bounds] | None = None
) -> list[tuple[str, float]]:
    """Σ weight × minmax(score) per id over the legs; an id a leg did not return gets 0 there.

    `bounds[i]` widens leg i's min-max range to include a wider search's range: a search
    inside a scope (a day, a person) then keeps a weak hit weak instead of stretching the
    best of a few weak hits to 1. Ties are broken by the id's best rank in any leg, then by id.
    """
    if len(legs) != len(weights):
        raise ValueError(f"{len(legs)} legs but {len(weights)} weights")
    wider = list(bounds) if bounds is not None else [None] * len(legs)
    if len(wider) != len(legs):
        raise ValueError(f"{len(legs)} legs but {len(wider)} bounds")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for leg, weight, bound in zip(legs, weights, wider, strict=True):
        firsts = _best_scores(leg)  # a leg naming an id twice counts its better score
        normed = minmax(list(firsts.values()), bound)
        for rank, (item, value) in enumerate(zip(firsts, normed, strict=True), start=1):
            scores[item] = scores.get(item, 0.0) + weight * value
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def hybrid(
    vector: Scored,
    lexical: Sequence[Scored],
    *,
    vector_weight: float = VECTOR_WEIGHT,
    lexical_bounds: Sequence[Bounds] | None = None,
    adaptive: bool = False,
) -> list[tuple[str, float]]:
    """The vector leg and the lexical legs (words, and n-grams when the query has CJK/emoji).

    The lexical side's weight is shared by its legs, so an n-gram leg does not outvote words.
    `lexical_bounds` (one per lexical leg) widen those legs' ranges (`convex`); the vector leg
    is always normalised over its own hits. `adaptive`: the weights are moved for this query by
    `adapt_weights`.
    """
    wide = list(lexical_bounds) if lexical_bounds is not None else [None] * len(lexical)
    if len(wide) != len(lexical):
        raise ValueError(f"{len(lexical)} lexical legs but {len(wide)} bounds")
    present = [(leg, b) for leg, b in zip(lexical, wide, strict=True) if leg]
    legs = [leg for leg, _ in present]
    bounds: list[Bounds] = [None, *(b for _, b in present)]
    side = 1.0 - vector_weight
    if not present:
        return convex([vector], [1.0])
    weights = [vector_weight] + [side / len(present)] * len(present)
    if adaptive:
        weights = adapt_weights([vector, *legs], weights)
    return convex([vector, *legs], weights, bounds)


def peak(scores: Sequence[float]) -> float:
    """How far a leg's best hit stands above its typical hit, as a share of the leg's range:
    (best − median) / (best − worst). Near 0: flat, the leg cannot tell its hits apart (a vector
    leg on a short text it barely understands); near 1: one clear winner. With fewer than three
    scores there is no distribution to read: 0.5, a middling leg."""
    if len(scores) < 3:
        return 0.5
    ordered = sorted(scores, reverse=True)
    span = ordered[0] - ordered[-1]
    if span <= 0:
        return 0.0
    return (ordered[0] - statistics.median(ordered)) / span


def adapt_weights(
    legs: Sequence[Scored], weights: Sequence[float], *, floor: float = PEAK_FLOOR
) -> list[float]:
    """The fixed weights moved for one query: each leg's weight × max(peak, floor), rescaled to
    the fixed weights' total, so fused scores keep their range.

    Why: the fixed 0.4 / 0.6 split trusts the vector leg as much when it is nearly blind (flat
    scores: a short text it barely understands) as when it has one clear answer, and BM25
    likewise (a question whose words are everywhere). A leg's own score distribution says how
    sure it is. Legs equally peaked keep the fixed weights exactly, so the fusion is today's
    convex one whenever the legs give no reason to differ. Empty legs keep their weight (they
    add nothing either way). Counting agreement too (a leg whose best hit another leg also
    found weighs more) was measured and not kept: it lost LoCoMo (docs/retrieval.md).
    """
    if len(legs) != len(weights):
        raise ValueError(f"{len(legs)} legs but {len(weights)} weights")
    firsts = [_best_scores(leg) for leg in legs]
    live = [i for i, f in enumerate(firsts) if f]
    moved = list(weights)
    for i in live:
        moved[i] = weights[i] * max(peak(list(firsts[i].values())), floor)
    before = sum(weights[i] for i in live)
    after = sum(moved[i] for i in live)
    if after <= 0:
        return list(weights)
    return [moved[i] * before / after if i in live else weights[i] for i in range(len(legs))]


def _best_scores(leg: Scored) -> dict[str, float]:
    """Each id's best score in a leg (a leg may name an id twice), in first-seen order."""
    best: dict[str, float] = {}
    for item, score in leg:
        best[item] = max(score, best.get(item, score))
    return best


def bounds_of(leg: Scored) -> Bounds:
    """(lowest, highest) score of a leg; None when it found nothing."""
    scores = [score for _, score in leg]
    return (min(scores), max(scores)) if scores else None


def scope_first(
    ranked: Scored, preferred: Scored, *, keep: int = 0, within: int = 10
) -> list[tuple[str, float]]:
    """`preferred` (what a search inside the question's scope found, in its own order) first,
    then the rest of `ranked`: nothing is dropped, what the question named leads.

    Preferred scores are lifted by the rest's best score (when higher), so scores still read
    highest first. `keep`: the best `keep` of `ranked` (the search without the scope) stay in
    the first `within` whatever the scope holds (`keep_best`): a scope read wrongly costs rank,
    never those hits.
    """
    lifted: list[tuple[str, float]] = []
    seen: set[str] = set()
    for item, score in preferred:
        if item not in seen:
            seen.add(item)
            lifted.append((item, score))
    rest = [(item, score) for item, score in ranked if item not in seen]
    if not lifted or not rest:
        return lifted + rest
    lift = max(0.0, max(s for _, s in rest) - min(s for _, s in lifted))
    merged = [(item, score + lift) for item, score in lifted] + rest
    return keep_best(merged, [item for item, _ in _unique(ranked)][:keep], within)


def _unique(ranked: Scored) -> list[tuple[str, float]]:
    seen: set[str] = set()
    return [(i, s) for i, s in ranked if not (i in seen or seen.add(i))]  # type: ignore[func-returns-value]


def keep_best(ranked: Scored, best: Sequence[str], within: int) -> list[tuple[str, float]]:
    """`ranked` with every id of `best` inside its first `within`: an id that would fall below
    is moved up to the last places of the first `within` (in `best`'s order). Each place keeps
    its score (the ids move, the scores do not), so scores still read highest first."""
    order = [item for item, _ in ranked]
    if not best or all(b in order[:within] for b in best if b in order):
        return list(ranked)
    score = dict(ranked)
    wanted = [b for b in best if b in score]
    out: list[str] = []
    for item in order:
        pending = [b for b in wanted if b not in out]
        if not pending or len(out) >= within:
            break
        if item in pending or within - len(out) > len(pending):
            out.append(item)
        else:
            out += pending
            break
    placed = set(out)
    moved = out + [item for item in order if item not in placed]
    return [(item, place) for item, (_, place) in zip(moved, ranked, strict=True)]


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


def minmax(scores: Sequence[float], bounds: Bounds = None) -> list[float]:
    """Scale scores to [0, 1] (all equal → all 1.0), for score-level blending (`convex`);
    `bounds` widen the range the scores are scaled over."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if bounds is not None:
        lo, hi = min(lo, bounds[0]), max(hi, bounds[1])
    if hi - lo <= 0:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]
