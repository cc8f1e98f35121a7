"""PURE: the report's section on what a reader gets (eval.reader's figures)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval import verdict
from eval.markdown import fmt as _fmt
from eval.markdown import table as _table

READER_NOTE = (
    "What a reader gets: the first 5 hits (what the agent's search tool shows) and the first 8 "
    "(`casper search`), every message they show counted, neighbours included. recall = share "
    "of the gold messages shown; any = at least one shown; messages = how many they show; "
    "answer words = share of the gold answer's content words in their text, over the "
    "questions whose gold gives an answer (n answered)."
)


def reader_cells(m: Mapping[str, Any]) -> list[str]:
    """recall / any / messages at 5 and 8 hits, then answer-word coverage at 5 and 8."""
    answered = float(m.get("answered", 0.0))
    cells = []
    for n in (5, 8):
        cells += [_fmt(m.get(f"reader_recall@{n}")), _fmt(m.get(f"reader_hit@{n}")),
                  _fmt(m.get(f"reader_messages@{n}"), pct=False)]  # fmt: skip
    for n in (5, 8):
        words = m.get(f"answer_words@{n}")
        cells.append(_fmt(float(words) / answered) if words is not None and answered else "–")
    return cells


READER_HEADER = ["recall @5 hits", "any @5", "messages @5", "recall @8 hits", "any @8",
                 "messages @8", "answer words @5", "answer words @8"]  # fmt: skip


def reader_section(doc: Mapping[str, Any], level: str = "##") -> list[str]:
    """The reader's figures per run and, for the default, per category (when scored)."""
    runs = [r for r in doc.get("runs", []) if "reader_recall@5" in r["metrics"]]
    if not runs:
        return []
    lines = [f"{level} what a reader gets: 5 and 8 hits", "", READER_NOTE, ""]
    body = [[r["label"], *reader_cells(r["metrics"])] for r in runs]
    lines += _table(["run", *READER_HEADER], body) + [""]
    for run in runs:
        ablation = run.get("literal") or verdict.ablated_fusion(run) or run.get("feedback", False)
        if run["mode"] != "hybrid" or ablation or len(run["by_category"]) < 2:
            continue
        lines += [f"{level}# {run['label']}: what a reader gets, by category", ""]
        body = [
            [f"{c} (n={int(m.get('questions', 0))}, answered "
             f"{round(float(m.get('answered', 0.0)) * float(m.get('questions', 0)))})",
             *reader_cells(m)]
            for c, m in sorted(run["by_category"].items())
        ]  # fmt: skip
        lines += _table(["category", *READER_HEADER], body) + [""]
    return lines


READER_KEYS = tuple(
    f"{what}@{n}" for n in (5, 8) for what in ("reader_recall", "reader_hit", "reader_messages")
)


def reader_summary(doc: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The default run's reader figures, overall and per category, for the suite's JSON:
    recall, any and messages at 5 and 8 hits, answer-word coverage over the answered
    questions, session recall@10 with its chance levels."""
    default = next((run for run, _ in verdict.roles(doc)), None)
    if default is None or "reader_recall@5" not in default["metrics"]:
        return {}
    cats = {verdict.ALL: default["metrics"], **default.get("by_category", {})}
    out = {}
    for cat, m in cats.items():
        row = {key: round(float(m[key]), 4) for key in READER_KEYS if key in m}
        answered = float(m.get("answered", 0.0))
        for n in (5, 8):
            if answered and f"answer_words@{n}" in m:
                row[f"answer_coverage@{n}"] = round(float(m[f"answer_words@{n}"]) / answered, 4)
        for key in ("session_recall@10", "session_chance@10", "session_chance_chat@10"):
            if key in m:
                row[key] = round(float(m[key]), 4)
        out[cat] = row
    return out
