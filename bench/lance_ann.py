"""Casper's vector side against LanceDB's own vector search, on the same MiniLM-shaped vectors.

The float16 side store, sign-bit shortlist and pread rescoring (casper/index/vecstore.py,
sign_bits.py, vector_file.py) stand where the design names LanceDB's vector index; this puts
numbers on that.
For each size, on bench/synth.py's SYNTH vectors (clustered, MiniLM-shaped, 384-d) and the same
queries, against the exact float32 top-10 (unfiltered and within each filter) as ground truth:

- casper: the product's path: vectors put into the side store (vecstore.py, one commit per
  4,096), the search cache built from it (vector_cache.build_vectors), then a fresh process
  loads it the way `ChunkIndex.matrix()` does and searches with `VectorMatrix.search` (exact
  below EXACT_MAX rows, Hamming shortlist + sign re-rank + exact float16 rescoring above);
- lance-flat: a LanceDB table with a float32 vector column and no vector index (the BTree
  scalar indexes the product keeps on chat_id, start and end are there), `table.search(v)`;
- lance IVF_FLAT, IVF_PQ, IVF_RQ, IVF_HNSW_SQ: each built on that table (replacing the one
  before), then searched over a sweep of `nprobes` × `refine_factor` (`ef` for HNSW).

Every search runs unfiltered, within one chat (~2% of rows: `chat_id = X`, prefiltered) and
within a time range (~10%: `end >= A AND start < B`); casper evaluates the same `Filter` in
memory. Each measurement is a fresh child process at nice 10 (bench/measure.py), so its
resident memory is its own: `rss_delta_mb` is VmRSS after the queries minus VmRSS after the
imports (anonymous memory plus mapped file pages; the float16 rows casper reads with pread and
LanceDB's reads sit in the kernel's page cache, counted in neither), and `peak_mb` is VmHWM.

Run: `python -m bench.lance_ann [--sizes 100000 622000] [--queries 200] [--smoke]`. Writes
bench/results/lance_ann.{json,md}, replacing the sizes it measured and keeping the others, each
labelled with the command, time and load it ran under (`--smoke`: a tiny size, results to a
temp dir, in seconds).
A build that outruns `--budget-s` (default 600 s; a sweep, 3×) is killed and recorded as such;
one setting × filter stops after `--setting-budget-s` (20 s; the flat scan `--flat-budget-s`).
The casper imports sit in one block below (the layout of casper/store is moving).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.lance_ann_report import report
from bench.measure import MB, ROOT, load_avg, now_utc, p95, smaps, status
from bench.synth import DIM, exact_top, synth_vectors

# ---- casper imports (one block: casper/store/* moves to casper/index/) ------------------------
from casper.index.chunk_table import Filter
from casper.index.lance_import import lancedb as import_lancedb
from casper.index.vecstore import FILE as SIDE_FILE
from casper.index.vecstore import VectorStore
from casper.index.vector_cache import build_vectors, load_vectors
from casper.index.vector_side import release_freed_memory
from casper.index.vectors import EXACT_MAX, VectorMatrix

# -----------------------------------------------------------------------------------------------

RESULTS = Path(__file__).parent / "results"
K = 10
PUT_BATCH = 4096  # rows per side-store commit (the vector fill's batch)
DAY = 86_400.0
T0 = 1.55e9  # 2019-02: five years of timestamps, like bench/retrieval.py's corpora
SPAN = 5 * 365 * DAY
CHATS = 600
CHAT_SHARE = 0.02  # the chat filter keeps about this share of rows
TIME_SHARE = 0.10  # the time filter's window is this share of the span
TABLE = "chunks"
INDEX = "vector_idx"
WARMUP = 3  # queries run before each setting's timed ones (not counted)


# ---- data ------------------------------------------------------------------------------------
def meta_columns(n: int, seed: int = 11) -> dict[str, np.ndarray]:
    """chat_id (Zipf-weighted over CHATS chats) and start/end (uniform over five years, a
    chunk spanning up to a day) of each row, independent of the vectors."""
    rng = np.random.default_rng(seed)
    weight = 1.0 / np.arange(1, CHATS + 1) ** 0.9
    chat = rng.choice(CHATS, n, p=weight / weight.sum()).astype(np.int64)
    start = T0 + rng.random(n) * SPAN
    end = start + rng.random(n) * DAY
    return {"chat_id": chat, "start": start, "end": end}


def filters_for(cols: dict[str, np.ndarray]) -> dict[str, Filter | None]:
    """The three filter modes: none, the chat nearest CHAT_SHARE of rows, a TIME_SHARE window."""
    counts = np.bincount(cols["chat_id"], minlength=CHATS)
    chat = int(np.argmin(np.abs(counts / len(cols["chat_id"]) - CHAT_SHARE)))
    since = T0 + 0.45 * SPAN
    return {
        "none": None,
        "chat": Filter(chat_id=chat),
        "time": Filter(since=since, until=since + TIME_SHARE * SPAN),
    }


def _mask(cols: dict[str, np.ndarray], where: Filter | None, lo: int, hi: int) -> np.ndarray:
    keep = np.ones(hi - lo, dtype=bool)
    if where is None:
        return keep
    if where.chat_id is not None:
        keep &= cols["chat_id"][lo:hi] == where.chat_id
    if where.since is not None:
        keep &= cols["end"][lo:hi] >= where.since
    if where.until is not None:
        keep &= cols["start"][lo:hi] < where.until
    return keep


def prepare(n: int, n_queries: int, work: str) -> dict[str, Any]:
    """Queries, filter columns and the exact float32 top-10 per filter, saved in `work`."""
    stream, queries = synth_vectors(n, n_queries)
    for _ in stream():  # the first pass fills `queries`, block by block: finish it first
        pass
    cols = meta_columns(n)
    filters = filters_for(cols)
    truth: dict[str, np.ndarray] = {}
    shares: dict[str, float] = {}
    for name, where in filters.items():

        def kept(where: Filter | None = where) -> Any:
            for pos, vecs in stream():
                m = _mask(cols, where, int(pos[0]), int(pos[-1]) + 1)
                yield pos[m], vecs[m]

        best = exact_top(kept, queries, K)
        truth[name] = np.stack([np.pad(b, (0, K - len(b)), constant_values=-1) for b in best])
        shares[name] = round(float(_mask(cols, where, 0, n).mean()), 4)
    np.savez(
        Path(work) / "data.npz", queries=queries, **cols,
        **{f"truth_{k}": v for k, v in truth.items()},
    )  # fmt: skip
    spec = {k: (asdict(v) if v is not None else None) for k, v in filters.items()}
    (Path(work) / "filters.json").write_text(json.dumps(spec))
    return {"rows": n, "queries": n_queries, "filter_share": shares, "filters": spec}


def _load(work: str) -> tuple[dict[str, np.ndarray], dict[str, Filter | None]]:
    data = dict(np.load(Path(work) / "data.npz"))
    spec = json.loads((Path(work) / "filters.json").read_text())
    return data, {k: (Filter(**v) if v else None) for k, v in spec.items()}


def _stream(n: int, work: str) -> Any:
    """The vectors `prepare` ranked: synth_vectors draws the queries between the documents, so
    the same vectors need the same query count."""
    with np.load(Path(work) / "data.npz") as data:
        n_queries = len(data["queries"])
    return synth_vectors(n, n_queries)[0]


def _recall(got: list[int], truth: np.ndarray) -> float:
    want = {int(x) for x in truth if x >= 0}
    return len(want & set(got)) / len(want) if want else 1.0


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def _cpu_s() -> float:
    """This process's CPU seconds, every thread (LanceDB searches on several)."""
    return time.process_time()


