"""What a searching process holds resident at 1M chunks, part by part, and the vector leg's
recall and latency on MiniLM-shaped vectors.

Three measurements, each in a fresh child process (so one's pages never count in the other's):
- `resident`: the index of bench/scale.py's 1M generated messages (FAKE embedder vectors),
  opened in-process like `casper search` does; /proc/self/smaps (RSS per mapping: the vector
  cache's files, LanceDB's files, shared libraries, anonymous memory), tracemalloc (Python
  objects) and pyarrow's allocator after each step: open, chunk meta, first vector search,
  hybrid queries, each query's peak, and the model (the bundled MiniLM, when present).
- `synth`: recall@10 of the vector leg against exact float32 search on 1M MiniLM-shaped vectors
  (bench/scale.py's SYNTH generator), its p50 wall and CPU time, and the RSS of the vector
  cache's mappings while it runs.
- `latency`: the vector leg and hybrid p50/p95 (wall and CPU) timed alone on the same index,
  optionally also for another checkout's casper (`--code`), for a before/after in the same minutes.

Run: `python -m bench.vecmem` (all three; about 10 min on the 2-core box with `--home` of an
indexed 1M home, add ~12 min to build one). Table rows: bench/vecmem_report.py. Results go into bench/results/scale.json ("vector_memory") and the
rows of bench/results/scale.md that start "vector".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
DIM = 384
MB = 2**20


# ---- measuring a process ---------------------------------------------------------------------
def smaps() -> dict[str, float]:
    """MB resident per kind of mapping in this process (from /proc/self/smaps)."""
    out: dict[str, float] = {}
    kind = "anonymous"
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split(maxsplit=6)
            if "-" in head[0] and ":" not in head[0]:  # a mapping's header line
                path = head[5].strip() if len(head) > 5 else ""
                kind = _kind(path)
            elif head[0] == "Rss:":
                out[kind] = out.get(kind, 0.0) + int(head[1]) / 1024
    return {k: round(v, 1) for k, v in sorted(out.items())}


def _kind(path: str) -> str:
    name = os.path.basename(path)
    if name.startswith(("codes-", "rows-", "mean-", "vectors-", "keys-")) and name.endswith(".npy"):
        return "vector cache: " + name.split("-")[0]
    if ".lance" in path or path.endswith((".idx", ".manifest", ".txn")):
        return "LanceDB files"
    if path.startswith("[heap]") or not path or path.startswith("[anon"):
        return "anonymous"
    if ".so" in name or "python" in name:
        return "code (shared libraries, interpreter)"
    if path.startswith("["):
        return "anonymous"
    return "other files"


def status() -> dict[str, float]:
    """VmRSS, RssAnon, RssFile, VmHWM in MB."""
    got = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                got[key] = round(int(line.split()[1]) / 1024, 1)
    return got


def reset_peak() -> None:
    """Restart VmHWM from the current RSS (Linux: write 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def snapshot() -> dict[str, Any]:
    import tracemalloc

    import pyarrow as pa

    return {
        "status_mb": status(),
        "smaps_mb": smaps(),
        "python_objects_mb": round(tracemalloc.get_traced_memory()[0] / MB, 1)
        if tracemalloc.is_tracing()
        else None,
        "arrow_mb": round(pa.total_allocated_bytes() / MB, 1),
    }


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ---- child: the 1M index, opened like `casper search` ---------------------------------------
def resident(home: Path, n_queries: int, with_model: bool) -> dict[str, Any]:
    """Step-by-step resident memory of a process searching the index in `home`."""
    import tracemalloc

    tracemalloc.start()
    from bench.scale import FAKE
    from casper.config import load_config
    from casper.retrieve import Retriever
    from casper.store.db import Store
    from casper.store.index import ChunkIndex

    exec(FAKE, scope := {})  # the fake the index was built with (bench/scale.py)
    cfg = load_config(home)
    steps: dict[str, Any] = {"imports": snapshot()}
    chunker = json.loads((cfg.index_dir / "manifest.json").read_text())["chunker"]
    index = ChunkIndex.open(
        cfg.index_dir, embedder_name="fake-fast-384", dim=DIM, checksum="fake",
        chunker_version=chunker,
    )  # fmt: skip
    store = Store.open(cfg.store_path)
    steps["index + store open"] = snapshot()
    t = time.perf_counter()
    matrix = index.matrix()
    meta_s = time.perf_counter() - t
    steps["chunk meta + filters loaded"] = snapshot()
    parts = _meta_parts(matrix)
    retriever = Retriever(index, scope["FakeEmbedder"](), None, store=store)
    queries = _queries(index, n_queries)
    t = time.perf_counter()
    index.vector_search(scope["FakeEmbedder"]().embed_query(queries[0]), 50)
    first_vector_s = time.perf_counter() - t
    steps["first vector search"] = snapshot()
    tracemalloc.stop()  # it slows every allocation: the timed queries run without it
    peaks, vector_ms, vector_cpu, hybrid_ms, hybrid_cpu = [], [], [], [], []
    for i, q in enumerate(queries + queries[:3]):
        reset_peak()
        base = status()["VmRSS"]
        qv = scope["FakeEmbedder"]().embed_query(q)
        t, c = time.perf_counter(), time.thread_time()  # the leg runs on this thread alone
        index.vector_search(qv, 50)
        vector = (time.perf_counter() - t) * 1000, (time.thread_time() - c) * 1000
        t, c = time.perf_counter(), cpu_s()
        retriever.search(q, rerank=False)
        if i >= 3:  # the first three warm the FTS caches
            hybrid_ms.append((time.perf_counter() - t) * 1000)
            hybrid_cpu.append((cpu_s() - c) * 1000)
            vector_ms.append(vector[0])
            vector_cpu.append(vector[1])
            peaks.append(status()["VmHWM"] - base)
    steps[f"after {len(hybrid_ms)} hybrid queries"] = snapshot()
    from casper.store.index_vectors import release_freed_memory

    release_freed_memory()  # what is live, not what the allocator kept after freeing it
    steps["the same, freed memory returned (malloc_trim)"] = snapshot()
    model: dict[str, Any] = {}
    if with_model:
        model = _model_memory(cfg)
        steps["model loaded + one query embedded"] = snapshot()
    return {
        "chunks": len(matrix),
        "queries": len(hybrid_ms),
        "steps": steps,
        "meta_parts_mb": parts,
        "meta_load_s": round(meta_s, 2),
        "first_vector_search_s": round(first_vector_s, 2),
        "query_peak_over_rss_before_mb": {"max": round(max(peaks), 1),
                                        "median": round(statistics.median(peaks), 1)},
        "vector_p50_ms": round(statistics.median(vector_ms), 1),
        "vector_cpu_p50_ms": round(statistics.median(vector_cpu), 1),
        "hybrid_p50_ms": round(statistics.median(hybrid_ms), 1),
        "hybrid_p95_ms": round(_p95(hybrid_ms), 1),
        "hybrid_cpu_p50_ms": round(statistics.median(hybrid_cpu), 1),
        "model": model,
    }  # fmt: skip


def latency(home: str, n_queries: int) -> dict[str, Any]:
    """Vector leg and hybrid p50/p95 (wall and CPU) and RSS, nothing else measured meanwhile;
    with `--code` it runs another checkout's casper (the before/after comparison)."""
    from bench.scale import FAKE
    from casper.config import load_config
    from casper.retrieve import Retriever
    from casper.store.db import Store
    from casper.store.index import ChunkIndex

    exec(FAKE, scope := {})
    cfg = load_config(Path(home))
    chunker = json.loads((cfg.index_dir / "manifest.json").read_text())["chunker"]
    index = ChunkIndex.open(
        cfg.index_dir, embedder_name="fake-fast-384", dim=DIM, checksum="fake",
        chunker_version=chunker,
    )  # fmt: skip
    embedder = scope["FakeEmbedder"]()
    retriever = Retriever(index, embedder, None, store=Store.open(cfg.store_path))
    queries = _queries(index, n_queries)
    vw, vc, hw, hc = [], [], [], []
    for i, q in enumerate(queries + queries[:3]):
        qv = embedder.embed_query(q)
        t, c = time.perf_counter(), time.thread_time()
        index.vector_search(qv, 50)
        v = (time.perf_counter() - t) * 1000, (time.thread_time() - c) * 1000
        t, c = time.perf_counter(), cpu_s()
        retriever.search(q, rerank=False)
        if i >= 3:
            vw.append(v[0])
            vc.append(v[1])
            hw.append((time.perf_counter() - t) * 1000)
            hc.append((cpu_s() - c) * 1000)
    import casper

    return {
        "code": str(Path(casper.__file__).resolve().parents[1]),
        "queries": len(hw),
        "vector_p50_ms": round(statistics.median(vw), 1),
        "vector_cpu_p50_ms": round(statistics.median(vc), 1),
        "hybrid_p50_ms": round(statistics.median(hw), 1),
        "hybrid_p95_ms": round(_p95(hw), 1),
        "hybrid_cpu_p50_ms": round(statistics.median(hc), 1),
        "rss_after_mb": status(),
    }


def _queries(index: Any, n: int) -> list[str]:
    """Two-word queries from the corpus's own words (as bench/scale.py's hybrid run)."""
    texts = index.table.search().select(["text"]).limit(n * 40).to_arrow()["text"]
    rng = np.random.default_rng(5)
    words = [w.strip(".,!?") for t in texts.to_pylist()[::40] for w in t.split() if len(w) > 4]
    return [" ".join(rng.choice(words, 2)) for _ in range(n)]


def _meta_parts(matrix: Any) -> dict[str, float]:
    """Sizes of the matrix's per-chunk bookkeeping (numpy and Arrow buffers, by nbytes)."""
    parts = {
        "chunk ids (sorted bytes + row maps)": matrix.ids.nbytes,
        "filter columns (chat, start, end, person rows)": matrix.filters.nbytes,
        "display columns (rowids, chat/participant labels)": matrix.display.nbytes,
    }
    return {k: round(v / MB, 1) for k, v in parts.items()}


def _model_memory(cfg: Any) -> dict[str, Any]:
    before = status()
    try:
        from casper.backends.factory import make_embedder

        embedder = make_embedder(cfg)
        embedder.embed_query("what did we eat in lisbon")
    except Exception as exc:  # noqa: BLE001 - the bundled model may be missing
        return {"error": type(exc).__name__}
    after = status()
    return {"name": embedder.name, "rss_growth_mb": round(after["VmRSS"] - before["VmRSS"], 1)}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(round(0.95 * (len(ordered) - 1)))]


