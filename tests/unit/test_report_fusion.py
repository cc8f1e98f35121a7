"""The eval report's fusion check: each hybrid run against the better of its own legs."""

from __future__ import annotations

from typing import Any

import pytest

from eval.report import hybrid_vs_legs, to_markdown


def run(mode: str, r5: float, r10: float, **kw: Any) -> dict[str, Any]:
    base = {
        "label": f"{mode}{'/literal' if kw.get('literal') else ''}",
        "mode": mode,
        "lexical": "lancedb",
        "rerank": False,
        "unit": "3x1",
        "embedder": "m",
        "literal": False,
        "fuse": "convex",
        "metrics": {"message_recall@5": r5, "message_recall@10": r10},
        "by_category": {
            "temporal": {"message_recall@5": r5, "message_recall@10": r10, "questions": 2.0},
            "multi-hop": {"message_recall@5": r5, "message_recall@10": r10, "questions": 1.0},
        },
        "latency_ms": {"p50": 1.0, "p95": 2.0},
    }
    return {**base, **kw}


def test_hybrid_is_compared_with_its_own_legs_only() -> None:
    doc = {
        "ks": [5, 10],
        "runs": [
            run("bm25", 0.6, 0.7),
            run("vector", 0.5, 0.75),
            run("hybrid", 0.65, 0.72),
            run("bm25", 0.9, 0.9, lexical="rank-bm25"),  # another backend: not its leg
            run("bm25", 0.1, 0.1, literal=True),  # another reading: not its leg
        ],
    }
    (row,) = hybrid_vs_legs(doc)
    assert row["ks"][5]["best_leg"] == "bm25"
    assert row["ks"][5]["margin"] == pytest.approx(0.05)
    assert row["ks"][10]["best_leg"] == "vector"
    assert row["ks"][10]["margin"] == pytest.approx(-0.03)  # fusion lost at k=10
    text = to_markdown({**doc, "dataset": "x", "created": "now", "questions": 3,
                        "scored_questions": 3})  # fmt: skip
    assert "72.0 vs vector 75.0 (-3.0)" in text
    assert "### hybrid: message recall by category" in text
    assert "| temporal (n=2) | 65.0 | 72.0 |" in text
