"""PURE: the default search against `--literal` and each single leg, per category, at each k.

The target the search is held to: on every set, in both question styles and in every
category, the default (hybrid, query understanding on) should be at or above `--literal` hybrid
and at or above the best single leg — bm25 and vector, read and literal — within half a point
of message recall, at k = 5, 10 and 25. `compare` finds the cells where it is not; `merge`
joins the documents of the two halves of a split into the whole set (exactly: every figure is
a mean over questions, so the halves' means weighted by their question counts are the whole's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

VERDICT_KS = (5, 10, 25)
TOLERANCE = 0.005  # half a point of recall
ROLES = ("default", "literal", "bm25", "vector", "bm25 literal", "vector literal")
ALL = "all"  # the row of every question


@dataclass(frozen=True, slots=True)
class Loss:
    """One cell where the default is more than TOLERANCE below a rival."""

    category: str
    k: int
    rival: str
    default: float
    value: float

    @property
    def margin(self) -> float:
        return self.default - self.value


@dataclass(slots=True)
class Row:
    category: str
    questions: int
    recall: dict[str, dict[int, float]]  # role → k → message recall
    losses: list[Loss] = field(default_factory=list)


@dataclass(slots=True)
class Table:
    """One default run (a unit × embedder) against its rivals, category by category."""

    label: str
    ks: tuple[int, ...]
    roles: tuple[str, ...]  # the roles the document has runs for, in ROLES order
    rows: list[Row]

    @property
    def losses(self) -> list[Loss]:
        return [loss for row in self.rows for loss in row.losses]


def _plain(run: Mapping[str, Any]) -> bool:
    return not (run.get("rerank") or run.get("feedback") or ablated_fusion(run))


def ablated_fusion(run: Mapping[str, Any]) -> bool:
    """A run fused otherwise than configured (the RRF ablation); runs saved before `fuse` could
    be None (the configured fusion) say "convex" for theirs."""
    return run.get("fuse") not in (None, "convex")


def roles(doc: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], dict[str, Mapping[str, Any]]]]:
    """(default run, {role: run}) for each default hybrid run of the document: its rivals are
    the runs on the same unit and embedder, BM25 on the same lexical backend."""
    runs = [r for r in doc.get("runs", []) if _plain(r)]
    out = []
    for run in runs:
        if run["mode"] != "hybrid" or run.get("literal"):
            continue
        same = [r for r in runs if (r["unit"], r["embedder"]) == (run["unit"], run["embedder"])]
        found: dict[str, Mapping[str, Any]] = {}
        for r in same:
            lit = " literal" if r.get("literal") else ""
            if r["mode"] == "hybrid" and r["lexical"] == run["lexical"]:
                found["literal" if lit else "default"] = r
            elif r["mode"] == "bm25" and r["lexical"] == run["lexical"]:
                found[f"bm25{lit}"] = r
            elif r["mode"] == "vector":
                found[f"vector{lit}"] = r
        out.append((run, found))
    return out


def _order(category: str) -> tuple[int, str]:
    """All first, then pooled and plain categories, then the fine `kind/tags` ones."""
    return (0 if category == ALL else 1 if "/" not in category else 2, category)


def compare(
    doc: Mapping[str, Any], ks: Sequence[int] = VERDICT_KS, tolerance: float = TOLERANCE
) -> list[Table]:
    """A Table per default run: every category's recall by role and the cells it loses."""
    have = [k for k in ks if k in doc.get("ks", [])] or list(doc.get("ks", []))
    tables = []
    for default, found in roles(doc):
        present = tuple(r for r in ROLES if r in found)
        cats = {ALL: default["metrics"], **default.get("by_category", {})}
        rows = []
        for cat in sorted(cats, key=_order):
            recall = {
                role: {
                    k: float(_metrics(found[role], cat).get(f"message_recall@{k}", 0.0))
                    for k in have
                }
                for role in present
            }
            n = int(default.get("questions", 0) if cat == ALL else cats[cat].get("questions", 0))
            row = Row(cat, n, recall)
            for k in have:
                mine = recall["default"][k]
                for rival in present[1:]:
                    if recall[rival][k] > mine + tolerance:
                        row.losses.append(Loss(cat, k, rival, mine, recall[rival][k]))
            rows.append(row)
        tables.append(Table(default["label"], tuple(have), present, rows))
    return tables


def cells(losses: Sequence[Loss]) -> dict[tuple[str, int], list[Loss]]:
    """Losses by cell (category, k), each cell's worst first."""
    out: dict[tuple[str, int], list[Loss]] = {}
    for loss in losses:
        out.setdefault((loss.category, loss.k), []).append(loss)
    return {cell: sorted(found, key=lambda x: x.margin) for cell, found in out.items()}


def _metrics(run: Mapping[str, Any], category: str) -> Mapping[str, Any]:
    return run["metrics"] if category == ALL else run.get("by_category", {}).get(category, {})


def _weighted(parts: Sequence[tuple[Mapping[str, Any], float]]) -> dict[str, float]:
    total = sum(n for _, n in parts)
    keys = list(dict.fromkeys(k for m, _ in parts for k in m if k != "questions"))
    if not total:
        return {k: 0.0 for k in keys}
    return {k: sum(float(m.get(k, 0.0)) * n for m, n in parts) / total for k in keys}


def merge(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run document of the whole set from the documents of its disjoint halves: runs are
    matched by label; means are weighted by question counts, overall and per category."""
    first = docs[0]
    labels = [r["label"] for r in first.get("runs", [])]
    runs = []
    for label in labels:
        parts = [next(r for r in d["runs"] if r["label"] == label) for d in docs]
        cats = list(dict.fromkeys(c for p in parts for c in p.get("by_category", {})))
        by_category = {}
        for cat in cats:
            pieces = [
                (p["by_category"][cat], float(p["by_category"][cat].get("questions", 0)))
                for p in parts
                if cat in p.get("by_category", {})
            ]
            by_category[cat] = {**_weighted(pieces), "questions": sum(n for _, n in pieces)}
        overall = _weighted([(p["metrics"], float(p.get("questions", 0))) for p in parts])
        latency = {q: max(p["latency_ms"][q] for p in parts) for q in ("p50", "p95")}
        runs.append(
            {
                **{k: v for k, v in parts[0].items() if k not in ("indexes", "latency_ms")},
                "questions": sum(int(p.get("questions", 0)) for p in parts),
                "metrics": overall,
                "by_category": by_category,
                "latency_ms": latency,  # the slower half's: percentiles do not add up
            }
        )
    return {
        "dataset": first["dataset"],
        "split": "+".join(str(d.get("split", "all")) for d in docs),
        "created": max(str(d.get("created", "")) for d in docs),
        "questions": sum(int(d.get("questions", 0)) for d in docs),
        "scored_questions": sum(int(d.get("scored_questions", 0)) for d in docs),
        "ks": first.get("ks", []),
        "info": first.get("info", {}),
        "runs": runs,
        "skipped": first.get("skipped", []),
        "elapsed_s": round(sum(float(d.get("elapsed_s", 0.0)) for d in docs), 2),
    }