# ---- child: recall and latency on MiniLM-shaped vectors -------------------------------------
def synth(n: int, n_queries: int, k: int = 10) -> dict[str, Any]:
    """recall@k vs exact float32, p50 wall/CPU and the vector cache's resident pages."""

    from bench.scale import synth_meta, synth_vectors
    from casper.store.vector_cache import build_vectors
    from casper.store.vectors import VectorMatrix

    tmp = Path(tempfile.mkdtemp(prefix="casper-vecmem-"))
    try:
        stream, queries = synth_vectors(n, n_queries)
        halves = ((pos, vecs.astype(np.float16)) for pos, vecs in stream())
        t = time.perf_counter()
        cached = build_vectors(tmp, 1, 1, DIM, [str(i) for i in range(n)], lambda _: (n, halves))
        build_s = time.perf_counter() - t
        best = _exact_top(stream, queries, k)
        meta = synth_meta(n)
        matrix = VectorMatrix.build(meta, *cached, version=1)
        del meta
        hits, wall, cpu, peak_cache = [], [], [], 0.0
        for qi in range(n_queries):
            t, c = time.perf_counter(), time.thread_time()
            got = {int(cid) for cid, _ in matrix.search(queries[qi], k)}
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.thread_time() - c) * 1000)
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
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _exact_top(stream: Any, queries: np.ndarray, k: int) -> list[np.ndarray]:
    """Exact float32 top-k per query over the generator's vectors (before float16 storage)."""
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


