"""Replay an eval set through today's search code with every leg's result kept from a first run.

Tuning search means scoring the same questions many times with small changes to how the legs
are read, fused or ordered. The legs themselves (LanceDB full-text queries, the vector scan,
the query embedding) are what costs; fusing is microseconds. `LegMemo` wraps the chunk index
so each leg is searched once per argument set and kept on disk; a replay then runs the real
`Retriever` (so what is measured is the code as it is) and only a leg it has never asked for
(a new reading of the question) reaches LanceDB. Replaying unchanged code reproduces a real
`casper eval` run to the digit.

    python -m eval.replay --home DIR --dataset realtalk [--split tune] [--roles default,literal]
        [--save NAME] [--against NAME]

`--save` keeps the figures under CASPER_HOME/eval/replay/<dataset>/NAME.json; `--against`
prints the change from a saved one, per category. The indexes are the ones `casper eval`
builds (3-message passages, the configured embedder); the first replay builds them if needed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from casper.app import runtime
from casper.app.runtime import open_store
from casper.config import Config, load_config
from casper.vocab import Mode
from eval import harness, metrics, reader, verdict
from eval.variants import Corpus, RunSpec, ensure_index, make_search, variant_config

KS = verdict.VERDICT_KS
# role → how it searches: (mode, literal)
ROLES: dict[str, tuple[Mode, bool]] = {
    "default": ("hybrid", False),
    "literal": ("hybrid", True),
    "bm25": ("bm25", False),
    "vector": ("vector", False),
    "bm25 literal": ("bm25", True),
    "vector literal": ("vector", True),
}


class LegMemo:
    """A ChunkIndex whose search legs (and chunk metadata) answer from a dict once asked."""

    def __init__(self, index: Any, store: dict[tuple[Any, ...], Any]) -> None:
        self._index = index
        self.memo = store
        self.misses = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def _get(self, key: tuple[Any, ...], run: Callable[[], Any]) -> Any:
        if key not in self.memo:
            self.misses += 1
            self.memo[key] = run()
        return self.memo[key]

    def vector_search(self, vec: Any, n: int, where: Any = None) -> Any:
        digest = hashlib.sha1(vec.tobytes()).hexdigest()
        return self._get(("vector", digest, n, where),
                         lambda: self._index.vector_search(vec, n, where))  # fmt: skip

    def fts_search(self, query: str, n: int, where: Any = None) -> Any:
        return self._get(("fts", query, n, where), lambda: self._index.fts_search(query, n, where))

    def ngram_search(self, query: str, n: int, where: Any = None) -> Any:
        return self._get(("ngram", query, n, where),
                         lambda: self._index.ngram_search(query, n, where))  # fmt: skip

    def dates_search(self, terms: Sequence[str], n: int, where: Any = None) -> Any:
        return self._get(("dates", tuple(terms), n, where),
                         lambda: self._index.dates_search(terms, n, where))  # fmt: skip

    def chunk_meta(self, ids: Sequence[str]) -> Any:
        missing = [i for i in ids if ("meta", i) not in self.memo]
        if missing:
            self.misses += 1
            found = self._index.chunk_meta(missing)
            for i in missing:
                self.memo[("meta", i)] = found.get(i)
        return {i: m for i in ids if (m := self.memo[("meta", i)]) is not None}


class VectorMemo:
    """The query embedder, each text embedded once and kept with the legs."""

    def __init__(self, inner: Any, store: dict[tuple[Any, ...], Any]) -> None:
        self.inner, self.memo = inner, store
        self.name, self.dim = inner.name, inner.dim
        self.checksum = getattr(inner, "checksum", "")

    def embed_query(self, text: str) -> Any:
        key = ("embed", text)
        if key not in self.memo:
            self.memo[key] = self.inner.embed_query(text)
        return self.memo[key]

    def embed_documents(self, texts: Sequence[str], *a: Any, **kw: Any) -> Any:
        return self.inner.embed_documents(texts, *a, **kw)


def _memo_path(cfg: Config, corpus: Corpus) -> Path:
    assert corpus.root is not None
    return corpus.root / "replay-legs.pickle"


def replay_corpus(
    cfg: Config,
    corpus: Corpus,
    roles: Sequence[str],
    embedder: Any,
    tweak: Callable[[Any], None] | None = None,
) -> dict[str, list[tuple[str | None, dict[str, float], str]]]:
    """{role: [(category, scores, question id)]} for one corpus, legs kept in its folder;
    `tweak` may change the Retriever before it searches (an experiment's settings)."""
    spec = RunSpec("hybrid", chunk_size=3, chunk_stride=1, embed_model=cfg.embed_model)
    vcfg = variant_config(cfg, corpus, spec)
    ensure_index(vcfg)
    path = _memo_path(cfg, corpus)
    stamp = (vcfg.index_dir / "manifest.json").read_bytes() if (vcfg.index_dir / "manifest.json"
                                                                ).exists() else b""  # fmt: skip
    memo: dict[tuple[Any, ...], Any] = {}
    if path.exists():
        saved = pickle.loads(path.read_bytes())
        if saved.get("stamp") == stamp:
            memo = saved["memo"]
    store = open_store(vcfg)
    out: dict[str, list[tuple[str | None, dict[str, float], str]]] = {}
    try:
        vectors = VectorMemo(embedder, memo)
        search = make_search(vcfg, store, vectors, None, max_k=max(KS), spec=spec)
        legs = LegMemo(search.index, memo)
        search.index = legs  # type: ignore[assignment]  # a ChunkIndex in all it is asked
        if tweak is not None:
            tweak(search)
        scored = [i for i in corpus.items if i.answerable]
        guid_of = dict(store.conn.execute("SELECT rowid, guid FROM messages"))
        for role in roles:
            mode, literal = ROLES[role]
            rows = []
            for item in scored:
                result = search.search(item.question, k=max(KS), mode=mode, rerank=False,
                                       literal=literal)  # fmt: skip
                chunks = [[m.guid for m in hit.messages] for hit in result.hits]
                ranked = reader.ranked_messages(result, guid_of)
                row = metrics.score_question(chunks, item.relevant, KS, messages=ranked)
                row.update(reader.score_hits(result.hits, item.relevant, item.expected))
                rows.append((item.category, row, item.id))
            out[role] = rows
        if legs.misses:
            path.write_bytes(pickle.dumps({"stamp": stamp, "memo": memo}))
    finally:
        store.close()
    return out


def figures(
    rows: dict[str, list[tuple[str | None, dict[str, float], str]]],
    groups: dict[str, Any],
) -> dict[str, dict[str, dict[str, float]]]:
    """{role: {category: {"message_recall@k": …, "questions": n}}}, "all" included."""
    out = {}
    for role, scored in rows.items():
        overall, by_cat = metrics.aggregate([(c, s) for c, s, _ in scored], groups)
        out[role] = {verdict.ALL: {**overall, "questions": len(scored)}, **by_cat}
    return out


def as_doc(dataset: str, figs: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """The figures as an eval run document, so `verdict.compare` reads them."""
    runs = []
    for role, cats in figs.items():
        mode, literal = ROLES[role]
        runs.append({
            "label": role, "mode": mode, "literal": literal, "lexical": "lancedb",
            "unit": "3x1", "embedder": "e", "rerank": False, "fuse": None, "feedback": False,
            "questions": int(cats[verdict.ALL]["questions"]),
            "metrics": cats[verdict.ALL],
            "by_category": {c: v for c, v in cats.items() if c != verdict.ALL},
        })  # fmt: skip
    return {"dataset": dataset, "ks": list(KS), "runs": runs}


def table(figs: dict[str, dict[str, dict[str, float]]], against: dict[str, Any] | None) -> str:
    """One line per role × category: R@5/10/25 (and the change from `against`)."""
    lines = []
    for role, cats in figs.items():
        for cat in sorted(cats, key=lambda c: (c != verdict.ALL, c)):
            m = cats[cat]
            cell = " / ".join(f"{100 * m.get(f'message_recall@{k}', 0):5.1f}" for k in KS)
            line = f"{role:15s} {cat:28s} ({int(m.get('questions', 0)):4d}) {cell}"
            old = (against or {}).get(role, {}).get(cat)
            if old:
                delta = [100 * (m.get(f"message_recall@{k}", 0) - old.get(f"message_recall@{k}", 0))
                         for k in KS]  # fmt: skip
                if any(abs(d) >= 0.05 for d in delta):
                    line += "   Δ " + " / ".join(f"{d:+5.1f}" for d in delta)
            lines.append(line)
    return "\n".join(lines)


def run(
    cfg: Config,
    dataset: str,
    split: str,
    roles: Sequence[str],
    tweak: Callable[[Any], None] | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, float]]], float]:
    corpora, _ = harness.load_dataset(cfg, dataset, split=split)
    embedder = runtime.make_embedder(cfg)
    started = time.perf_counter()
    rows: dict[str, list[Any]] = {r: [] for r in roles}
    for corpus in corpora:
        for role, found in replay_corpus(cfg, corpus, roles, embedder, tweak).items():
            rows[role] += found
    groups = {k: v for c in corpora for k, v in c.groups.items()}
    figs = figures(rows, groups)
    per_question = {role: {qid: s for _, s, qid in found} for role, found in rows.items()}
    return per_question, figs, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.replay", description=__doc__)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--dataset", default="realtalk")
    parser.add_argument("--split", default="all")
    parser.add_argument("--roles", default=",".join(ROLES))
    parser.add_argument("--save", default=None, help="keep these figures under this name")
    parser.add_argument("--against", default=None, help="show the change from a saved name")
    parser.add_argument("--quiet", action="store_true", help="changed cells and verdict only")
    args = parser.parse_args(argv)
    cfg = load_config(args.home)
    roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    per_question, figs, seconds = run(cfg, args.dataset, args.split, roles)
    folder = cfg.data_dir / "eval" / "replay" / args.dataset
    folder.mkdir(parents=True, exist_ok=True)
    against = None
    saved = folder / f"{args.against}-{args.split}.json"
    if args.against and saved.is_file():
        against = json.loads(saved.read_text())["figures"]
    text = table(figs, against)
    if args.quiet:
        text = "\n".join(x for x in text.splitlines() if "Δ" in x or " all " in x)
    print(text)
    if {"default"} < set(roles):
        losses = [x for t in verdict.compare(as_doc(args.dataset, figs)) for x in t.losses]
        print(f"verdict: {len(losses)} losing cells")
        for x in losses:
            print(f"  {x.category} R@{x.k}: {100 * x.default:.1f} < {x.rival} "
                  f"{100 * x.value:.1f} ({100 * x.margin:+.1f})")  # fmt: skip
    print(f"[{seconds:.1f} s]", file=sys.stderr)
    if args.save:
        doc = {"figures": figs, "questions": per_question}
        (folder / f"{args.save}-{args.split}.json").write_text(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
