"""Retrieval latency on synthetic corpora: vector, BM25 (LanceDB FTS, rank-bm25), hybrid.

Run `python -m bench.retrieval [--sizes 10000,100000] [--queries 50]`. Writes
bench/results/retrieval.json and retrieval.md. Vectors are random unit vectors around topic
centroids (real embeddings cluster; isotropic noise is reported separately as the worst case).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from casper.index.chunk_index import ChunkIndex, Filter
from casper.index.lexical import SIDECAR, RankBM25Index
from casper.index.vectors import VectorMatrix
from casper.indexer.chunking import chunker_signature
from casper.records import Chunk
from casper.search.query import Reader
from casper.search.retriever import Retriever
from eval.ablation import AblationRetriever
from eval.feedback import FEEDBACK_TERMS

RESULTS = Path(__file__).parent / "results"
DIM = 384
DAY = 86400.0
T_START = 1.55e9  # 2019-02; corpora span five years
_STOP = (
    "the a to i you and it is that of in for me on my we be at so do was have just no not what "
    "this are can but with get if all up like go know will got out now lol ok yes"
)
STOPWORDS = _STOP.split()
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["sh", "th", "ch"]
# Hook(context) -> extra metrics merged into a size's results (rerank, embedding throughput)
Hook = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(slots=True)
class Corpus:
    chunks: list[Chunk]
    vectors: np.ndarray
    queries: list[str]
    query_vectors: np.ndarray
    person: str  # a frequent contact, for the filtered runs
    since: float
    until: float


def vocabulary(rng: np.random.Generator, size: int = 30_000) -> list[str]:
    """Stop words first, then unique pseudo-words of 2–4 syllables."""
    words: dict[str, None] = dict.fromkeys(STOPWORDS)
    while len(words) < size:
        n = int(rng.integers(2, 5))
        words["".join(rng.choice(SYLLABLES, n))] = None
    return list(words)


def make_corpus(n: int, seed: int = 7, n_queries: int = 50) -> Corpus:
    """n chunks of chat-like text with clustered vectors, members, and 5 years of timestamps."""
    rng = np.random.default_rng(seed)
    vocab = np.array(vocabulary(rng))
    zipf = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    zipf /= zipf.sum()
    people = [f"p_{i:04d}" for i in range(300)]
    members = [(p,) for p in people] + [
        tuple(rng.choice(people, int(rng.integers(3, 7)), replace=False)) for _ in range(300)
    ]
    chat_weight = 1.0 / np.arange(1, len(members) + 1) ** 0.9
    chat_of = rng.choice(len(members), n, p=chat_weight / chat_weight.sum())
    lengths = rng.integers(20, 90, n)
    words = rng.choice(vocab, int(lengths.sum()), p=zipf)
    starts = np.sort(rng.uniform(T_START, T_START + 5 * 365 * DAY, n))
    ends = starts + rng.uniform(60, 3 * 3600, n)
    chunks: list[Chunk] = []
    pos = 0
    for i in range(n):
        body = words[pos : pos + lengths[i]]
        pos += lengths[i]
        lines = [f"me: {' '.join(body[j : j + 9])}" for j in range(0, len(body), 9)]
        text = "\n".join(lines)
        chat = int(chat_of[i])
        chunks.append(
            Chunk(
                id=f"{chat}:{i * 8}:{i * 8 + 7}:8x4",
                chat_id=chat,
                chat_name=f"chat {chat}",
                participants=("me",),
                person_ids=members[chat],
                start=float(starts[i]),
                end=float(ends[i]),
                rowids=tuple(range(i * 8, i * 8 + 8)),
                guids=(),
                text=text,
                embed_text=f"chat {chat}\n{text}",
                content_hash=str(i),
                dates=_mentioned(rng, starts[i]) if i % 5 == 0 else "",
            )  # fmt: skip
        )
    vectors, qvecs = embeddings_like(rng, n, n_queries)
    mid = vocab[200:5000]
    queries = [" ".join(rng.choice(mid, int(rng.integers(2, 4)))) for _ in range(n_queries)]
    person = members[0][0]  # the busiest 1:1 chat's person
    since = float(starts[n // 2])
    return Corpus(chunks, vectors, queries, qvecs, person, since, since + 365 * DAY)


def _mentioned(rng: np.random.Generator, start: float) -> str:
    """Date terms like a message's (casper.dates.mentions): a day within 60 days of it."""
    day = datetime.fromtimestamp(start + float(rng.uniform(-60, 60)) * DAY, UTC).date()
    return f"d{day:%Y%m%d} md{day:%m%d} m{day:%Y%m} y{day:%Y}"


