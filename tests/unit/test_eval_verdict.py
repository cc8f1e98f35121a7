"""The default against --literal and each leg, per category (eval.verdict), and its reports."""

from __future__ import annotations

from typing import Any

import pytest

from eval import report, verdict

KS = [5, 10, 25]


def run(mode: str, recall: dict[str, tuple[float, float, float]], n: dict[str, int],
        **kw: Any) -> dict[str, Any]:  # fmt: skip
    """A run document; `recall` maps category (or "all") to R@5/10/25."""
    lit = kw.get("literal", False)
    label = "/".join(p for p in (mode, kw.get("lexical", "lancedb"), kw.get("fuse", ""),
                                 "feedback" if kw.get("feedback") else "",
                                 "literal" if lit else "") if p)  # fmt: skip

    def metrics(values: tuple[float, float, float]) -> dict[str, float]:
        return {f"message_recall@{k}": v for k, v in zip(KS, values, strict=True)}

    return {
        "label": label, "mode": mode, "lexical": "lancedb", "rerank": False, "unit": "3x1",
        "embedder": "m", "literal": False, "fuse": "convex", "feedback": False,
        "questions": sum(n.values()),
        "metrics": metrics(recall["all"]),
        "by_category": {c: {**metrics(v), "questions": float(n[c])}
                        for c, v in recall.items() if c != "all"},
        "latency_ms": {"p50": 1.0, "p95": 2.0},
        **kw,
    }  # fmt: skip


N = {"when/plain": 3, "open/plain": 1}


def doc_with(default_when10: float) -> dict[str, Any]:
    same = {"all": (0.5, 0.6, 0.7), "when/plain": (0.5, 0.6, 0.7), "open/plain": (0.5, 0.6, 0.7)}
    mine = {**same, "when/plain": (0.5, default_when10, 0.7)}
    return {
        "dataset": "x", "split": "tune", "created": "now", "questions": 4,
        "scored_questions": 4, "ks": KS,
        "runs": [
            run("hybrid", mine, N),
            run("hybrid", same, N, literal=True),
            run("bm25", same, N),
            run("vector", {**same, "all": (0.504, 0.6, 0.7)}, N),  # within half a point
            run("bm25", {**same, "when/plain": (0.5, 0.63, 0.7)}, N, literal=True),
            run("vector", same, N, literal=True),
            # ablations and another backend are no rivals of the default
            run("hybrid", {**same, "all": (0.9, 0.9, 0.9)}, N, fuse="rrf", literal=True),
            run("hybrid", {**same, "all": (0.9, 0.9, 0.9)}, N, feedback=True),
            run("bm25", {**same, "all": (0.9, 0.9, 0.9)}, N, lexical="rank-bm25"),
        ],
    }  # fmt: skip


def test_a_loss_is_a_cell_more_than_half_a_point_below_a_rival() -> None:
    (table,) = verdict.compare(doc_with(0.6))
    assert table.roles == verdict.ROLES
    assert [r.category for r in table.rows] == ["all", "open/plain", "when/plain"]
    (loss,) = table.losses
    assert (loss.category, loss.k, loss.rival) == ("when/plain", 10, "bm25 literal")
    assert loss.margin == pytest.approx(-0.03)
    (clean,) = verdict.compare(doc_with(0.63))
    assert clean.losses == []  # a tie is no loss


def test_merge_weights_each_half_by_its_questions() -> None:
    a, b = doc_with(0.6), doc_with(0.9)
    for r in b["runs"]:  # the report half: 1 question, in a category of its own
        r["questions"] = 1
        r["metrics"] = {**r["metrics"], "message_recall@5": 1.0}
        r["by_category"] = {"spread/plain": {**r["metrics"], "questions": 1.0}}
    b["questions"] = b["scored_questions"] = 1
    b["split"] = "report"
    whole = verdict.merge([a, b])
    default = whole["runs"][0]
    assert whole["split"] == "tune+report" and whole["scored_questions"] == 5
    assert default["questions"] == 5
    assert default["metrics"]["message_recall@5"] == pytest.approx((4 * 0.5 + 1.0) / 5)
    assert default["by_category"]["when/plain"]["message_recall@10"] == pytest.approx(0.6)
    assert default["by_category"]["spread/plain"]["questions"] == 1
    assert [r["label"] for r in whole["runs"]] == [r["label"] for r in a["runs"]]


def test_reports_show_the_table_and_the_losses_with_each_half() -> None:
    tune, report_half = doc_with(0.6), doc_with(0.63)
    text = report.to_markdown(tune)
    assert "## default against --literal and each leg: hybrid/lancedb" in text
    assert "| when/plain (3) | 50.0 / 60.0 / 70.0 |" in text
    assert "R@10 < bm25 literal 63.0 (-3.0)" in text
    entry = {"dataset": "texting", "style": "first person", "seconds": 12.0, "load": (1.0, 2.0),
             "doc": verdict.merge([tune, report_half]),
             "halves": {"tune": tune, "report": report_half}}  # fmt: skip
    skipped = {"dataset": "locomo", "style": "first person", "skipped": "no LoCoMo data file found"}
    suite = report.suite_markdown([entry, skipped], {})
    loss_rows = [line for line in suite.splitlines() if line.startswith("| texting |")]
    (row,) = [line for line in loss_rows if "R@10" in line]
    assert "when/plain (6) | R@10 | 61.5 | bm25 literal 63.0 | -1.5 | – | -3.0 | ok |" in row
    assert "skipped: no LoCoMo data file found" in suite
