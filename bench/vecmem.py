"""What a searching process holds resident at 1M chunks, part by part, and the vector leg's
recall and latency on MiniLM-shaped vectors.

Three measurements, each in a fresh child process (so one's pages never count in the other's):
- `resident`: the index of bench/scale.py's 1M generated messages (FAKE embedder vectors),
  opened in-process like `casper search` does; /proc/self/smaps (RSS per mapping: the vector
  cache's files, LanceDB's files, shared libraries, anonymous memory), tracemalloc (Python
  objects) and pyarrow's allocator after each step: open, chunk meta, first vector search,
  hybrid queries, each query's peak, and the model (the bundled MiniLM, when present).
- `synth`: bench/synth.py's recall run (the one `python -m bench.scale` runs too): recall@10 of
  the vector leg against exact float32 search on 1M MiniLM-shaped vectors, its p50 wall and CPU
  time, the RSS of the vector cache's mappings while it runs, and a rescoring-depth sweep.
- `latency`: the vector leg and hybrid p50/p95 (wall and CPU) timed alone on the same index,
  optionally also for another checkout's casper (`--code`), for a before/after in the same minutes.

Run: `python -m bench.vecmem` (all three; about 10 min on the 2-core box with `--home` of an
indexed 1M home, add ~12 min to build one). Table rows: bench/scale_report.py. Results are
merged into bench/results/scale.json ("vector_memory", each record labelled with the command, time
and load it ran under) and the rows of bench/results/scale.md that start "vector"; process
measuring: bench/measure.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.measure import MB, cpu_s, p95, reset_peak, run_child, snapshot, status
from bench.scale import corpus_queries, ensure_chat_db, open_fake_index, run_index_child
from bench.scale_report import load_results, save_results
from bench.synth import run_synth

RESULTS = Path(__file__).parent / "results"


# ---- child: the 1M index, opened like `casper search` ---------------------------------------
def resident(home: Path, n_queries: int, with_model: bool) -> dict[str, Any]:
    """Step-by-step resident memory of a process searching the index in `home`."""
    import tracemalloc

    tracemalloc.start()
    from casper.index.chunk_index import ChunkIndex  # noqa: F401 - likewise
    from casper.search.retriever import Retriever
    from casper.store.db import Store  # noqa: F401 - imported before the "imports" snapshot

    steps: dict[str, Any] = {"imports": snapshot()}
    fake = open_fake_index(Path(home))
    index = fake.index
    steps["index + store open"] = snapshot()
    t = time.perf_counter()
    matrix = index.matrix()
    meta_s = time.perf_counter() - t
    steps["chunk meta + filters loaded"] = snapshot()
    parts = _meta_parts(matrix)
    retriever = Retriever(index, fake.embedder, None, store=fake.store)
    queries = corpus_queries(index, n_queries)
    t = time.perf_counter()
    index.vector_search(fake.embedder.embed_query(queries[0]), 50)
    first_vector_s = time.perf_counter() - t
    steps["first vector search"] = snapshot()
    tracemalloc.stop()  # it slows every allocation: the timed queries run without it
    peaks: list[float] = []
    timed = _time_queries(index, retriever, fake.embedder, queries, peaks=peaks)
    steps[f"after {timed['queries']} hybrid queries"] = snapshot()
    from casper.index.vector_side import release_freed_memory

    release_freed_memory()  # what is live, not what the allocator kept after freeing it
    steps["the same, freed memory returned (malloc_trim)"] = snapshot()
    model: dict[str, Any] = {}
    if with_model:
        model = _model_memory(fake.cfg)
        steps["model loaded + one query embedded"] = snapshot()
    return {
        "chunks": len(matrix),
        "steps": steps,
        "meta_parts_mb": parts,
        "meta_load_s": round(meta_s, 2),
        "first_vector_search_s": round(first_vector_s, 2),
        "query_peak_over_rss_before_mb": {"max": round(max(peaks), 1),
                                        "median": round(statistics.median(peaks), 1)},
        **timed,
        "model": model,
    }  # fmt: skip


def latency(home: str, n_queries: int) -> dict[str, Any]:
    """Vector leg and hybrid p50/p95 (wall and CPU) and RSS, nothing else measured meanwhile;
    with `--code` it runs another checkout's casper (the before/after comparison)."""
    from casper.search.retriever import Retriever

    fake = open_fake_index(Path(home))
    retriever = Retriever(fake.index, fake.embedder, None, store=fake.store)
    queries = corpus_queries(fake.index, n_queries)
    timed = _time_queries(fake.index, retriever, fake.embedder, queries)
    import casper

    return {
        "code": Path(casper.__file__).resolve().parents[1].name,  # which checkout, not where
        **timed,
        "rss_after_mb": status(),
    }