def embeddings_like(
    rng: np.random.Generator, n: int, n_queries: int
) -> tuple[np.ndarray, np.ndarray]:
    """Clustered unit vectors with a 1/i eigen-spectrum, and queries near random documents.

    Calibrated on 20k all-MiniLM-L6-v2 chat-style embeddings: those put 51% of the variance
    in 16 components and gave mean top-1/10/50 query cosines of 0.60/0.52/0.46; these give
    49% and 0.64/0.53/0.48. (Isotropic noise, the ANN worst case, is reported separately.)
    """
    scale = np.sqrt(1.0 / np.arange(1, DIM + 1))
    rotation, _ = np.linalg.qr(rng.standard_normal((DIM, DIM)))
    centroids = (rng.standard_normal((1000, DIM)) * scale) @ rotation.T
    vectors = np.empty((n, DIM), dtype=np.float32)
    for lo in range(0, n, 50_000):
        m = min(50_000, n - lo)
        noise = (rng.standard_normal((m, DIM)) * scale) @ rotation.T
        vectors[lo : lo + m] = _unit(centroids[rng.integers(0, 1000, m)] + 0.8 * noise)
    noise = (rng.standard_normal((n_queries, DIM)) * scale) @ rotation.T
    queries = _unit(vectors[rng.integers(0, n, n_queries)] + 0.5 * noise)
    return vectors, queries


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class TableEmbedder:
    """Returns the precomputed vector of each benchmark query (no model in the timing)."""

    name = "bench"
    checksum = "bench"

    def __init__(self, queries: Sequence[str], vectors: np.ndarray) -> None:
        self.dim = vectors.shape[1]
        self._table = dict(zip(queries, vectors, strict=True))

    def embed_query(self, text: str) -> np.ndarray:
        if text in self._table:
            return self._table[text]
        # a rewritten question (query understanding): any stored vector times the same
        keys = list(self._table)
        return self._table[keys[sum(map(ord, text)) % len(keys)]]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError


def timed(fn: Callable[[Any], Any], inputs: Sequence[Any], warmup: int = 2) -> dict[str, float]:
    """p50/p95/mean in ms of fn over inputs (after a warm-up)."""
    for item in inputs[:warmup]:
        fn(item)
    samples = []
    for item in inputs:
        t = time.perf_counter()
        fn(item)
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))]
    return {"p50": round(statistics.median(samples), 2), "p95": round(p95, 2),
            "mean": round(statistics.fmean(samples), 2)}  # fmt: skip


def recall_vs_exact(
    matrix: VectorMatrix, qvecs: np.ndarray, where: Filter | None, k: int = 10
) -> float:
    """Mean recall@k of VectorMatrix.search against brute force on the same rows."""
    mask = matrix.mask(where)
    rows = np.arange(len(matrix)) if mask is None else np.flatnonzero(mask)
    hits = []
    for q in qvecs:
        exact = rows[np.argsort(-(matrix.vectors[rows] @ q))[:k]]
        got = {cid for cid, _ in matrix.search(q, k, mask)}
        want = {matrix.ids[r] for r in exact}
        hits.append(len(got & want) / max(len(want), 1))
    return round(float(np.mean(hits)), 4)


def isotropic_recall(n: int, n_queries: int = 20, seed: int = 3) -> float:
    """Worst case: structureless random unit vectors, random queries (no clusters to exploit)."""
    from bench.synth import synth_meta

    rng = np.random.default_rng(seed)
    vecs = _unit(rng.standard_normal((n, DIM)))
    matrix = VectorMatrix.build(synth_meta(n), vecs, version=0)
    return recall_vs_exact(matrix, _unit(rng.standard_normal((n_queries, DIM))), None)


