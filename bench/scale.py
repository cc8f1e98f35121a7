"""Scale benchmark: a heavy texter's history (default 1M generated messages), end to end.

Which figure is which:
- measured with a FAKE fast embedder (random vectors; embedding 1M passages with MiniLM on this
  box would take hours): when the lexical legs become searchable, the first lexical search from
  a cold process, `casper index` peak RSS, kill during embedding + resume, the no-op re-index,
  hybrid p50/p95 in-process and the resident memory of the vector matrix;
- measured with the REAL bundled MiniLM on a sample of the corpus's passages: the embedding rate,
  from which the full fill time is projected;
- recall@10 of the float16 + sign-bit search against exact float32, on MiniLM-shaped vectors
  (SYNTH: bench/synth.py, the same run `python -m bench.vecmem --only synth` makes).

The chat.db is generated once into a cache dir outside the repo (`--cache`, default
~/.cache/casper-bench) and reused. Run: `python -m bench.scale [--messages N]`; only the time to
the first lexical search (its parts and CPU seconds): `python -m bench.scale --only first-search
[--repeat 3]`. Each merges its records into bench/results/scale.json and keeps the others'
(bench/scale_report.py writes the table, each row labelled with the run that measured it).
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
from typing import Any, NamedTuple

import numpy as np

from bench.measure import MB, load_avg, now_utc, p95, status
from bench.scale_report import save_full_run, save_results, to_markdown
from bench.synth import run_synth

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
import casper.indexer.chunk_update as indexing
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
    from casper.index.vecstore import VectorStore
    put = VectorStore.put
    def reporting_put(self, keys, vectors):
        put(self, keys, vectors)  # committed when this returns
        print(json.dumps({"batch": len(keys)}), file=sys.stderr, flush=True)
    VectorStore.put = reporting_put
from casper.cli.indexing import run_index
from pathlib import Path
from casper.config import load_config
from casper.index.chunk_index import vector_status_at
cfg = load_config(Path(args["home"]), chat_db=Path(args["chat_db"]))
T1 = time.perf_counter()  # imports done: run_index starts
report = run_index(cfg, quiet=True).ingest
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


def run_index_child(
    home: Path, chat_db: Path, *, report_batches: bool = False, on_line: Any = None
) -> dict[str, Any]:
    """One `casper index` of `chat_db` into `home` with the FAKE embedder, in a child process
    (INDEX_CHILD); `report_batches` makes it print each committed vector batch."""
    args = {"home": str(home), "chat_db": str(chat_db), "delay": 0.0,
            "report_batches": report_batches}  # fmt: skip
    return _child(INDEX_CHILD, args, on_line)


def stop_service(home: Path) -> None:
    """Stop the service a search in `home` started: it must not outlive the run (its home is a
    temp dir about to be removed)."""
    subprocess.run([sys.executable, "-m", "casper", "serve", "--stop", "--home", str(home)],
                   capture_output=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip


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
    from casper.index.chunk_index import vector_status_at

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

    first = run_index_child(home, chat_db, report_batches=True, on_line=killer)
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
    stop_service(home)  # the search auto-starts one (CASPER_SERVICE is not set for it)
    out["cold_lexical_search"] = {"wall_s": round(cold["wall_s"], 2), "hits": cold["hits"]}
    if lexical:
        out["time_to_first_lexical_search_s"] = round(lexical[0] + cold["wall_s"], 1)
    resumed = run_index_child(home, chat_db)
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
    noop = run_index_child(home, chat_db)
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

    load_before = load_avg()
    first = run_index_child(home, chat_db, on_line=killer)
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
        if service == "1":
            stop_service(home)
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
        "load_avg_after": load_avg(),
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


class FakeIndex(NamedTuple):
    cfg: Any
    index: Any  # casper.index.chunk_index.ChunkIndex
    store: Any  # casper.store.db.Store
    embedder: Any  # FAKE's FakeEmbedder


def open_fake_index(home: Path) -> FakeIndex:
    """The index in `home` (built with the FAKE embedder) opened as `casper search` opens it,
    its store, and the fake that embeds the queries."""
    exec(FAKE, scope := {})  # the same fake the index was built with
    from casper.config import load_config
    from casper.index.chunk_index import ChunkIndex
    from casper.store.db import Store

    cfg = load_config(home)
    index = ChunkIndex.open(
        cfg.index_dir, embedder_name="fake-fast-384", dim=DIM, checksum="fake",
        chunker_version=json.loads((cfg.index_dir / "manifest.json").read_text())["chunker"],
    )  # fmt: skip
    return FakeIndex(cfg, index, Store.open(cfg.store_path), scope["FakeEmbedder"]())


def corpus_queries(index: Any, n: int) -> list[str]:
    """n two-word queries from the corpus's own words (seeded: the same on every run)."""
    texts = index.table.search().select(["text"]).limit(n * 40).to_arrow()["text"]
    rng = np.random.default_rng(5)
    words = [w.strip(".,!?") for t in texts.to_pylist()[::40] for w in t.split() if len(w) > 4]
    return [" ".join(rng.choice(words, 2)) for _ in range(n)]


