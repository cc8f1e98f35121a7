"""Cold in-process search as a whole process: `CASPER_SERVICE=0 casper search --mode bm25`.

Builds a demo history of ~9k messages (index vectors from a hashing embedder: a BM25 search never
loads the embedder, so the model doesn't matter here), then times fresh `casper` processes. The
first one also tries the reranker once (and remembers that it is missing); the rest are the
steady cold path a user sees. Run `python -m bench.cold_path [--runs 7]`; writes
bench/results/cold_path.{json,md}. Target: <= 2.5 s wall for a cold in-process search.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
REPO = Path(__file__).resolve().parents[1]
QUERIES = ["sushi", "dentist appointment", "flight home", "kitten name", "door code"]


class HashingEmbedder:
    """Bag of hashed words (deterministic, no model): enough to build a real index."""

    name, dim, checksum = "bench-hash-64", 64, "bench"

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        for word in text.lower().split():
            v[int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % self.dim] += 1
        return v / max(float(np.linalg.norm(v)), 1e-6)

    def embed_documents(self, texts, on_progress=None):  # noqa: ANN001, ANN201
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim))

    def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)


def build_home(base: Path, scale: float) -> tuple[Path, int]:
    import casper.backends.factory as factory
    from casper.cli.indexing import run_index
    from casper.config import load_config
    from ingest.synthetic import build_demo_corpus

    corpus = build_demo_corpus(base / "src", scale=scale)
    real = factory.make_embedder
    factory.make_embedder = lambda cfg: HashingEmbedder()  # type: ignore[assignment]
    try:
        cfg = load_config(base / "home", chat_db=corpus.chat_db, contacts=corpus.contacts)
        report = run_index(cfg, quiet=True).ingest
    finally:
        # `python -m bench` runs the others in this process: bench.scale's REAL embedding rate
        # got this hashing embedder (103k "MiniLM" passages/s) while it stayed patched
        factory.make_embedder = real
    return base / "home", report.messages_total


def time_search(home: Path, query: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one fresh `casper search` process. CPU time is
    the figure to compare on a shared box: wall time there mostly measures the neighbours."""
    env = {**os.environ, "CASPER_HOME": str(home), "CASPER_SERVICE": "0", "PYTHONPATH": str(REPO)}
    casper = Path(sys.executable).with_name("casper")
    cmd = [str(casper), "search", "--mode", "bm25", query, "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scale", type=float, default=2.3)  # ~9k messages
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="casper-cold-"))
    try:
        home, messages = build_home(base, args.scale)
        first, first_cpu = time_search(home, QUERIES[0])
        timed = [time_search(home, QUERIES[i % len(QUERIES)]) for i in range(args.runs)]
        runs, cpus = [w for w, _ in timed], [c for _, c in timed]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    result = {
        "messages": messages,
        "first_call_s": round(first, 3),
        "first_call_cpu_s": round(first_cpu, 3),
        "cold_s": {
            "p50": round(statistics.median(runs), 3),
            "min": round(min(runs), 3),
            "max": round(max(runs), 3),
        },
        "cpu_s_p50": round(statistics.median(cpus), 3),
        "runs": [round(r, 3) for r in runs],
        "target_s": 2.5,
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cold_path.json").write_text(json.dumps(result, indent=1))
    (RESULTS / "cold_path.md").write_text(
        "# Cold in-process search (`CASPER_SERVICE=0 casper search --mode bm25`)\n\n"
        f"{messages} messages, {result['machine']}, load average {result['load_avg_1m']}.\n\n"
        "| call | wall s | CPU s (user+sys) |\n|---|---:|---:|\n"
        f"| first ever (tries the reranker once) | {result['first_call_s']} "
        f"| {result['first_call_cpu_s']} |\n"
        f"| cold process, p50 of {len(runs)} | {result['cold_s']['p50']} "
        f"| {result['cpu_s_p50']} |\n"
        f"| wall min / max | {result['cold_s']['min']} / {result['cold_s']['max']} | |\n"
    )
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
