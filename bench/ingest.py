"""Ingest benchmark: a generated chat.db → store + stats (no embeddings).

Reports throughput (messages/s, wall and CPU — the ingest process and its worker processes),
peak RSS of the ingest process and of its largest worker, an incremental no-op run and an
incremental run after 1,000 new messages. Each full run goes into a new store;
the median of `--repeat` is reported (the machine may be shared). Run:
`python -m bench.ingest [--messages N] [--repeat K]`.

`--messages 1000000` reads the generated chat.db cached in ~/.cache/casper-bench (what
bench.scale builds; generating it takes minutes) in place, read-only, when it is there; the
append step then needs a writable copy and is skipped. Results are kept per size in
bench/results/ingest.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
CACHE = Path(os.environ.get("CASPER_BENCH_CACHE", Path.home() / ".cache" / "casper-bench"))

CHILD = """
import json, sys, time, resource
scale = 1 << 20 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
from pathlib import Path
from zoneinfo import ZoneInfo
from casper.indexer.pipeline import Indexer
from casper.store.db import Store
def children_cpu():  # worker processes, counted once they have exited (the run joins them)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
store = Store.open(Path(sys.argv[1]))
t, c, k = time.perf_counter(), time.process_time(), children_cpu()
report = Indexer(store, Path(sys.argv[2]), None, ZoneInfo("UTC")).run()
elapsed, main_cpu = time.perf_counter() - t, time.process_time() - c
workers_cpu = children_cpu() - k
cpu = main_cpu + workers_cpu
try:  # VmHWM is this process's own peak; ru_maxrss survives exec, so it can be the parent's
    rss_mb = next(int(line.split()[1]) / 1024 for line in open("/proc/self/status")
                  if line.startswith("VmHWM:"))
except OSError:
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale
# the largest worker's peak (an upper bound: a spawned child's count starts at its fork)
workers_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / scale
print(json.dumps({"elapsed_s": elapsed, "cpu_s": cpu, "main_cpu_s": main_cpu,
                  "workers_cpu_s": workers_cpu, "workers_peak_rss_mb": workers_rss_mb,
                  "rows": report.messages_new,
                  "reactions": report.reactions, "noop": report.noop, "timings": report.timings,
                  "cpu_timings": report.cpu_s, "peak_rss_mb": rss_mb}))
