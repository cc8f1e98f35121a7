"""PURE ranking metrics (recall, hit, MRR, nDCG @k) at chunk and message granularity.

Conventions (eval.md §4): binary gains, log2 discount, linear DCG; macro-average over
questions with at least one relevant id; duplicates collapsed before scoring.

Chunk level: k counts retrieved chunks. `chunk_recall@k` is the share of relevant messages
contained in the top-k chunks; hit/MRR/nDCG treat a chunk as relevant when it holds a relevant
message (nDCG's ideal is the number of such chunks seen in the retrieved pool, capped at k).
Message level: the ranked chunks are flattened into their messages in rank order, de-duplicated
and cut at k messages, which is comparable to LoCoMo's turn-level recall.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

KS: tuple[int, ...] = (1, 5, 10, 25, 50)
ALL = "all"


def dedupe(ids: Iterable[str]) -> list[str]:
    """Ids in first-seen order, repeats dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for item in ids:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def flatten(chunks: Sequence[Sequence[str]]) -> list[str]:
    """Ranked chunks → ranked, de-duplicated message ids (chunk rank first, then chat order)."""
    return dedupe(m for chunk in chunks for m in chunk)


def recall_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """|R ∩ L@k| / |R|."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(set(relevant))


def hit_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1 if any relevant id is in the top k, else 0."""
    wanted = set(relevant)
    return float(any(item in wanted for item in ranked[:k]))


def mrr_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1 / rank of the first relevant id within k, else 0."""
    wanted = set(relevant)
    for rank, item in enumerate(ranked[:k], start=1):
        if item in wanted:
            return 1.0 / rank
    return 0.0


def dcg(gains: Sequence[float]) -> float:
    """Linear-gain DCG with a log2(rank + 1) discount."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_gains(gains: Sequence[float], n_relevant: int, k: int) -> float:
    """nDCG@k of binary gains against an ideal of `n_relevant` hits capped at k."""
    ideal = dcg([1.0] * min(n_relevant, k))
    return dcg(gains[:k]) / ideal if ideal else 0.0


def ndcg_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """nDCG@k with binary gains; ideal = |R| capped at k."""
    wanted = set(relevant)
    return ndcg_gains([1.0 if item in wanted else 0.0 for item in ranked], len(wanted), k)


def score_message_level(
    chunks: Sequence[Sequence[str]], relevant: Collection[str], ks: Sequence[int] = KS
) -> dict[str, float]:
    """Metrics over the flattened message list, cut at k messages."""
    ranked = flatten(chunks)
    out: dict[str, float] = {}
    for k in ks:
        out[f"message_recall@{k}"] = recall_at(ranked, relevant, k)
        out[f"message_hit@{k}"] = hit_at(ranked, relevant, k)
        out[f"message_mrr@{k}"] = mrr_at(ranked, relevant, k)
        out[f"message_ndcg@{k}"] = ndcg_at(ranked, relevant, k)
    return out


def score_chunk_level(
    chunks: Sequence[Sequence[str]], relevant: Collection[str], ks: Sequence[int] = KS
) -> dict[str, float]:
    """Metrics where k counts chunks; `chunk_messages@k` is the context size behind them."""
    wanted = set(relevant)
    gains = [1.0 if wanted.intersection(chunk) else 0.0 for chunk in chunks]
    pool = int(sum(gains))
    out: dict[str, float] = {}
    for k in ks:
        covered = {m for chunk in chunks[:k] for m in chunk}
        out[f"chunk_recall@{k}"] = len(covered & wanted) / len(wanted) if wanted else 0.0
        out[f"hit@{k}"] = float(any(gains[:k]))
        first = next((i for i, g in enumerate(gains[:k], start=1) if g), None)
        out[f"mrr@{k}"] = 1.0 / first if first else 0.0
        out[f"ndcg@{k}"] = ndcg_gains(gains, pool, k)
        out[f"chunk_messages@{k}"] = float(len(covered))
    return out