def _timed(run: Any, queries: np.ndarray, truth: np.ndarray, budget_s: float) -> dict[str, Any]:
    """recall@10, wall p50/p95 and process-CPU p50 of `run(query) -> ids` over the queries;
    WARMUP queries first (not counted); stops early when `budget_s` is spent."""
    for q in queries[:WARMUP]:
        run(q)
    wall, cpu, hits = [], [], []
    deadline = time.monotonic() + budget_s
    for qi, q in enumerate(queries):
        t, c = time.perf_counter(), _cpu_s()
        got = run(q)
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((_cpu_s() - c) * 1000)
        hits.append(_recall(got, truth[qi]))
        if time.monotonic() > deadline:
            break
    return {
        "recall@10": round(float(np.mean(hits)), 4),
        "worst_recall@10": round(float(np.min(hits)), 2),
        "p50_ms": round(statistics.median(wall), 2),
        "p95_ms": round(p95(wall), 2),
        "cpu_p50_ms": round(statistics.median(cpu), 2),
        "queries": len(wall),
    }


# ---- casper ----------------------------------------------------------------------------------
def casper_build(n: int, work: str) -> dict[str, Any]:
    """The side store filled batch by batch, then the search cache built from it (the index
    run's two vector steps); wall seconds of each and the files' sizes."""
    directory = Path(work) / "casper"
    directory.mkdir(exist_ok=True)
    stream = _stream(n, work)
    keys = [f"{i:012d}" for i in range(n)]
    store = VectorStore.open(directory, DIM)
    put_s = 0.0  # the writes alone, not the generation of the vectors
    for pos, vecs in stream():
        for lo in range(0, len(pos), PUT_BATCH):
            part = pos[lo : lo + PUT_BATCH]
            t = time.perf_counter()
            store.put(keys[part[0] : part[-1] + 1], vecs[lo : lo + PUT_BATCH])
            put_s += time.perf_counter() - t
    generation = store.generation()
    t = time.perf_counter()
    build_vectors(directory, 1, generation, DIM, keys, store.gather)
    cache_s = time.perf_counter() - t
    store.close()
    cache = sum(p.stat().st_size for p in directory.glob("*.npy"))
    side = sum(p.stat().st_size for p in directory.glob(SIDE_FILE + "*"))
    return {
        "side_store_put_s": round(put_s, 1),
        "cache_build_s": round(cache_s, 1),
        "generation": generation,
        "side_store_mb": round(side / MB, 1),
        "cache_mb": round(cache / MB, 1),
        "peak_mb": status()["VmHWM"],
    }