def incremental_update(index: ChunkIndex, corpus: Corpus) -> float:
    """Seconds for a typical `casper index` re-run: 200 changed chunks, 50 deleted, optimize."""
    t = time.perf_counter()
    changed = corpus.chunks[-200:]
    index.upsert(changed, corpus.vectors[-200:])
    index.delete_ids([c.id for c in corpus.chunks[:50]])
    index.optimize()
    return round(time.perf_counter() - t, 2)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_size(n: int, n_queries: int, work: Path, hooks: Sequence[Hook]) -> dict[str, Any]:
    """Build an index of n chunks and time every leg."""
    out: dict[str, Any] = {"chunks": n}
    t = time.perf_counter()
    corpus = make_corpus(n, n_queries=n_queries)
    out["generate_s"] = round(time.perf_counter() - t, 2)
    sig = chunker_signature(8, 4, 21600, 1500)
    index = ChunkIndex.open(
        work / f"index-{n}.lance", embedder_name="bench", dim=DIM, checksum="bench",
        chunker_version=sig,
    )  # fmt: skip
    t = time.perf_counter()
    for i in range(0, n, 25_000):
        index.add(corpus.chunks[i : i + 25_000], corpus.vectors[i : i + 25_000])
    out["write_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    index.optimize()  # builds FTS + scalar indexes, compacts, writes the vector cache
    out["optimize_s"] = round(time.perf_counter() - t, 2)
    out["index_bytes"] = dir_size(index.dir)
    t = time.perf_counter()
    reopened = ChunkIndex.open(
        index.dir, embedder_name="bench", dim=DIM, checksum="bench", chunker_version=sig
    )
    reopened.matrix()
    out["cold_open_s"] = round(time.perf_counter() - t, 2)  # new process: .npy cache mmap
    index = reopened
    matrix = index.matrix()
    flt = Filter(person_id=corpus.person, since=corpus.since, until=corpus.until)
    broad = Filter(since=corpus.since)
    out["filtered_rows"] = {"person+date": int(matrix.mask(flt).sum()),
                            "date-only": int(matrix.mask(broad).sum())}  # fmt: skip
    qv, qs = list(corpus.query_vectors), corpus.queries
    lat: dict[str, dict[str, float]] = {}
    for label, where in (("unfiltered", None), ("person+date", flt), ("date-only", broad)):
        lat[f"vector/{label}"] = timed(lambda v, w=where: index.vector_search(v, 50, w), qv)
        lat[f"fts-lancedb/{label}"] = timed(lambda q, w=where: index.fts_search(q, 50, w), qs)
    bm25 = RankBM25Index(index)
    t = time.perf_counter()
    bm25.refresh()
    out["rank_bm25_build_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    RankBM25Index(index).refresh()
    out["rank_bm25_load_s"] = round(time.perf_counter() - t, 2)
    out["rank_bm25_bytes"] = (index.dir / SIDECAR).stat().st_size
    few = qs[: max(5, min(len(qs), 2_000_000 // n))]  # ~0.1–0.3 s per query at 100k+
    lat["rank-bm25/unfiltered"] = timed(lambda q: bm25.search(q, 50), few, warmup=1)
    lat["rank-bm25/person+date"] = timed(lambda q: bm25.search(q, 50, flt), few, warmup=1)
    retriever = Retriever(index, TableEmbedder(qs, corpus.query_vectors), None)
    lat["hybrid/unfiltered"] = timed(lambda q: retriever.search(q), qs)
    adaptive = Retriever(index, TableEmbedder(qs, corpus.query_vectors), None, fuse="adaptive")
    lat["hybrid/unfiltered, fusion = adaptive"] = timed(lambda q: adaptive.search(q), qs)
    fed = AblationRetriever(Retriever(index, TableEmbedder(qs, corpus.query_vectors), None),
                            feedback_terms=FEEDBACK_TERMS)  # fmt: skip
    lat["hybrid/unfiltered + feedback pass (opt-in)"] = timed(lambda q: fed.search(q), qs)
    lat["hybrid/person+date"] = timed(
        lambda q: retriever.search(q, person_id=corpus.person, since=corpus.since,
                                   until=corpus.until), qs)  # fmt: skip
    # query understanding on: a question naming a person runs the legs again in their chats
    reader = Reader(people=[(corpus.person, "Sam Rivera")])
    reading = Retriever(index, TableEmbedder(qs, corpus.query_vectors), None, reader=reader)
    lat["hybrid+understood/plain"] = timed(lambda q: reading.search(q), qs)
    lat["hybrid+understood/names a person"] = timed(
        lambda q: reading.search(f"What did Sam say about {q}?"), qs
    )
    # a date too: the words as typed and the date terms' leg run beside the read query, and
    # the day's scope leads only with what matches
    lat["hybrid+understood/names a day"] = timed(
        lambda q: reading.search(f"When did Sam mention {q} on the 10th of March 2021?"), qs
    )
    out["latency_ms"] = lat
    out["hybrid_over_rank_bm25"] = round(
        lat["hybrid/unfiltered"]["p50"] / lat["rank-bm25/unfiltered"]["p50"], 3
    )
    out["recall@10_vs_exact"] = {
        "unfiltered": recall_vs_exact(matrix, corpus.query_vectors, None),
        "person+date": recall_vs_exact(matrix, corpus.query_vectors, flt),
        "date-only": recall_vs_exact(matrix, corpus.query_vectors, broad),
        "isotropic_worst_case": isotropic_recall(n),
    }
    out["incremental_update_s"] = incremental_update(index, corpus)
    context = {"index": index, "retriever": retriever, "queries": qs, "corpus": corpus}
    for hook in hooks:
        out.update(hook(context))
    shutil.rmtree(index.dir, ignore_errors=True)
    return out


def to_markdown(results: dict[str, Any]) -> str:
    """One table row per (size, leg, filter) plus a summary table per size."""
    lines = [
        "# Retrieval latency (synthetic corpora)", "",
        f"Machine: {results['machine']} (1-min load average {results['load_avg_before']} before, "
        f"{results['load_avg_after']} after: shared box); {results['queries']} queries per leg "
        "(rank-bm25: fewer at large sizes); candidates 50; "
        "query embedding and rerank excluded; hybrid = vector + LanceDB FTS (+ n-gram leg) + "
        "convex fusion + dedupe + fetch of the top 8 chunks; + feedback pass = BM25 again with "
        "the best hits' words (opt-in); +understood = query understanding "
        "on (a named person adds a boosted pass over their chats).", "",
        "| chunks | leg | p50 ms | p95 ms |", "|---:|---|---:|---:|",
    ]  # fmt: skip
    for size in results["sizes"]:
        for leg, stats in size["latency_ms"].items():
            lines.append(f"| {size['chunks']:,} | {leg} | {stats['p50']} | {stats['p95']} |")
    lines += ["", "| chunks | index MB | bm25 pickle MB | build s (write+optimize) | "
              "cold open s | hybrid/rank-bm25 p50 | recall@10 unfilt. / filt. / broad / "
              "isotropic |", "|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for s in results["sizes"]:
        r = s["recall@10_vs_exact"]
        lines.append(
            f"| {s['chunks']:,} | {s['index_bytes'] / 1e6:.0f} | {s['rank_bm25_bytes'] / 1e6:.0f}"
            f" | {s['write_s'] + s['optimize_s']:.1f} | {s['cold_open_s']} | "
            f"{s['hybrid_over_rank_bm25']} | {r['unfiltered']} / {r['person+date']} / "
            f"{r['date-only']} / {r['isotropic_worst_case']} |"
        )
    return "\n".join(lines) + "\n"


def load_hook(spec: str) -> Hook:
    """`package.module:function` → the function."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the sizes asked for and write the JSON and markdown results."""
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval")
    parser.add_argument("--sizes", default="10000,100000,250000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--hook", action="append", default=[], help="module:function")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    hooks = [load_hook(h) for h in args.hook]
    results: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.system()}, {_cpus()} cores",
        "queries": args.queries,
        "load_avg_before": round(_load(), 2),
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="casper-bench-") as tmp:
        for n in sizes:
            started = time.perf_counter()
            results["sizes"].append(bench_size(n, args.queries, Path(tmp), hooks))
            print(f"{n:>8,} chunks done in {time.perf_counter() - started:.0f} s", flush=True)
    results["load_avg_after"] = round(_load(), 2)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "retrieval.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "retrieval.md").write_text(to_markdown(results))
    print(to_markdown(results))
    return results


def _load() -> float:
    import os

    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    main()
