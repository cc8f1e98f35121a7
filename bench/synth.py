"""SYNTH: the vector leg's recall@10 against exact float32 search on MiniLM-shaped generated
vectors, with its latency, the vector cache's resident pages and a rescoring-depth sweep.

The one implementation behind both `python -m bench.scale` (its recall row) and
`python -m bench.vecmem --only synth`: either writes its result to scale.json's
`vector_memory.synth`, labelled with the command that measured it.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.measure import MB, run_child, smaps

DIM = 384
SWEEP_SHARES = (64, 256, 512)  # RESCORE_SHARE values of the depth sweep (64 is the default)


def synth_vectors(n: int, n_queries: int, seed: int = 7) -> tuple[Any, np.ndarray]:
    """MiniLM-shaped unit vectors (topic centroids, decaying spectrum, random rotation),
    as `(stream, queries)`: `stream()` yields (positions, float32 block) and gives the same
    vectors on every call; the first call fills `queries` near random documents."""
    block = 50_000
    queries = np.zeros((n_queries, DIM), np.float32)

    def unit(x: np.ndarray) -> np.ndarray:
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    def stream() -> Any:
        rng = np.random.default_rng(seed)
        scale = np.sqrt(1.0 / np.arange(1, DIM + 1))
        rotation, _ = np.linalg.qr(rng.standard_normal((DIM, DIM)))
        centroids = (rng.standard_normal((1000, DIM)) * scale) @ rotation.T
        seeds = rng.integers(0, n, n_queries)
        for lo in range(0, n, block):
            m = min(block, n - lo)
            noise = (rng.standard_normal((m, DIM)) * scale) @ rotation.T
            vecs = unit(centroids[rng.integers(0, 1000, m)] + 0.8 * noise)
            for qi in np.flatnonzero((seeds >= lo) & (seeds < lo + m)):
                qn = (rng.standard_normal(DIM) * scale) @ rotation.T
                queries[qi] = unit((vecs[seeds[qi] - lo] + 0.5 * qn)[None, :])[0]
            yield np.arange(lo, lo + m), vecs

    return stream, queries


def synth_meta(n: int) -> Any:
    """Chunk meta for `n` SYNTH vectors: ids "0".."n-1", one chat, no people, no dates."""
    import pyarrow as pa

    strings = pa.array([[] for _ in range(n)], pa.list_(pa.string()))
    return pa.table({
        "id": [str(i) for i in range(n)], "chat_id": np.zeros(n, np.int64),
        "chat_name": [""] * n, "participants": strings, "person_ids": strings,
        "start": np.zeros(n), "end": np.zeros(n),
        "rowids": pa.array([[i] for i in range(n)], pa.list_(pa.int64())),
    })  # fmt: skip


def exact_top(stream: Any, queries: np.ndarray, k: int) -> list[np.ndarray]:
    """Exact float32 top-k per query over the generator's vectors (before float16 storage),
    block by block (never n × 384 float32 in memory)."""
    best = [np.empty(0, np.int64)] * len(queries)
    best_scores = [np.empty(0, np.float32)] * len(queries)
    for pos, vecs in stream():
        scores = vecs @ queries.T
        for qi in range(len(queries)):
            s = np.concatenate([best_scores[qi], scores[:, qi]])
            r = np.concatenate([best[qi], pos])
            top = np.argsort(-s, kind="stable")[:k]
            best[qi], best_scores[qi] = r[top], s[top]
    return best


def recall(
    n: int, n_queries: int, k: int = 10, shares: tuple[int, ...] = SWEEP_SHARES
) -> dict[str, Any]:
    """recall@k of the float16 + sign-bit search vs exact float32, its p50 wall/CPU, the vector
    cache's resident pages, and the same recall and p50 with fewer rescored candidates."""
    from casper.index.vector_cache import build_vectors
    from casper.index.vectors import VectorMatrix

    tmp = Path(tempfile.mkdtemp(prefix="casper-synth-"))
    try:
        stream, queries = synth_vectors(n, n_queries)
        halves = ((pos, vecs.astype(np.float16)) for pos, vecs in stream())
        t = time.perf_counter()
        cached = build_vectors(tmp, 1, 1, DIM, [str(i) for i in range(n)], lambda _: (n, halves))
        build_s = time.perf_counter() - t
        best = exact_top(stream, queries, k)
        meta = synth_meta(n)
        matrix = VectorMatrix.build(meta, *cached, version=1)
        del meta
        hits, wall, cpu, peak_cache = [], [], [], 0.0
        for qi in range(n_queries):
            got, ms, cpu_ms = _timed_search(matrix, queries[qi], k)
            wall.append(ms)
            cpu.append(cpu_ms)
            hits.append(len(got & set(best[qi].tolist())) / k)
            cache = sum(v for key, v in smaps().items() if key.startswith("vector cache"))
            peak_cache = max(peak_cache, cache)
        return {
            "chunks": n,
            "queries": n_queries,
            "recall@10_vs_exact_float32": round(float(np.mean(hits)), 4),
            "worst_query_recall@10": round(float(np.min(hits)), 2),
            "vector_p50_ms": round(statistics.median(wall), 1),
            "vector_cpu_p50_ms": round(statistics.median(cpu), 1),
            "cache_build_s": round(build_s, 1),
            "float16_file_mb": round(matrix.vectors.nbytes / MB),
            "codes_mb": round(matrix.codes.nbytes / MB),
            "vector_cache_resident_mb_after_queries": smaps(),
            "vector_cache_resident_peak_mb": round(peak_cache, 1),
            "depth_sweep": depth_sweep(matrix, queries, best, k, shares),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def depth_sweep(
    matrix: Any, queries: np.ndarray, best: list[np.ndarray], k: int, shares: tuple[int, ...]
) -> list[dict[str, Any]]:
    """recall@k and p50 with RESCORE_SHARE set to each of `shares` (the Hamming stage keeps
    `count // share` candidates)."""
    import casper.index.vectors as vectors

    default = vectors.RESCORE_SHARE
    out = []
    try:
        for share in shares:
            vectors.RESCORE_SHARE = share
            hits, wall = [], []
            for qi in range(len(queries)):
                got, ms, _ = _timed_search(matrix, queries[qi], k)
                wall.append(ms)
                hits.append(len(got & set(best[qi].tolist())) / k)
            out.append({"share": share, "recall@10": round(float(np.mean(hits)), 4),
                        "p50_ms": round(statistics.median(wall), 1)})  # fmt: skip
    finally:
        vectors.RESCORE_SHARE = default
    return out


def _timed_search(matrix: Any, query: np.ndarray, k: int) -> tuple[set[int], float, float]:
    """The ids of one vector search, its wall and its CPU milliseconds (this thread's)."""
    t, c = time.perf_counter(), time.thread_time()
    got = {int(cid) for cid, _ in matrix.search(query, k)}
    return got, (time.perf_counter() - t) * 1000, (time.thread_time() - c) * 1000


def run_synth(n: int, n_queries: int, *, by: str) -> dict[str, Any]:
    """`recall` in a fresh niced child (wall, CPU-s and load beside it), labelled with the
    command `by` that ran it."""
    return {**run_child("bench.synth", "recall", {"n": n, "n_queries": n_queries}), "by": by}
