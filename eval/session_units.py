"""Conversation sessions as a second retrieval unit beside the 3-message passages.

A session is a run of one chat's messages with no pause longer than `gap_hours` between two of
them (where a texting chat goes quiet). It is scored as one document, the way memory systems
that publish session-level recall store a conversation: its text embedded whole (the embedder
truncates it, as theirs does) and BM25 over all its words. Measured here, on the indexes
`casper eval` builds, against the default passages:

- `passages`: the default search (hybrid, question read), unchanged;
- `sessions`: the session unit alone, a session hit mapped back to all its messages;
- `pooled`: sessions ranked by their passages' scores (sum of their best three), no new unit;
- `fused w`: each passage's score moved toward its session's score with weight `w` (both
  min-max normalised), so a passage inside a session that matches as a whole rises.

`python -m eval.session_units --dataset locomo --split tune [--gap-hours 4] [--weights ...]`
prints message recall (R@5/10/25) and session-level recall (the dataset's sessions) per
category for each. An eval variant, not the default (docs/retrieval.md, "Sessions as a unit").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from casper.app.runtime import make_embedder, open_store
from casper.config import load_config
from casper.index.lexical import tokenize
from casper.records import ME
from eval import metrics
from eval.harness import load_dataset
from eval.variants import RunSpec, ensure_index, make_search, variant_config

GAP_HOURS = 4.0
POOL_TOP = 3  # a session's pooled score: the sum of its best passages' scores
WEIGHTS = (0.1, 0.2, 0.3, 0.5)
VECTOR_WEIGHT = 0.4  # the session unit's own legs, fused as the passages' are
KS = (5, 10, 25)


# ---- pure ---------------------------------------------------------------------------------------
def split_by_gap(
    rows: Sequence[tuple[float, str]], gap_s: float, prefix: str = ""
) -> dict[str, str]:
    """Message guid → session key: a new session starts after a pause longer than `gap_s`.
    `rows` are one chat's `(ts, guid)` in time order."""
    out: dict[str, str] = {}
    n, last = 0, None
    for ts, guid in rows:
        if last is not None and ts - last > gap_s:
            n += 1
        out[guid] = f"{prefix}{n}"
        last = ts
    return out


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores scaled to 0…1 (all 1.0 when they are equal)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    return {k: (v - lo) / span if span > 0 else 1.0 for k, v in scores.items()}


def pooled(
    passages: Sequence[tuple[float, Sequence[str]]], session: Mapping[str, str]
) -> dict[str, float]:
    """Session → the sum of its best POOL_TOP passage scores (a passage counts for the session
    of its first message)."""
    by: dict[str, list[float]] = {}
    for score, guids in passages:
        key = next((session[g] for g in guids if g in session), None)
        if key is not None:
            by.setdefault(key, []).append(score)
    return {k: sum(sorted(v, reverse=True)[:POOL_TOP]) for k, v in by.items()}


def fuse(
    passages: Sequence[tuple[float, Sequence[str]]],
    session: Mapping[str, str],
    session_scores: Mapping[str, float],
    weight: float,
) -> list[Sequence[str]]:
    """Passages reordered by (1 − w) × their score + w × their session's (both min-max)."""
    own = minmax({str(i): s for i, (s, _) in enumerate(passages)})
    whole = minmax(dict(session_scores))
    scored = []
    for i, (_, guids) in enumerate(passages):
        key = next((session[g] for g in guids if g in session), None)
        bonus = whole.get(key, 0.0) if key is not None else 0.0
        scored.append(((1 - weight) * own[str(i)] + weight * bonus, -i, guids))
    scored.sort(key=lambda t: (t[0], t[1]), reverse=True)
    return [g for _, _, g in scored]


def as_chunks(ranked: Sequence[str], members: Mapping[str, Sequence[str]]) -> list[Sequence[str]]:
    """Ranked session keys → their messages, one chunk per session (chat order inside)."""
    return [members[k] for k in ranked if k in members]


# ---- the run ------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Sessions:
    of: dict[str, str]  # guid → session key
    members: dict[str, list[str]]  # session key → guids in time order
    texts: dict[str, str]


def corpus_sessions(store: Any, gap_s: float) -> _Sessions:
    """Every chat of the store cut at pauses longer than `gap_s`."""
    of: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    lines: dict[str, list[str]] = {}
    for chat_id in sorted(store.chat_sizes()):
        rows = store.searchable_rows(chat_id)
        keys = split_by_gap([(r[0], r[4]) for r in rows], gap_s, prefix=f"{chat_id}:")
        for _ts, _rowid, sender, text, guid in rows:
            key = keys[guid]
            of[guid] = key
            members.setdefault(key, []).append(guid)
            lines.setdefault(key, []).append(f"{'me' if sender == ME else 'them'}: {text}")
    return _Sessions(of, members, {k: "\n".join(v) for k, v in lines.items()})