def _meta_table(data: dict[str, np.ndarray]) -> Any:
    import pyarrow as pa

    n = len(data["chat_id"])
    empty = pa.array([[] for _ in range(n)], pa.list_(pa.string()))
    return pa.table({
        "id": [str(i) for i in range(n)], "chat_id": data["chat_id"], "chat_name": [""] * n,
        "participants": empty, "person_ids": empty, "start": data["start"], "end": data["end"],
        "rowids": pa.array([[i] for i in range(n)], pa.list_(pa.int64())),
    })  # fmt: skip


def casper_search(work: str, generation: int, budget_s: float) -> dict[str, Any]:
    """A searching process: meta + filter columns, the cache loaded on the first vector search
    (as `ChunkIndex.matrix()` does), then the queries per filter, mask computed per query."""
    data, filters = _load(work)
    directory = Path(work) / "casper"
    base = status()
    meta = _meta_table(data)
    matrix = VectorMatrix.build(
        meta, version=1, generation=generation,
        loader=lambda: load_vectors(directory, 1, generation, DIM),
    )  # fmt: skip
    del meta
    release_freed_memory()
    queries = data["queries"]
    t = time.perf_counter()
    matrix.search(queries[0], K)
    first_ms = (time.perf_counter() - t) * 1000
    out: dict[str, Any] = {}
    for name, where in filters.items():

        def run(q: np.ndarray, where: Filter | None = where) -> list[int]:
            return [int(cid) for cid, _ in matrix.search(q, K, matrix.mask(where))]

        out[name] = _timed(run, queries, data[f"truth_{name}"], budget_s)
    release_freed_memory()
    now = status()
    cache = {k: v for k, v in smaps().items() if k.startswith("vector cache")}
    return {
        "searches": out,
        "first_search_ms": round(first_ms, 1),
        "exact_below_rows": EXACT_MAX,
        "rss_delta_mb": round(now["VmRSS"] - base["VmRSS"], 1),
        "rss_mb": now["VmRSS"],
        "peak_mb": now["VmHWM"],
        "mapped_cache_mb": cache,
        "meta_columns_mb": round(
            (matrix.ids.nbytes + matrix.filters.nbytes + matrix.display.nbytes) / MB, 1
        ),
    }