"""


def _run(store: Path, db: Path) -> dict:
    out = subprocess.run(
        ["nice", "-n", "10", sys.executable, "-c", CHILD, str(store), str(db)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark and write bench/results/ingest.{json,md}."""
    from ingest.synthetic.bulk import append_messages, build_bulk_chat_db

    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="full runs, each into a new store; median reported"
    )
    args = parser.parse_args(argv)
    load = _load()
    cached = CACHE / f"bulk-{args.messages}.db"
    with tempfile.TemporaryDirectory(prefix="casper-bench-ingest-") as tmp:
        gen_s = None
        if cached.is_file():  # bench.scale's generated chat.db: read in place, never written
            db = cached
        else:
            db = Path(tmp) / "chat.db"
            t = time.perf_counter()
            build_bulk_chat_db(db, n_messages=args.messages, n_people=50)
            gen_s = round(time.perf_counter() - t, 2)
        runs = []
        for i in range(max(1, args.repeat)):
            store = Path(tmp) / f"home{i}" / "casper.sqlite"
            runs.append((_run(store, db), store))
        full, store = sorted(runs, key=lambda r: r[0]["elapsed_s"])[len(runs) // 2]
        noop = _run(store, db)
        incr = None
        if db != cached:
            append_messages(db, 1000)
            incr = _run(store, db)
    result = {
        "chat_db_rows": args.messages,
        "chat_db": str(db) if db == cached else "generated",
        "generate_s": gen_s,
        "full": {
            **full,
            "rows_per_s": round(args.messages / full["elapsed_s"]),
            "rows_per_cpu_s": round(args.messages / full["cpu_s"]),
            "all_runs": [
                {"elapsed_s": round(r["elapsed_s"], 3), "cpu_s": round(r["cpu_s"], 3)}
                for r, _ in runs
            ],
        },
        "load_avg_1m": load,
        "load_avg_1m_end": _load(),
        "noop": noop,
        "incremental_1000": incr,
        "targets": {"rows_per_s": 100_000, "peak_rss_mb": 500, "noop_s": 1.0},
        "machine": _machine(),
        "command": f"python -m bench.ingest --messages {args.messages}",
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "ingest.json"
    try:
        recorded = json.loads(path.read_text())
    except (OSError, ValueError):
        recorded = {}
    if "runs" not in recorded:  # the one-size layout of earlier versions
        recorded = {"runs": {}}
    recorded["runs"][str(args.messages)] = result
    path.write_text(json.dumps(recorded, indent=2))
    (RESULTS / "ingest.md").write_text(
        "\n".join(_markdown(r) for _, r in sorted(recorded["runs"].items(), key=_order))
    )
    print(_markdown(result))
    return result


def _order(item: tuple[str, dict]) -> int:
    return item[1]["chat_db_rows"]


def _machine() -> str:
    import os
    import platform

    system, cores = f"{platform.system()} {platform.machine()}", os.cpu_count()
    return f"{system}, {cores} cores, Python {platform.python_version()}"


def _load() -> float | None:
    import os

    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _markdown(r: dict) -> str:
    full, noop, incr = r["full"], r["noop"], r["incremental_1000"]
    stages = [
        f"| {name} | {wall:.3f} | {full['cpu_timings'].get(name, float('nan')):.3f} |"
        for name, wall in full["timings"].items()
    ]
    incr_row = (
        f"| incremental run, 1,000 new rows | {incr['elapsed_s'] * 1000:.0f} ms | "
        f"{incr['cpu_s'] * 1000:.0f} ms | — |"
        if incr
        else "| incremental run, 1,000 new rows | not run (the cached chat.db is read-only) | | |"
    )
    return "\n".join(
        [
            f"## {r['chat_db_rows']:,} rows",
            "",
            f"`{r.get('command', 'python -m bench.ingest')}` ({r['machine']}; 1-minute load "
            f"average {r['load_avg_1m']} at the start, {r.get('load_avg_1m_end', 'not recorded')} "
            "at the end), no embeddings. Wall time is "
            "what the targets are about; CPU time (all threads of the process) shows the work "
            "itself when other jobs share the cores.",
            "",
            "| measure | wall | CPU | target |",
            "|---|---|---|---|",
            f"| full ingest (parse + store + stats), median of {len(full['all_runs'])} | "
            f"{full['elapsed_s']:.2f} s → **{full['rows_per_s']:,} rows/s** | "
            f"{full['cpu_s']:.2f} s → {full['rows_per_cpu_s']:,} rows/CPU-s | "
            f"≥ {r['targets']['rows_per_s']:,}/s |",
            f"| peak RSS of the ingest process | **{full['peak_rss_mb']:.0f} MB** | | ≤ 500 MB |",
            *(
                [
                    f"| … of the largest worker process (upper bound) | "
                    f"{full['workers_peak_rss_mb']:.0f} MB | | |",
                    f"| CPU: main process / worker processes | | {full['main_cpu_s']:.2f} s / "
                    f"{full['workers_cpu_s']:.2f} s | |",
                ]
                if full.get("workers_cpu_s")
                else []
            ),
            f"| incremental no-op run | **{noop['elapsed_s'] * 1000:.0f} ms** | "
            f"{noop['cpu_s'] * 1000:.0f} ms | ≤ 1 s |",
            incr_row,
            "",
            "Stages of the full run (seconds; nested: `read+store+indexes` contains `read+store` "
            "and, on a helper thread, the index build that runs beside `stats (from memory)`; "
            "`ingest` is the whole transaction, commit included; CPU is the main process's; "
            "`read workers (busy)` sums the worker processes' time inside their ranges, "
            "beside `read+store`):",
            "",
            "| stage | wall | CPU |",
            "|---|---|---|",
            *stages,
            "",
            "All full runs (wall / CPU s): "
            + ", ".join(f"{x['elapsed_s']:.2f} / {x['cpu_s']:.2f}" for x in full["all_runs"]),
            "",
            *(
                [f"Incremental run after 1,000 new rows, stages: {json.dumps(incr['timings'])}", ""]
                if incr
                else []
            ),
        ]
    )


if __name__ == "__main__":
    main()