# ---- parent ----------------------------------------------------------------------------------
def _run_child(kind: str, args: dict[str, Any], code: Path | None = None) -> dict[str, Any]:
    """One measurement in a fresh, niced process (casper imported from `code`, default this
    checkout); its CPU seconds come back with it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = [round(x, 2) for x in os.getloadavg()]
    t = time.perf_counter()
    script = (
        f"import json, sys; from bench import vecmem; sys.path.insert(0, {str(code or ROOT)!r}); "
        f"print(json.dumps(vecmem.{kind}(**json.loads(sys.argv[1]))))"
    )
    proc = subprocess.run(
        ["nice", "-n", "10", sys.executable, "-c", script, json.dumps(args)],
        capture_output=True, text=True, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{proc.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    got["wall_s"] = round(time.perf_counter() - t, 1)
    got["cpu_s"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
    got["load_avg_before"] = load
    got["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    return got


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.vecmem")
    parser.add_argument("--only", choices=["resident", "synth", "latency"], default=None)
    parser.add_argument(
        "--code", type=Path, default=None,
        help="also time another checkout's casper on the same index (e.g. `git archive` of the "
        "commit before), recorded as latency_before",
    )  # fmt: skip
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "casper-bench")
    parser.add_argument(
        "--home", type=Path, default=None,
        help="an indexed home to reuse (default: index the generated chat.db into a temp dir)",
    )  # fmt: skip
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--synth-chunks", type=int, default=1_000_000)
    parser.add_argument("--synth-queries", type=int, default=100)
    parser.add_argument("--no-model", action="store_true", help="skip loading the real MiniLM")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    saved_path = args.out / "scale.json"
    saved = json.loads(saved_path.read_text()) if saved_path.exists() else {}
    got = dict(saved.get("vector_memory", {}))
    if args.only in (None, "synth"):
        got["synth"] = _run_child(
            "synth", {"n": args.synth_chunks, "n_queries": args.synth_queries}
        )
    if args.only in (None, "resident", "latency"):
        with _indexed_home(args) as home:
            if args.only in (None, "resident"):
                got["resident"] = _run_child("resident", _resident_args(home, args))
            lat = {"home": str(home), "n_queries": args.queries}
            if args.only in (None, "latency"):
                if args.code is not None:
                    got["latency_before"] = _run_child("latency", lat, args.code)
                got["latency"] = _run_child("latency", lat)
    saved["vector_memory"] = got
    args.out.mkdir(parents=True, exist_ok=True)
    saved_path.write_text(json.dumps(saved, indent=1) + "\n")
    if "end_to_end" in saved:
        from bench.scale import to_markdown

        (args.out / "scale.md").write_text(to_markdown(saved))
    print(json.dumps(got, indent=1))
    return saved


@contextlib.contextmanager
def _indexed_home(args: argparse.Namespace) -> Iterator[Path]:
    """`--home`, or the cached 1M chat.db indexed into a temp dir (FAKE vectors) for the run."""
    if args.home is not None:
        yield args.home
        return
    from bench.scale import INDEX_CHILD, _child, ensure_chat_db

    chat_db = ensure_chat_db(args.cache, args.messages)
    with tempfile.TemporaryDirectory(prefix="casper-vecmem-") as tmp:
        home = Path(tmp) / "home"
        built = _child(INDEX_CHILD, {"home": str(home), "chat_db": str(chat_db), "delay": 0.0,
                                     "report_batches": False})  # fmt: skip
        if built.get("returncode"):
            raise RuntimeError("indexing the generated chat.db failed")
        yield home


def _resident_args(home: Path, args: argparse.Namespace) -> dict[str, Any]:
    return {"home": str(home), "n_queries": args.queries, "with_model": not args.no_model}


if __name__ == "__main__":
    main()