# ---- LanceDB ---------------------------------------------------------------------------------
def lance_write(n: int, work: str) -> dict[str, Any]:
    """The table (id, chat_id, start, end, float32 vector) written from the stream in one
    commit, then the product's BTree indexes on the filter columns."""
    import pyarrow as pa
    from lancedb.index import BTree

    lancedb = import_lancedb()
    data, _ = _load(work)
    stream = _stream(n, work)
    schema = pa.schema([
        ("id", pa.int64()), ("chat_id", pa.int64()), ("start", pa.float64()),
        ("end", pa.float64()), ("vector", pa.list_(pa.float32(), DIM)),
    ])  # fmt: skip

    def batches() -> Any:
        for pos, vecs in stream():
            lo, hi = int(pos[0]), int(pos[-1]) + 1
            flat = pa.array(np.ascontiguousarray(vecs, dtype=np.float32).reshape(-1))
            yield pa.record_batch([
                pa.array(pos.astype(np.int64)), pa.array(data["chat_id"][lo:hi]),
                pa.array(data["start"][lo:hi]), pa.array(data["end"][lo:hi]),
                pa.FixedSizeListArray.from_arrays(flat, DIM),
            ], schema=schema)  # fmt: skip

    db = lancedb.connect(str(Path(work) / "lance"))
    blocks = list(batches())  # generated first: the write alone is timed (~1 GB at 622k)
    t = time.perf_counter()
    table = db.create_table(TABLE, data=pa.RecordBatchReader.from_batches(schema, iter(blocks)))
    write_s = time.perf_counter() - t
    del blocks
    t = time.perf_counter()
    for column in ("chat_id", "start", "end"):
        table.create_index(column, config=BTree(), name=f"{column}_idx")
    scalar_s = time.perf_counter() - t
    return {
        "rows": table.count_rows(),
        "write_s": round(write_s, 1),
        "scalar_indexes_s": round(scalar_s, 1),
        "table_mb": round(_du(Path(work) / "lance") / MB, 1),
        "peak_mb": status()["VmHWM"],
    }


def _config(kind: str, params: dict[str, Any]) -> Any:
    from lancedb import index

    make = {"IVF_FLAT": index.IvfFlat, "IVF_PQ": index.IvfPq, "IVF_RQ": index.IvfRq,
            "IVF_HNSW_SQ": index.HnswSq}[kind]  # fmt: skip
    return make(distance_type="cosine", **params)