def hybrid_in_process(home: Path, n_queries: int) -> dict[str, Any]:
    """Hybrid p50/p95 (fake query vectors, no rerank) and what the vector matrix holds."""
    from casper.search.retriever import Retriever

    fake = open_fake_index(home)
    index = fake.index
    queries = corpus_queries(index, n_queries)
    before = status()
    t = time.perf_counter()
    matrix = index.matrix()
    load_s = time.perf_counter() - t
    loaded = status()
    retriever = Retriever(index, fake.embedder, None, store=fake.store)
    samples = []
    for i, q in enumerate(queries + queries[:3]):
        t = time.perf_counter()
        retriever.search(q, rerank=False)
        if i >= 3:
            samples.append((time.perf_counter() - t) * 1000)
    after = status()
    return {
        "queries": len(samples),
        "p50_ms": round(statistics.median(samples), 1),
        "p95_ms": round(p95(samples), 1),
        "matrix_load_s": round(load_s, 2),
        "vectors_file_mb": round(matrix.vectors.nbytes / MB),
        "codes_in_memory_mb": round(matrix.codes.nbytes / MB),
        "rss_before_mb": {k: round(v) for k, v in before.items()},
        "rss_after_load_mb": {k: round(v) for k, v in loaded.items()},
        "rss_after_queries_mb": {k: round(v) for k, v in after.items()},
    }


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
    """Run, and merge this run's records into bench/results/scale.{json,md}."""
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "casper-bench")
    parser.add_argument("--kill-at", type=float, default=0.4, help="share embedded, then kill")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--recall-chunks", type=int, default=None, help="default: --messages")
    parser.add_argument("--recall-queries", type=int, default=100, help="SYNTH recall queries")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--only", choices=["first-search"],
        help="run only this part; its result is merged into scale.json/md",
    )  # fmt: skip
    parser.add_argument("--lexical-only", action="store_true", help="= --only first-search")
    parser.add_argument("--repeat", type=int, default=1, help="with --only: runs (median kept)")
    args = parser.parse_args(argv)
    chat_db = ensure_chat_db(args.cache, args.messages)
    if args.only == "first-search" or args.lexical_only:
        at = now_utc()
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="casper-scale-") as tmp:
                runs.append(first_search(chat_db, Path(tmp) / "home"))
            print(json.dumps(runs[-1]), flush=True)
        runs.sort(key=lambda r: r["time_to_first_lexical_search_s"])
        got = {**runs[len(runs) // 2], "runs": len(runs),
               "all_runs_s": [r["time_to_first_lexical_search_s"] for r in runs],
               "by": "bench.scale --only first-search", "at": at,
               "messages_generated": args.messages}  # fmt: skip
        # "lexical_only": the old single-figure record of this measure
        return save_results(args.out, {"first_search": got}, drop=("lexical_only",))
    run = {"by": "bench.scale", "at": now_utc(), "load_avg_before": load_avg()}
    records: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores (shared)",
        "messages_generated": args.messages,
    }
    with tempfile.TemporaryDirectory(prefix="casper-scale-") as tmp:
        home = Path(tmp) / "home"
        records["end_to_end"] = end_to_end(chat_db, home, args.kill_at, args.queries)
        try:
            records["real_minilm"] = real_embed_rate(home)
            chunks = records["end_to_end"]["chunks"]
            rate = records["real_minilm"]["passages_per_s"]
            records["real_minilm"]["projected_fill_min"] = round(chunks / rate / 60, 1)
        except Exception as exc:  # noqa: BLE001 - the bundled model may be missing
            records["real_minilm"] = {"error": type(exc).__name__}
    # SYNTH recall: the same run (and record) as `python -m bench.vecmem --only synth`
    synth = run_synth(args.recall_chunks or args.messages, args.recall_queries, by="bench.scale")
    records["full_run"] = {**run, "load_avg_after": load_avg()}
    saved = save_full_run(args.out, records, synth)
    print(to_markdown(saved))
    return saved


if __name__ == "__main__":
    main()
