"""Scale benchmark: a heavy texter's history (default 1M generated messages), end to end.

Which figure is which:
- measured with a FAKE fast embedder (random vectors; embedding 1M passages with MiniLM on this
  box would take hours): when the lexical legs become searchable, the first lexical search from
  a cold process, `casper index` peak RSS, kill during embedding + resume, the no-op re-index,
  hybrid p50/p95 in-process and the resident memory of the vector matrix;
- measured with the REAL bundled MiniLM on a sample of the corpus's passages: the embedding rate,
  from which the full fill time is projected;
- recall@10 of the float16 + sign-bit search against exact float32, on MiniLM-shaped vectors
  (the generator of bench/retrieval.py, built block by block).

The chat.db is generated once into a cache dir outside the repo (`--cache`, default
~/.cache/casper-bench) and reused. Run: `python -m bench.scale [--messages N]`; only the time to
the first lexical search (its parts and CPU seconds, merged into scale.json/md):
`python -m bench.scale --only first-search [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
DIM = 384

FAKE = '''
import sys, time, zlib
import numpy as np

class FakeEmbedder:
    """Random unit vectors, fast: stands in for MiniLM where 1M passages would take hours."""
    name, checksum, dim = "fake-fast-384", "fake", 384
    def __init__(self, delay=0.0):
        self.delay, self.embedded = delay, 0
    def embed_documents(self, texts, on_progress=None):
        if self.delay:
            time.sleep(self.delay)
        self.embedded += len(texts)
        rng = np.random.default_rng(zlib.crc32("".join(texts[:4]).encode()) + len(texts))
        v = rng.standard_normal((len(texts), 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    def embed_query(self, text):
        v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(384)
        return (v / np.linalg.norm(v)).astype(np.float32)
'''

INDEX_CHILD = (
    FAKE
    + """
import json, os, sys, time
T0 = time.perf_counter()
import casper.backends.factory as factory
import casper.indexing as indexing
args = json.loads(sys.argv[1])
embedder = FakeEmbedder(args["delay"])
factory.make_embedder = lambda cfg: embedder
lexical = indexing.update_lexical
def timed_lexical(*a, **k):
    entered, cpu_entered = time.perf_counter() - T0, time.process_time()
    out = lexical(*a, **k)
    hwm = next(int(l.split()[1]) / 1024 for l in open("/proc/self/status")
               if l.startswith("VmHWM:"))
    print(json.dumps({"lexical_ready_s": time.perf_counter() - T0, "peak_rss_mb": hwm,
                      "lexical_entered_s": entered, "cpu_s": time.process_time(),
                      "cpu_before_lexical_s": cpu_entered, "run_index_at_s": T1 - T0,
                      "lexical_timings": out.timings}),
          file=sys.stderr, flush=True)
    return out
indexing.update_lexical = timed_lexical
put = None
if args["report_batches"]:
    from casper.store.vecstore import VectorStore
    put = VectorStore.put
    def reporting_put(self, keys, vectors):
        put(self, keys, vectors)  # committed when this returns
        print(json.dumps({"batch": len(keys)}), file=sys.stderr, flush=True)
    VectorStore.put = reporting_put