def _session_unit(sessions: _Sessions, embedder: Any) -> tuple[list[str], Any, Any]:
    """(keys, BM25 over their texts, their vectors)."""
    from rank_bm25 import BM25Okapi  # only a run that scores sessions fits one (as in lexical.py)

    keys = list(sessions.texts)
    bm25 = BM25Okapi([tokenize(sessions.texts[k]) or ["_"] for k in keys])
    vectors = np.asarray(embedder.embed_documents([sessions.texts[k] for k in keys]), "float32")
    return keys, bm25, vectors


def _unit_scores(
    keys: Sequence[str], bm25: Any, vectors: Any, query_vec: Any, words: Sequence[str]
) -> dict[str, float]:
    cos = vectors @ np.asarray(query_vec, "float32").reshape(-1)
    lex = bm25.get_scores(tokenize(" ".join(words))) if words else np.zeros(len(keys))
    v = minmax(dict(zip(keys, map(float, cos), strict=True)))
    b = minmax(dict(zip(keys, map(float, lex), strict=True)))
    return {k: VECTOR_WEIGHT * v[k] + (1 - VECTOR_WEIGHT) * b[k] for k in keys}


def run(
    dataset: str, split: str, gap_hours: float, weights: Sequence[float], home: Path | None
) -> dict[str, Any]:
    """Every variant's rows `(category, scores)`, scored like `casper eval` scores its runs."""
    cfg = load_config(data_dir=home)
    corpora, _info = load_dataset(cfg, dataset, split=split)
    embedder = make_embedder(cfg)
    spec = RunSpec("hybrid", chunk_size=3, chunk_stride=1, embed_model=cfg.embed_model)
    rows: dict[str, list[tuple[str | None, dict[str, float]]]] = {}
    units: list[int] = []
    for corpus in corpora:
        vcfg = variant_config(cfg, corpus, spec)
        ensure_index(vcfg)
        store = open_store(vcfg)
        try:
            sessions = corpus_sessions(store, gap_hours * 3600)
            units.append(len(sessions.members))
            keys, bm25, vectors = _session_unit(sessions, embedder)
            search = make_search(variant_config(cfg, corpus, spec), store, embedder, None,
                                 max_k=50, spec=spec)  # fmt: skip
            for item in corpus.items:
                if not item.answerable:
                    continue
                found = search.search(item.question, k=50, mode="hybrid", rerank=False)
                passages = [(h.score, [m.guid for m in h.messages]) for h in found.hits]
                unit = _unit_scores(
                    keys, bm25, vectors, embedder.embed_query(item.question), found.words
                )
                pool = pooled(passages, sessions.of)
                ranked_unit = sorted(unit, key=lambda k: -unit[k])
                ranked_pool = sorted(pool, key=lambda k: -pool[k])
                variants: dict[str, list[Sequence[str]]] = {
                    "passages": [g for _, g in passages],
                    "sessions": as_chunks(ranked_unit, sessions.members),
                    "pooled": as_chunks(ranked_pool, sessions.members),
                }
                for w in weights:
                    variants[f"fused {w:g}"] = fuse(passages, sessions.of, unit, w)
                    variants[f"fused-pooled {w:g}"] = fuse(passages, sessions.of, pool, w)
                for name, chunks in variants.items():
                    scored = metrics.score_question(chunks, item.relevant, KS, corpus.session_of)
                    rows.setdefault(name, []).append((item.category, scored))
        finally:
            store.close()
    groups = {k: v for c in corpora for k, v in c.groups.items()}
    out: dict[str, Any] = {"dataset": dataset, "split": split, "gap_hours": gap_hours,
                           "sessions": units, "variants": {}}  # fmt: skip
    for name, scored_rows in rows.items():
        overall, by_category = metrics.aggregate(scored_rows, groups)
        out["variants"][name] = {"all": overall, **by_category}
    return out


COLUMNS = ("message_recall@5", "message_recall@10", "message_recall@25", "session_recall@5",
           "session_recall@10", "session_any@10", "session_all@10")  # fmt: skip


def to_markdown(doc: Mapping[str, Any]) -> str:
    """One table: variant × category, the COLUMNS in percent."""
    head = ["variant", "category", "msg R@5", "R@10", "R@25", "sess R@5", "R@10", "any@10",
            "all@10"]  # fmt: skip
    lines = [
        f"{doc['dataset']} ({doc['split']}), sessions cut at pauses > {doc['gap_hours']:g} h: "
        f"{sum(doc['sessions'])} sessions",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, cats in doc["variants"].items():
        for cat, m in cats.items():
            cells = [f"{100 * m.get(c, 0.0):.1f}" for c in COLUMNS]
            lines.append(f"| {name} | {cat} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.session_units", description=__doc__)
    parser.add_argument("--dataset", default="locomo")
    parser.add_argument("--split", default="tune")
    parser.add_argument("--gap-hours", type=float, default=GAP_HOURS)
    parser.add_argument("--weights", type=float, nargs="*", default=list(WEIGHTS))
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    doc = run(args.dataset, args.split, args.gap_hours, args.weights, args.home)
    if args.json is not None:
        args.json.write_text(json.dumps(doc, indent=1))
    sys.stdout.write(to_markdown(doc) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