def lance_index(work: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """`create_index` of one vector index (replacing the one before); its build wall and CPU
    seconds, its size on disk (LanceDB's own count) and the building process's peak RSS."""
    lancedb = import_lancedb()
    table = lancedb.connect(str(Path(work) / "lance")).open_table(TABLE)
    t, c = time.perf_counter(), _cpu_s()
    table.create_index("vector", config=_config(kind, params), name=INDEX, replace=True)
    build_s, cpu_s = time.perf_counter() - t, _cpu_s() - c
    found = {ix.name: ix for ix in table.list_indices()}[INDEX]
    return {
        "kind": kind,
        "params": params,
        "build_s": round(build_s, 1),
        "build_cpu_s": round(cpu_s, 1),
        "index_mb": round(found.size_bytes / MB, 1),
        "peak_mb": status()["VmHWM"],
    }


def lance_search(work: str, settings: list[dict[str, Any]], budget_s: float) -> dict[str, Any]:
    """Every setting × filter on the table as it is (flat when it has no vector index); the
    first query after opening (index load) timed alone, RSS after the sweep over the imports'."""
    lancedb = import_lancedb()
    data, filters = _load(work)
    queries = data["queries"]
    base = status()
    table = lancedb.connect(str(Path(work) / "lance")).open_table(TABLE)

    def query(q: np.ndarray, s: dict[str, Any], where: Filter | None) -> list[int]:
        builder = (
            table.search(q, vector_column_name="vector")
            .distance_type("cosine")
            .select(["id", "_distance"])
            .limit(K)
        )
        if s.get("nprobes"):
            builder = builder.nprobes(s["nprobes"])
        if s.get("refine_factor"):
            builder = builder.refine_factor(s["refine_factor"])
        if s.get("ef"):
            builder = builder.ef(s["ef"])
        if where is not None:
            builder = builder.where(where.sql(), prefilter=True)
        return builder.to_arrow()["id"].to_pylist()

    t = time.perf_counter()
    query(queries[0], settings[0], None)
    first_ms = (time.perf_counter() - t) * 1000
    sweep = []
    for s in settings:
        row: dict[str, Any] = {"setting": s}
        for name, where in filters.items():

            def run(q: np.ndarray, s: dict[str, Any] = s, where: Filter | None = where) -> Any:
                return query(q, s, where)

            row[name] = _timed(run, queries, data[f"truth_{name}"], budget_s)
        sweep.append(row)
    now = status()
    return {
        "sweep": sweep,
        "first_search_ms": round(first_ms, 1),
        "rss_delta_mb": round(now["VmRSS"] - base["VmRSS"], 1),
        "rss_mb": now["VmRSS"],
        "peak_mb": now["VmHWM"],
    }


# ---- parent ----------------------------------------------------------------------------------
def _child(function: str, args: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """`function(**args)` of this module in a fresh process at nice 10 (bench/measure.py's
    run_child, with a timeout: a child still running after `timeout_s` is killed and recorded)."""
    load, at = load_avg(), now_utc()
    t = time.perf_counter()
    script = (
        "import json, sys, bench.lance_ann as m; "
        f"print(json.dumps(m.{function}(**json.loads(sys.argv[1]))))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "RUST_LOG": "error"}
    try:
        proc = subprocess.run(
            ["nice", "-n", "10", sys.executable, "-c", script, json.dumps(args)],
            capture_output=True, text=True, cwd=ROOT, check=False, env=env, timeout=timeout_s,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"timed_out_s": timeout_s, "at": at, "load_avg_before": load}
    if proc.returncode != 0:
        raise RuntimeError(f"bench.lance_ann.{function} failed:\n{proc.stderr[-3000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    got.update(wall_s=round(time.perf_counter() - t, 1), at=at, load_avg_before=load,
               load_avg_after=load_avg())  # fmt: skip
    return got


def plans(n: int, smoke: bool) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(index kind, build params, query settings) per LanceDB index, sized for `n` rows:
    IVF partitions ~ sqrt(n) (LanceDB's documented default); HNSW in one partition up to 1M
    rows (its docstring: 'setting this to 1 works well for most tables'), ef swept instead."""
    parts = max(4, round(n**0.5))
    probes = [p for p in (10, 20, 50, 100, 200) if p <= parts] or [parts]
    refines = (None, 5, 10, 20)
    if smoke:
        probes, refines = probes[:2], (None, 10)
    ivf = [{"nprobes": p, "refine_factor": r} for p in probes for r in refines]
    default = [{}]  # LanceDB's own defaults: nprobes 20, no refine, ef 1.5 × limit
    efs = (40, 100, 200, 400) if not smoke else (60,)
    # LanceDB refuses ef < k, and a refine factor multiplies k
    hnsw = [{"ef": e, "refine_factor": r} for e in efs for r in (None, 5) if e >= K * (r or 1)]
    return [
        ("IVF_FLAT", {"num_partitions": parts}, default + [{"nprobes": p} for p in probes]),
        ("IVF_PQ", {"num_partitions": parts, "num_sub_vectors": 48}, default + ivf),
        ("IVF_RQ", {"num_partitions": parts}, default + ivf),
        ("IVF_HNSW_SQ", {"num_partitions": 1}, default + hnsw),
    ]


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every method at `n` rows, with the command, time and load it ran under."""
    run = {"command": args.command, "at": now_utc(), "load_before": load_avg()}
    size = _measure_size(n, args)
    return {"rows": n, "run": {**run, "load_after": load_avg()}, **size}


def _measure_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    budget = args.budget_s
    sweep_budget = 3 * budget  # a whole sweep: up to ~50 settings × 3 filters
    per_setting = args.setting_budget_s
    with tempfile.TemporaryDirectory(prefix="casper-lance-ann-", dir=args.tmp) as work:
        out: dict[str, Any] = {"rows": n}  # `rows` first: the partial file says which size
        print(f"[{n:,}] preparing vectors, filters and exact top-{K}", flush=True)
        out["data"] = _child("prepare", {"n": n, "n_queries": args.queries, "work": work}, budget)
        print(f"[{n:,}] casper", flush=True)
        built = _child("casper_build", {"n": n, "work": work}, budget)
        out["casper"] = {"build": built}
        if "timed_out_s" not in built:
            search = {"work": work, "generation": built["generation"], "budget_s": per_setting}
            out["casper"]["search"] = _child("casper_search", search, sweep_budget)
        if args.only == "casper":
            return out
        print(f"[{n:,}] lancedb table + flat search", flush=True)
        out["lance_table"] = _child("lance_write", {"n": n, "work": work}, budget)
        flat = {"work": work, "settings": [{}], "budget_s": args.flat_budget_s}
        out["lance_flat"] = _child("lance_search", flat, sweep_budget)
        out["lance_indexes"] = []
        for kind, params, settings in plans(n, args.smoke):
            if args.kinds and kind not in args.kinds:
                continue
            print(f"[{n:,}] {kind} {params}", flush=True)
            entry: dict[str, Any] = {"kind": kind, "params": params}
            entry["build"] = _child(
                "lance_index", {"work": work, "kind": kind, "params": params}, budget
            )
            if "timed_out_s" not in entry["build"]:
                sweep = {"work": work, "settings": settings, "budget_s": per_setting}
                entry["search"] = _child("lance_search", sweep, sweep_budget)
            out["lance_indexes"].append(entry)
            _save_partial(args, out)
        return out


def _save_partial(args: argparse.Namespace, size: dict[str, Any]) -> None:
    """The size in progress, kept beside the results (a long run killed midway keeps it)."""
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lance_ann.partial.json").write_text(json.dumps(size, indent=1))


# ---- report ----------------------------------------------------------------------------------
def _saved(out: Path) -> dict[str, Any]:
    try:
        return json.loads((out / "lance_ann.json").read_text())
    except (OSError, ValueError):
        return {}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.lance_ann")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 622_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="one tiny size, results to --out")
    parser.add_argument("--out", type=Path, default=None, help="default bench/results")
    parser.add_argument("--budget-s", type=float, default=600.0,
                        help="kill a build or sweep child after this long")  # fmt: skip
    parser.add_argument("--setting-budget-s", type=float, default=20.0,
                        help="stop timing one setting × filter after this long")  # fmt: skip
    parser.add_argument("--flat-budget-s", type=float, default=60.0,
                        help="the same for the flat scan (about 1 s a query at 622k rows)")  # fmt: skip
    parser.add_argument("--kinds", nargs="*", default=None, help="only these LanceDB indexes")
    parser.add_argument("--tmp", type=Path, default=None, help="where the tables are built")
    parser.add_argument(
        "--only",
        choices=["casper", "all"],
        default="all",
        help="casper: its vector side alone (a quick re-run of the headline)",
    )
    parser.add_argument("--rerun", action="store_true",
                        help="keep the sizes measured now as re-runs beside the full results, "
                        "not in their place")  # fmt: skip
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes, args.queries = [3_000], 20
        args.budget_s, args.setting_budget_s, args.flat_budget_s = 120.0, 5.0, 5.0
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="casper-lance-ann-")) if args.smoke else RESULTS
    given = sys.argv[1:] if argv is None else argv
    args.command = " ".join(["python -m bench.lance_ann", *given])
    run = {
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores (shared)",
        "lancedb": import_lancedb().__version__,
        "queries": args.queries,
    }
    measured = {n: run_size(n, args) for n in args.sizes}
    # the sizes not measured now are kept from the last run that measured them
    saved = _saved(args.out)
    sizes = {s["rows"]: s for s in saved.get("sizes", []) if s.get("run")}
    reruns = saved.get("reruns", [])
    if args.rerun:
        reruns = [*reruns, *measured.values()]
    else:
        sizes |= measured
    results = {"run": run, "sizes": [sizes[n] for n in sorted(sizes)], "reruns": reruns}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lance_ann.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "lance_ann.md").write_text(report(results))
    (args.out / "lance_ann.partial.json").unlink(missing_ok=True)
    print(report(results))
    print(f"results in {args.out}")
    return results


if __name__ == "__main__":
    main()