from casper.commands.data import run_index
from pathlib import Path
from casper.config import load_config
from casper.store.index import vector_status_at
cfg = load_config(Path(args["home"]), chat_db=Path(args["chat_db"]))
T1 = time.perf_counter()  # imports done: run_index starts
report = run_index(cfg, quiet=True)
run_s = time.perf_counter() - T1
wall = time.perf_counter() - T0
rss = next(int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
done, total = vector_status_at(cfg.index_dir)
print(json.dumps({"wall_s": wall, "run_index_s": run_s, "peak_rss_mb": rss, "embedded": embedder.embedded,
                  "noop": report.noop, "messages": report.messages_total,
                  "chunks": report.chunks_total, "vectors_done": done, "vectors_total": total,
                  "timings": report.timings}))
"""
)

SEARCH_CHILD = (
    FAKE
    + """
import json, sys, time
T0 = time.perf_counter()
import casper.backends.factory as factory
factory.make_embedder = lambda cfg: FakeEmbedder()
from typer.testing import CliRunner
from casper.cli import app
args = json.loads(sys.argv[1])
out = CliRunner().invoke(app, ["search", args["query"], "--mode", "bm25", "--no-rerank",
                               "--json", "--home", args["home"]])
hits = len(json.loads(out.stdout)["hits"]) if out.exit_code == 0 else -1
print(json.dumps({"wall_s": time.perf_counter() - T0, "hits": hits, "exit": out.exit_code}))
"""
)


def _child(script: str, args: dict[str, Any], on_line: Any = None) -> dict[str, Any]:
    """Run a child (niced); `on_line(dict, proc)` sees each JSON line it prints on stderr."""
    proc = subprocess.Popen(
        ["nice", "-n", "5", sys.executable, "-c", script, json.dumps(args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    events: list[dict[str, Any]] = []
    assert proc.stderr is not None and proc.stdout is not None
    for line in proc.stderr:
        if line.startswith("{"):
            event = json.loads(line)
            events.append(event)
            if on_line is not None:
                on_line(event, proc)
    out = proc.stdout.read()
    proc.wait()
    last = out.strip().splitlines()[-1] if out.strip() else "{}"
    result = json.loads(last) if last.startswith("{") else {}
    result["events"] = events
    result["returncode"] = proc.returncode
    return result


def ensure_chat_db(cache: Path, n: int) -> Path:
    """The generated chat.db of n messages, built once (niced) and reused."""
    from ingest.synthetic.bulk import build_bulk_chat_db

    path = cache / f"bulk-{n}.db"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cache / f"bulk-{n}.building"
        tmp.mkdir(exist_ok=True)
        os.nice(5)
        build_bulk_chat_db(tmp / "chat.db", n_messages=n, n_people=200)
        os.replace(tmp / "chat.db", path)
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def end_to_end(chat_db: Path, home: Path, kill_at: float, queries: int) -> dict[str, Any]:
    """First index killed during embedding, resume, no-op, cold lexical search, hybrid."""
    from casper.config import load_config
    from casper.store.index import vector_status_at

    index_dir = load_config(home).index_dir
    out: dict[str, Any] = {}
    seen = {"batches": 0, "rows": 0}
    total_box: dict[str, int] = {}

    def killer(event: dict[str, Any], proc: subprocess.Popen) -> None:
        if "lexical_ready_s" in event:
            total_box["total"] = (vector_status_at(index_dir) or (0, 0))[1]
        if "batch" in event:
            seen["batches"] += 1
            seen["rows"] += event["batch"]
            if seen["rows"] >= kill_at * total_box.get("total", 1 << 60):
                proc.kill()  # SIGKILL, like a crash or a closed lid that never wakes

    first = _child(
        INDEX_CHILD,
        {"home": str(home), "chat_db": str(chat_db), "delay": 0.0, "report_batches": True},
        killer,
    )
    lexical = [e["lexical_ready_s"] for e in first["events"] if "lexical_ready_s" in e]
    out["first_index"] = {
        "killed": first["returncode"] != 0,
        "lexical_ready_s": round(lexical[0], 1) if lexical else None,
        "batches_committed_before_kill": seen["batches"],
        "rows_committed_before_kill": seen["rows"],
    }
    done, total = vector_status_at(index_dir) or (0, 0)
    missing = _missing_keys(index_dir)
    out["after_kill"] = {"vectors_done": done, "vectors_total": total, "missing_keys": missing}
    word = _a_word(index_dir)
    cold = _child(SEARCH_CHILD, {"home": str(home), "query": word})
    out["cold_lexical_search"] = {"wall_s": round(cold["wall_s"], 2), "hits": cold["hits"]}
    if lexical:
        out["time_to_first_lexical_search_s"] = round(lexical[0] + cold["wall_s"], 1)
    resumed = _child(
        INDEX_CHILD,
        {"home": str(home), "chat_db": str(chat_db), "delay": 0.0, "report_batches": False},
    )
    out["resume"] = {
        "wall_s": round(resumed["wall_s"], 1),
        "embedded": resumed["embedded"],
        "missing_before": missing,
        "embeds_only_missing": resumed["embedded"] == missing,
        "vectors_done": resumed["vectors_done"],
        "vectors_total": resumed["vectors_total"],
        "peak_rss_mb": round(resumed["peak_rss_mb"]),
    }
    out["messages"], out["chunks"] = resumed["messages"], resumed["vectors_total"]
    noop = _child(
        INDEX_CHILD,
        {"home": str(home), "chat_db": str(chat_db), "delay": 0.0, "report_batches": False},
    )
    out["noop_reindex"] = {
        "wall_s_process": round(noop["wall_s"], 2),
        "run_index_s": round(noop["run_index_s"], 2),
        "embedded": noop["embedded"],
        "noop": noop["noop"],
        "peak_rss_mb": round(noop["peak_rss_mb"]),
    }
    out["index_peak_rss_mb"] = max(
        round(resumed["peak_rss_mb"]), out["noop_reindex"]["peak_rss_mb"]
    )
    out["hybrid"] = hybrid_in_process(home, queries)
    return out


def first_search(chat_db: Path, home: Path) -> dict[str, Any]:
    """A first `casper index` (FAKE embedder) stopped with kill -9 once the lexical legs are
    ready, then a cold `casper search --mode bm25` process: the time to the first lexical
    search, split into its parts, with CPU seconds beside every wall figure."""
    import resource

    def killer(event: dict[str, Any], proc: subprocess.Popen) -> None:
        if "lexical_ready_s" in event:
            proc.kill()

    load_before = [round(x, 2) for x in os.getloadavg()]
    first = _child(
        INDEX_CHILD,
        {"home": str(home), "chat_db": str(chat_db), "delay": 0.0, "report_batches": False},
        killer,
    )
    e = [e for e in first["events"] if "lexical_ready_s" in e][0]
    from casper.config import load_config

    word = _a_word(load_config(home).index_dir)
    searches = {}
    for via, service in (("in_process", "0"), ("fresh_service", "1")):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        out = subprocess.run(
            ["nice", "-n", "5", sys.executable, "-m", "casper", "search", word, "--mode", "bm25",
             "--no-rerank", "--json", "--home", str(home)],
            capture_output=True, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
                 "CASPER_SERVICE": service},
        )  # fmt: skip
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        hits = len(json.loads(out.stdout)["hits"]) if out.returncode == 0 else -1
        searches[via] = {
            "wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            "hits": hits,
        }
        if service == "1":  # the service it started must not outlive the run
            subprocess.run([sys.executable, "-m", "casper", "serve", "--stop", "--home", str(home)],
                           capture_output=True, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    searches["fresh_service"]["note"] = "client wall; the service's own CPU is not counted"
    ready, entered = e["lexical_ready_s"], e["lexical_entered_s"]
    cold = searches["in_process"]
    return {
        "time_to_first_lexical_search_s": round(ready + cold["wall_s"], 1),
        "cpu_s_to_first_lexical_search": round(e["cpu_s"] + cold["cpu_s"], 1),
        "lexical_ready_s": round(ready, 1),
        "parts_s": {
            "process_start_and_imports": round(e["run_index_at_s"], 1),
            "ingest_and_open_index": round(entered - e["run_index_at_s"], 1),
            "lexical_step": round(ready - entered, 1),
            "cold_search_in_process": cold["wall_s"],
        },
        "lexical_step_parts_s": e.get("lexical_timings", {}),
        "non_ingest_s": round(e["run_index_at_s"] + ready - entered + cold["wall_s"], 1),
        "cpu_s_parts": {
            "index_until_lexical_step": round(e["cpu_before_lexical_s"], 1),
            "lexical_step": round(e["cpu_s"] - e["cpu_before_lexical_s"], 1),
            "cold_search_in_process": cold["cpu_s"],
        },
        "cold_search": searches,
        "index_peak_rss_mb_until_lexical_ready": round(e.get("peak_rss_mb", 0)),
        "load_avg_before": load_before,
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
    }


def _missing_keys(index_dir: Path) -> int:
    """Distinct chunk texts without a vector, counted independently of the fill's own status."""
    import sqlite3

    import lancedb

    table = lancedb.connect(str(index_dir)).open_table("chunks")
    keys = set(
        table.search().select(["content_hash"]).limit(None).to_arrow()["content_hash"].to_pylist()
    )
    conn = sqlite3.connect(index_dir / "vectors.sqlite")
    have = {k for (k,) in conn.execute("SELECT key FROM vec")}
    conn.close()
    return len(keys - have)


def _a_word(index_dir: Path) -> str:
    import lancedb

    table = lancedb.connect(str(index_dir)).open_table("chunks")
    text = table.search().select(["text"]).limit(1).to_arrow()["text"][0].as_py()
    return max(text.split(), key=len).strip(".,!?")


def _rss() -> dict[str, float]:
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                fields[key] = int(line.split()[1]) / 1024
    return fields


def hybrid_in_process(home: Path, n_queries: int) -> dict[str, Any]:
    """Hybrid p50/p95 (fake query vectors, no rerank) and what the vector matrix holds."""
    exec(FAKE, scope := {})  # the same fake the index was built with
    from casper.config import load_config
    from casper.retrieve import Retriever
    from casper.store.db import Store
    from casper.store.index import ChunkIndex

    cfg = load_config(home)
    index = ChunkIndex.open(
        cfg.index_dir, embedder_name="fake-fast-384", dim=DIM, checksum="fake",
        chunker_version=json.loads((cfg.index_dir / "manifest.json").read_text())["chunker"],
    )  # fmt: skip
    store = Store.open(cfg.store_path)
    texts = index.table.search().select(["text"]).limit(n_queries * 40).to_arrow()["text"]
    rng = np.random.default_rng(5)
    words = [w.strip(".,!?") for t in texts.to_pylist()[::40] for w in t.split() if len(w) > 4]
    queries = [" ".join(rng.choice(words, 2)) for _ in range(n_queries)]
    before = _rss()
    t = time.perf_counter()
    matrix = index.matrix()
    load_s = time.perf_counter() - t
    loaded = _rss()
    retriever = Retriever(index, scope["FakeEmbedder"](), None, store=store)
    samples = []
    for i, q in enumerate(queries + queries[:3]):
        t = time.perf_counter()
        retriever.search(q, rerank=False)
        if i >= 3:
            samples.append((time.perf_counter() - t) * 1000)
    after = _rss()
    samples.sort()
    codes_mb = matrix.codes.nbytes / 2**20
    return {
        "queries": len(samples),
        "p50_ms": round(statistics.median(samples), 1),
        "p95_ms": round(samples[int(round(0.95 * (len(samples) - 1)))], 1),
        "matrix_load_s": round(load_s, 2),
        "vectors_file_mb": round(matrix.vectors.nbytes / 2**20),
        "codes_in_memory_mb": round(codes_mb),
        "rss_before_mb": {k: round(v) for k, v in before.items()},
        "rss_after_load_mb": {k: round(v) for k, v in loaded.items()},
        "rss_after_queries_mb": {k: round(v) for k, v in after.items()},
    }


def synth_vectors(n: int, n_queries: int, seed: int = 7) -> tuple[Any, np.ndarray]:
    """SYNTH: MiniLM-shaped unit vectors (topic centroids, decaying spectrum, random rotation),
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


def vector_recall(n: int, n_queries: int = 50, k: int = 10, seed: int = 7) -> dict[str, Any]:
    """recall@10 of the float16 + sign-bit search vs exact float32, MiniLM-shaped vectors,
    generated and scored block by block (never n × 384 float32 in memory)."""

    from casper.store.vector_cache import build_vectors
    from casper.store.vectors import VectorMatrix

    stream, queries = synth_vectors(n, n_queries, seed)

    tmp = Path(tempfile.mkdtemp(prefix="casper-scale-vec-"))
    t = time.perf_counter()
    halves = ((pos, vecs.astype(np.float16)) for pos, vecs in stream())
    cached = build_vectors(tmp, 1, 1, DIM, [str(i) for i in range(n)], lambda _keys: (n, halves))
    build_s = time.perf_counter() - t
    # exact float32 reference, block by block: the generator's vectors before float16 storage
    best = [np.empty(0, np.int64)] * n_queries
    best_scores = [np.empty(0, np.float32)] * n_queries
    for pos, vecs in stream():
        scores = vecs @ queries.T  # (m, q)
        for qi in range(n_queries):
            s = np.concatenate([best_scores[qi], scores[:, qi]])
            r = np.concatenate([best[qi], pos])
            top = np.argsort(-s, kind="stable")[:k]
            best[qi], best_scores[qi] = r[top], s[top]
    meta = synth_meta(n)
    before = _rss()
    matrix = VectorMatrix.build(meta, *cached, version=1)
    hits, samples = [], []
    for qi in range(n_queries):
        t = time.perf_counter()
        got = {int(cid) for cid, _ in matrix.search(queries[qi], k)}
        samples.append((time.perf_counter() - t) * 1000)
        hits.append(len(got & set(best[qi].tolist())) / k)
    after = _rss()
    sweep = _depth_sweep(matrix, queries, best, k)
    shutil.rmtree(tmp, ignore_errors=True)
    samples.sort()
    return {
        "depth_sweep": sweep,
        "chunks": n,
        "recall@10_vs_exact_float32": round(float(np.mean(hits)), 4),
        "vector_p50_ms": round(statistics.median(samples), 1),
        "cache_build_s": round(build_s, 1),
        "vectors_float16_mb": round(matrix.vectors.nbytes / 2**20),
        "codes_mb": round(matrix.codes.nbytes / 2**20),
        "rss_delta_after_queries_mb": {k: round(after[k] - before[k]) for k in after},
    }


def _depth_sweep(matrix: Any, queries: np.ndarray, best: list, k: int) -> list[dict[str, Any]]:
    """recall@10 and p50 with fewer rescored candidates (RESCORE_SHARE = count // share)."""
    import casper.store.vectors as vectors

    default = vectors.RESCORE_SHARE
    out = []
    try:
        for share in (64, 256, 512):
            vectors.RESCORE_SHARE = share
            hits, samples = [], []
            for qi in range(len(queries)):
                t = time.perf_counter()
                got = {int(cid) for cid, _ in matrix.search(queries[qi], k)}
                samples.append((time.perf_counter() - t) * 1000)
                hits.append(len(got & set(best[qi].tolist())) / k)
            out.append({"share": share, "recall@10": round(float(np.mean(hits)), 4),
                        "p50_ms": round(statistics.median(samples), 1)})  # fmt: skip
    finally:
        vectors.RESCORE_SHARE = default
    return out


def real_embed_rate(home: Path, sample: int = 256) -> dict[str, Any]:
    """Passages/s of the bundled MiniLM on a sample of the corpus's own passages."""
    import lancedb

    from casper.backends.factory import make_embedder
    from casper.config import load_config

    table = lancedb.connect(str(load_config(home).index_dir)).open_table("chunks")
    texts = table.search().select(["embed_text"]).limit(sample).to_arrow()["embed_text"]
    embedder = make_embedder(load_config(home))
    embedder.embed_documents(texts.to_pylist()[:16])  # warm-up
    t = time.perf_counter()
    embedder.embed_documents(texts.to_pylist())
    rate = sample / (time.perf_counter() - t)
    return {"model": embedder.name, "sample": sample, "passages_per_s": round(rate, 1)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run and write bench/results/scale.{json,md}."""
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "casper-bench")
    parser.add_argument("--kill-at", type=float, default=0.4, help="share embedded, then kill")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--recall-chunks", type=int, default=None, help="default: --messages")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--only", choices=["first-search"],
        help="run only this part; its result is merged into scale.json/md",
    )  # fmt: skip
    parser.add_argument("--lexical-only", action="store_true", help="= --only first-search")
    parser.add_argument("--repeat", type=int, default=1, help="with --only: runs (median kept)")
    args = parser.parse_args(argv)
    if args.only == "first-search" or args.lexical_only:
        chat_db = ensure_chat_db(args.cache, args.messages)
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="casper-scale-") as tmp:
                runs.append(first_search(chat_db, Path(tmp) / "home"))
            print(json.dumps(runs[-1]), flush=True)
        runs.sort(key=lambda r: r["time_to_first_lexical_search_s"])
        got = {**runs[len(runs) // 2], "runs": len(runs),
               "all_runs_s": [r["time_to_first_lexical_search_s"] for r in runs]}  # fmt: skip
        saved_path = args.out / "scale.json"
        saved = json.loads(saved_path.read_text()) if saved_path.exists() else {}
        saved.pop("lexical_only", None)  # the old single-figure record of this measure
        saved["first_search"] = got
        args.out.mkdir(parents=True, exist_ok=True)
        saved_path.write_text(json.dumps(saved, indent=1) + "\n")
        if "end_to_end" in saved:
            (args.out / "scale.md").write_text(to_markdown(saved))
        return saved
    results: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores (shared)",
        "load_avg_before": [round(x, 2) for x in os.getloadavg()],
        "messages_generated": args.messages,
    }
    chat_db = ensure_chat_db(args.cache, args.messages)
    with tempfile.TemporaryDirectory(prefix="casper-scale-") as tmp:
        home = Path(tmp) / "home"
        results["end_to_end"] = end_to_end(chat_db, home, args.kill_at, args.queries)
        try:
            results["real_minilm"] = real_embed_rate(home)
            chunks = results["end_to_end"]["chunks"]
            rate = results["real_minilm"]["passages_per_s"]
            results["real_minilm"]["projected_fill_min"] = round(chunks / rate / 60, 1)
        except Exception as exc:  # noqa: BLE001 - the bundled model may be missing
            results["real_minilm"] = {"error": type(exc).__name__}
    results["vector_recall"] = vector_recall(args.recall_chunks or args.messages)
    results["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "scale.md").write_text(to_markdown(results))
    print(to_markdown(results))
    return results


def to_markdown(r: dict[str, Any]) -> str:
    e, v, m = r["end_to_end"], r["vector_recall"], r.get("real_minilm", {})
    h = e["hybrid"]
    rss = h["rss_after_queries_mb"]
    base = h["rss_before_mb"]
    note = (
        "; the last full run, older than the first-search rows below" if "first_search" in r else ""
    )
    # rows measured before the float16 rows stopped being mapped (bench/vecmem.py re-measures)
    old = "; before the vecmem change" if "vector_memory" in r else ""
    lines = [
        f"# Scale: {r['messages_generated']:,} generated messages "
        f"({e['messages']:,} searchable, {e['chunks']:,} chunks)",
        "",
        f"{r['machine']}; load average before {r['load_avg_before']}, after "
        f"{r['load_avg_after']}. FAKE = fake fast embedder (random vectors), REAL = the "
        "bundled MiniLM, SYNTH = MiniLM-shaped generated vectors.",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| time to first lexical search from a cold start (FAKE{note}) | "
        f"**{e.get('time_to_first_lexical_search_s')} s** (lexical legs ready "
        f"{e['first_index']['lexical_ready_s']} s after `casper index` started, + "
        f"{e['cold_lexical_search']['wall_s']} s for a cold `casper search --mode bm25`) | ≤ 60 s |",
        f"| vector memory resident (FAKE, after {h['queries']} hybrid queries{old}) | "
        f"**{rss['RssAnon'] - base['RssAnon']} MB anonymous** + "
        f"{rss['RssFile'] - base['RssFile']} MB of the memory-mapped float16 file "
        f"({h['vectors_file_mb']} MB on disk; sign codes {h['codes_in_memory_mb']} MB) | ≤ 400 MB |",
        f"| hybrid p50 / p95 in-process (FAKE query vectors, no rerank) | "
        f"**{h['p50_ms']} / {h['p95_ms']} ms** | ≤ 60 / 150 ms |",
        f"| `casper index` peak RSS (FAKE) | **{e['index_peak_rss_mb']} MB** | ≤ 1.5 GB |",
        f"| resume after kill -9 during embedding (FAKE) | killed after "
        f"{e['after_kill']['vectors_done']:,} of {e['after_kill']['vectors_total']:,} vectors; "
        f"the next run embedded **{e['resume']['embedded']:,}** = the "
        f"{e['resume']['missing_before']:,} missing: "
        f"{'yes' if e['resume']['embeds_only_missing'] else 'NO'} | only the missing |",
        f"| no-op re-index | **{e['noop_reindex']['run_index_s']} s** in-process "
        f"({e['noop_reindex']['wall_s_process']} s for the whole process, imports included), "
        f"{e['noop_reindex']['embedded']} embedded | ≤ 1 s |",
        f"| recall@10, float16 + sign-bit prefilter vs exact float32 (SYNTH, "
        f"{v['chunks']:,} chunks{old}) | **{v['recall@10_vs_exact_float32']}** "
        f"(vector leg p50 {v['vector_p50_ms']} ms) | ≥ 0.99 |",
    ]
    if "passages_per_s" in m:
        lines.append(
            f"| embedding rate (REAL, {m['sample']} of the corpus's passages) | "
            f"{m['passages_per_s']} passages/s → a full fill of {e['chunks']:,} chunks ≈ "
            f"{m['projected_fill_min']} min (searchable lexically meanwhile) | — |"
        )
    lines += first_search_rows(r.get("first_search"))
    if "vector_memory" in r:  # bench/vecmem.py: the figures after the vecmem change
        from bench.vecmem_report import markdown_rows

        lines += markdown_rows(r["vector_memory"])
    for row in r.get("depth_sweep", {}).get("sweep", []):
        lines.append(
            f"| rescoring `count // {row['share']}` candidates (SYNTH{old}, "
            f"{r['depth_sweep']['chunks']:,} chunks, {r['depth_sweep']['queries']} queries) | "
            f"recall@10 {row['recall@10']}, vector p50 {row['p50_ms']} ms | ≥ 0.99 |"
        )
    lines += [
        "",
        f"Resume run: {e['resume']['wall_s']} s, peak RSS {e['resume']['peak_rss_mb']} MB. "
        f"Vector matrix load (cold, from the cache): {h['matrix_load_s']} s. "
        f"SYNTH matrix: {v['vectors_float16_mb']} MB float16 (memory-mapped) + "
        f"{v['codes_mb']} MB sign codes; RSS growth over its queries "
        f"{v['rss_delta_after_queries_mb']} MB.",
        "",
    ]
    return "\n".join(lines)


def first_search_rows(f: dict[str, Any] | None) -> list[str]:
    """The rows of `--only first-search` (see `first_search`)."""
    if not f:
        return []
    p, c, lex = f["parts_s"], f["cpu_s_parts"], f.get("lexical_step_parts_s", {})
    svc = f["cold_search"]["fresh_service"]
    return [
        f"| time to first lexical search from a cold start, `--only first-search` (FAKE, "
        f"median of {f.get('runs', 1)}: {f.get('all_runs_s')}; load {f['load_avg_before']} → "
        f"{f['load_avg_after']}) | **{f['time_to_first_lexical_search_s']} s** wall, "
        f"{f['cpu_s_to_first_lexical_search']} CPU-s: start + imports {p['process_start_and_imports']}"
        f" s, ingest {p['ingest_and_open_index']} s, lexical step {p['lexical_step']} s (chunk + "
        f"write {lex.get('chunk', '?')} s, text index {lex.get('optimize', '?')} s), cold "
        f"`casper search --mode bm25` {p['cold_search_in_process']} s | ≤ 60 s |",
        f"| … of which not ingest (start + lexical step + cold search) | "
        f"**{f['non_ingest_s']} s** wall; CPU-s: index until the lexical step "
        f"{c['index_until_lexical_step']}, lexical step {c['lexical_step']}, cold search "
        f"{c['cold_search_in_process']} | — |",
        f"| first `casper search --mode bm25` through a freshly started service | "
        f"{svc['wall_s']} s (client wall; {svc['hits']} hits) | — |",
        "| `casper index` peak RSS through ingest + lexical index (FAKE) | "
        f"**{f['index_peak_rss_mb_until_lexical_ready']} MB** | ≤ 1.5 GB |",
    ]


if __name__ == "__main__":
    main()