SESSION_KS: tuple[int, ...] = (5, 10)
SessionOf = Callable[[str], "str | None"]


def rank_sessions(chunks: Sequence[Sequence[str]], session_of: SessionOf) -> list[str]:
    """Ranked chunks → ranked distinct sessions: each message maps to its session in rank order
    (LongMemEval's turn → session aggregation: read down the list until k distinct sessions);
    a message with no session counts as a session of its own, so it still takes a slot."""
    return dedupe(session_of(m) or f"message:{m}" for m in flatten(chunks))


def score_session_level(
    chunks: Sequence[Sequence[str]],
    relevant: Collection[str],
    session_of: SessionOf,
    ks: Sequence[int] = SESSION_KS,
) -> dict[str, float]:
    """Session-level recall as memory systems publish it, k counting distinct sessions:

    - `session_recall@k`: share of the evidence sessions among the top k (MemPalace's LoCoMo
      `compute_retrieval_recall` over `session_N` ids);
    - `session_any@k`: 1 if any evidence session is there (LongMemEval `recall_any@k`);
    - `session_all@k`: 1 if all are (LongMemEval `recall_all@k`).
    """
    ranked = rank_sessions(chunks, session_of)
    wanted = {s for m in relevant if (s := session_of(m)) is not None}
    out: dict[str, float] = {}
    if not wanted:
        return out
    for k in ks:
        found = wanted.intersection(ranked[:k])
        out[f"session_recall@{k}"] = len(found) / len(wanted)
        out[f"session_any@{k}"] = float(bool(found))
        out[f"session_all@{k}"] = float(found == wanted)
    return out


def score_question(
    chunks: Sequence[Sequence[str]],
    relevant: Collection[str],
    ks: Sequence[int] = KS,
    session_of: SessionOf | None = None,
    messages: Sequence[str] | None = None,
) -> dict[str, float]:
    """Both granularities for one question (chunks: message ids per ranked chunk), and the
    session level when the corpus knows its sessions (`session_of`: message id → session).

    `messages`: the search's own ranking of messages, when it ranks them (each message scored
    alone beside the windows; the hits are windows chosen around the best of them): message
    and session level read it, chunk level the hits. Without it both read the chunks'
    messages in rank order, as a search of windows alone ranks them."""
    ranked = [[m] for m in messages] if messages is not None else chunks
    out = {**score_chunk_level(chunks, relevant, ks), **score_message_level(ranked, relevant, ks)}
    if session_of is not None:
        out.update(score_session_level(ranked, relevant, session_of))
    return out


def mean_metrics(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Key-wise arithmetic mean (macro average); empty input gives an empty dict."""
    if not rows:
        return {}
    keys = dedupe(k for row in rows for k in row)
    return {k: sum(row.get(k, 0.0) for row in rows) / len(rows) for k in keys}


def aggregate(
    scored: Sequence[tuple[str | None, Mapping[str, float]]],
    groups: Mapping[str, Collection[str]] | None = None,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(overall, by_category) macro averages; `groups` adds pooled categories by name.

    Each category row carries `questions`, the number of questions averaged.
    """
    overall = mean_metrics([row for _cat, row in scored])
    by_cat: dict[str, list[Mapping[str, float]]] = {}
    for cat, row in scored:
        by_cat.setdefault(cat or "uncategorised", []).append(row)
    for name, members in (groups or {}).items():
        pooled = [row for cat, row in scored if cat in members]
        if pooled:
            by_cat[name] = pooled
    by_category = {
        name: {**mean_metrics(rows), "questions": float(len(rows))}
        for name, rows in sorted(by_cat.items())
    }
    return overall, by_category


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def exact_match(expected: object, actual: object) -> bool:
    """Structural equality with numbers compared loosely (1 == 1.0) and tuples as lists."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return set(expected) <= set(actual) and all(
            exact_match(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return len(expected) == len(actual) and all(
            exact_match(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return math.isclose(float(expected), float(actual), rel_tol=1e-9, abs_tol=1e-6)
    return expected == actual
