"""eval.metrics against hand-worked values and the ir-measures reference implementation."""

from __future__ import annotations

import math

import ir_measures
import pytest
from ir_measures import RR, R, Success, nDCG

from eval import metrics

KS = (1, 2, 3, 5, 10)

# Ranked chunks (message ids per chunk) with relevant messages; windows overlap like 8x4 chunks.
FIXTURE: dict[str, tuple[list[list[str]], set[str]]] = {
    "q1": ([["m1", "m2"], ["m2", "m3"], ["m7"], ["m4", "m5"]], {"m3", "m5"}),
    "q2": ([["x1"], ["x2", "x3", "x4"], ["x5"]], {"x1"}),
    "q3": ([["y1", "y2"], ["y3"]], {"y9"}),  # relevant never retrieved
    "q4": ([["z1", "z2", "z3"], ["z4"], ["z2", "z5"], ["z6"], ["z7"]], {"z5", "z6", "z7", "z8"}),
    "q5": ([], {"w1"}),  # nothing retrieved
}


def _run(ranked: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Distinct descending scores so trec_eval's tie-breaking cannot reorder."""
    return {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in ranked.items()}


def _reference(ranked: dict[str, list[str]], qrels: dict[str, set[str]], k: int) -> dict:
    measures = [R @ k, Success @ k, RR @ k, nDCG @ k]
    judged = {q: {d: 1 for d in rel} for q, rel in qrels.items() if rel}
    values = {m: {} for m in measures}
    for row in ir_measures.iter_calc(measures, judged, _run(ranked)):
        values[row.measure][row.query_id] = row.value
    # queries with nothing retrieved are missing from iter_calc: they score 0
    return {m: sum(values[m].get(q, 0.0) for q in judged) / len(judged) for m in measures}


@pytest.mark.parametrize("k", KS)
def test_message_level_matches_ir_measures(k: int) -> None:
    ranked = {q: metrics.flatten(chunks) for q, (chunks, _rel) in FIXTURE.items()}
    qrels = {q: rel for q, (_chunks, rel) in FIXTURE.items()}
    ref = _reference(ranked, qrels, k)
    rows = [metrics.score_message_level(chunks, rel, (k,)) for chunks, rel in FIXTURE.values()]
    mine = metrics.mean_metrics(rows)
    assert mine[f"message_recall@{k}"] == pytest.approx(ref[R @ k])
    assert mine[f"message_hit@{k}"] == pytest.approx(ref[Success @ k])
    assert mine[f"message_mrr@{k}"] == pytest.approx(ref[RR @ k])
    assert mine[f"message_ndcg@{k}"] == pytest.approx(ref[nDCG @ k])


@pytest.mark.parametrize("k", KS)
def test_chunk_level_matches_ir_measures_on_the_judged_pool(k: int) -> None:
    ranked, qrels = {}, {}
    for q, (chunks, rel) in FIXTURE.items():
        ids = [f"{q}-c{i}" for i in range(len(chunks))]
        ranked[q] = ids
        qrels[q] = {cid for cid, chunk in zip(ids, chunks, strict=True) if rel & set(chunk)}
    ref = _reference(ranked, qrels, k)
    answerable = [q for q in FIXTURE if qrels[q]]  # ir-measures only knows judged queries
    rows = [metrics.score_chunk_level(*FIXTURE[q], (k,)) for q in answerable]
    mine = metrics.mean_metrics(rows)
    assert mine[f"hit@{k}"] == pytest.approx(ref[Success @ k])
    assert mine[f"mrr@{k}"] == pytest.approx(ref[RR @ k])
    assert mine[f"ndcg@{k}"] == pytest.approx(ref[nDCG @ k])


def test_hand_worked_values() -> None:
    chunks, rel = FIXTURE["q1"]
    row = metrics.score_question(chunks, rel, (1, 2, 3))
    # flattened: m1 m2 m3 m7 m4 m5
    assert row["message_recall@3"] == 0.5
    assert row["message_mrr@3"] == pytest.approx(1 / 3)
    ideal = 1 + 1 / math.log2(3)
    assert row["message_ndcg@3"] == pytest.approx((1 / math.log2(4)) / ideal)
    # chunks: k counts chunks; chunk 2 brings m3
    assert row["chunk_recall@1"] == 0.0
    assert row["chunk_recall@2"] == 0.5
    assert row["mrr@3"] == 0.5
    assert row["chunk_messages@2"] == 3.0


def test_dedupe_and_flatten_keep_first_rank() -> None:
    assert metrics.flatten([["a", "b"], ["b", "c"], ["a"]]) == ["a", "b", "c"]
    assert metrics.recall_at(["a", "a", "b"], {"b"}, 2) == 0.0
    assert metrics.recall_at(metrics.dedupe(["a", "a", "b"]), {"b"}, 2) == 1.0


def test_aggregate_macro_by_category_with_pooled_group() -> None:
    scored = [
        ("temporal", {"m": 1.0}),
        ("temporal", {"m": 0.0}),
        ("single-hop", {"m": 1.0}),
        ("adversarial", {"m": 0.0}),
    ]
    overall, by_cat = metrics.aggregate(scored, {"1-4 pooled": {"temporal", "single-hop"}})
    assert overall["m"] == 0.5
    assert by_cat["temporal"] == {"m": 0.5, "questions": 2.0}
    assert by_cat["1-4 pooled"]["m"] == pytest.approx(2 / 3)
    assert by_cat["1-4 pooled"]["questions"] == 3.0


def test_empty_relevant_scores_zero_and_percentiles() -> None:
    assert metrics.recall_at(["a"], set(), 5) == 0.0
    assert metrics.ndcg_at(["a"], set(), 5) == 0.0
    assert metrics.percentile([], 50) == 0.0
    assert metrics.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert metrics.percentile([5.0], 95) == 5.0


def test_exact_match_is_structural_and_numeric_loose() -> None:
    assert metrics.exact_match({"sent": 3}, {"sent": 3.0, "received": 9})
    assert metrics.exact_match([["p_1", 4]], [("p_1", 4)])
    assert not metrics.exact_match({"sent": 3}, {"sent": 4})
    assert not metrics.exact_match({"missing": 1}, {"sent": 1})
    assert not metrics.exact_match([1, 2], [1])