def _time_queries(
    index: Any, retriever: Any, embedder: Any, queries: list[str], peaks: list | None = None
) -> dict[str, Any]:
    """p50s of each query's vector leg alone (wall, and this thread's CPU: the leg runs on it
    alone) and of the whole hybrid search (wall p50/p95, process CPU); the first three queries
    warm the FTS caches and are run again at the end instead. With `peaks`, each query's
    VmHWM over the RSS before it (MB) is appended to it."""
    vw, vc, hw, hc = [], [], [], []
    for i, q in enumerate(queries + queries[:3]):
        if peaks is not None:
            reset_peak()
            base = status()["VmRSS"]
        qv = embedder.embed_query(q)
        t, c = time.perf_counter(), time.thread_time()
        index.vector_search(qv, 50)
        vector = (time.perf_counter() - t) * 1000, (time.thread_time() - c) * 1000
        t, c = time.perf_counter(), cpu_s()
        retriever.search(q, rerank=False)
        if i >= 3:
            hw.append((time.perf_counter() - t) * 1000)
            hc.append((cpu_s() - c) * 1000)
            vw.append(vector[0])
            vc.append(vector[1])
            if peaks is not None:
                peaks.append(status()["VmHWM"] - base)
    return {
        "queries": len(hw),
        "vector_p50_ms": round(statistics.median(vw), 1),
        "vector_cpu_p50_ms": round(statistics.median(vc), 1),
        "hybrid_p50_ms": round(statistics.median(hw), 1),
        "hybrid_p95_ms": round(p95(hw), 1),
        "hybrid_cpu_p50_ms": round(statistics.median(hc), 1),
    }


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


# ---- parent ----------------------------------------------------------------------------------
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
    got = dict(load_results(args.out).get("vector_memory", {}))
    if args.only in (None, "synth"):
        got["synth"] = run_synth(args.synth_chunks, args.synth_queries, by="bench.vecmem")
    if args.only in (None, "resident", "latency"):
        with _indexed_home(args) as home:
            if args.only in (None, "resident"):
                got["resident"] = _measure("resident", _resident_args(home, args))
            lat = {"home": str(home), "n_queries": args.queries}
            if args.only in (None, "latency"):
                if args.code is not None:
                    got["latency_before"] = _measure("latency", lat, args.code)
                got["latency"] = _measure("latency", lat)
    # a SYNTH run carries its own depth sweep: the separate hand-run one is superseded
    drop = ("depth_sweep",) if args.only in (None, "synth") else ()
    saved = save_results(args.out, {"vector_memory": got}, drop=drop)
    print(json.dumps(got, indent=1))
    return saved


def _measure(kind: str, args: dict[str, Any], code: Path | None = None) -> dict[str, Any]:
    """One of this module's measurements in a fresh child, labelled with this command."""
    return {**run_child("bench.vecmem", kind, args, code), "by": "bench.vecmem"}


@contextlib.contextmanager
def _indexed_home(args: argparse.Namespace) -> Iterator[Path]:
    """`--home`, or the cached 1M chat.db indexed into a temp dir (FAKE vectors) for the run."""
    if args.home is not None:
        yield args.home
        return
    chat_db = ensure_chat_db(args.cache, args.messages)
    with tempfile.TemporaryDirectory(prefix="casper-vecmem-") as tmp:
        home = Path(tmp) / "home"
        built = run_index_child(home, chat_db)
        if built.get("returncode"):
            raise RuntimeError("indexing the generated chat.db failed")
        yield home


def _resident_args(home: Path, args: argparse.Namespace) -> dict[str, Any]:
    return {"home": str(home), "n_queries": args.queries, "with_model": not args.no_model}


if __name__ == "__main__":
    main()
