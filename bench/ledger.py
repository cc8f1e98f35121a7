"""The headline figures of every `make bench`, kept run after run, and what moved since the last.

`python -m bench.ledger` (the last step of `python -m bench`) reads the headline figures from
the benchmarks' result files (bench/results/*.json), appends them to bench/results/history.json
with the commit, the time, the machine and its load (the load each benchmark saw, where it
recorded one, and the load now), and prints every figure that moved by more than 10 % against
the last recorded run that had it — slower or faster, with both loads beside it. A report to
read, not a timed test: on a shared box a figure can move with its neighbours' load, which is
why the loads are printed with it.

`python -m bench.ledger --compare` only compares the last two recorded runs; `--table` prints
the current figures as the Markdown table docs/performance.md keeps.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
THRESHOLD = 0.10  # a figure that moved by more than this share is printed


@dataclass(frozen=True)
class Figure:
    """One headline figure: where it is in which result file, and which way is better."""

    key: str
    label: str
    file: str
    path: tuple[str, ...]  # keys into the JSON; "chunks=100000" picks that item of a list
    unit: str
    load: tuple[str, ...] = ()  # where the same file recorded the load it was measured at
    lower_is_better: bool = True


FIGURES = (
    Figure("warm_search_p50_ms", "warm `casper search`, whole process, p50", "cli.json",
           ("warm_search", "p50_ms"), "ms", ("load_avg_1m_start",)),
    Figure("help_p50_ms", "`casper --help`, p50", "cli.json", ("help", "p50_ms"), "ms",
           ("load_avg_1m_start",)),
    Figure("cold_bm25_p50_ms", "cold `search --mode bm25`, no service, p50", "cli.json",
           ("cold_bm25_no_service", "p50_ms"), "ms", ("load_avg_1m_start",)),
    Figure("first_lexical_search_1m_s", "first lexical search after a 1M first index",
           "scale.json", ("first_search", "time_to_first_lexical_search_s"), "s",
           ("first_search", "load_avg_before")),
    Figure("ingest_1m_rows_per_s", "ingest at 1M rows", "ingest.json",
           ("runs", "1000000", "full", "rows_per_s"), "rows/s",
           ("runs", "1000000", "load_avg_1m"), lower_is_better=False),
    Figure("hybrid_p50_ms_100k", "hybrid search p50 at 100k chunks, in-process",
           "retrieval.json", ("sizes", "chunks=100000", "latency_ms", "hybrid/unfiltered", "p50"),
           "ms", ("load_avg_before",)),
    # bench/speed.py: whole processes, paired; the product's first index against the faster
    # engine fixed (1.0: as fast as it), and the warm search against the interpreter's start
    *(Figure(f"first_index_{key}_vs_faster", f"first index of {name}, × the faster engine",
             "speed.json", ("first_index", "histories", name,
                            "auto (this checkout) vs faster engine"), "×",
             ("first_index", "load_before"), lower_is_better=False)
      for key, name in (("emi", "phone Emi"), ("kevin", "phone Kevin"), ("demo", "demo"),
                        ("texting", "texting history"))),
    Figure("warm_search_paired_p50_ms", "warm `casper search --json`, paired run, p50",
           "speed.json", ("warm_search", "this checkout", "p50_ms"), "ms",
           ("warm_search", "load_before")),
    Figure("python_start_p50_ms", "`python -c pass` beside it (the floor), p50", "speed.json",
           ("warm_search", "python -c pass", "p50_ms"), "ms", ("warm_search", "load_before")),
    Figure("first_search_1m_paired_s", "first lexical search after a 1M first index, paired run",
           "speed.json", ("first_search", "this checkout", "median_s"), "s",
           ("first_search", "this checkout", "loads", "0", "0")),
    Figure("freshness_paired_p50_s", "new message found, lexical, paired run, p50",
           "speed.json", ("freshness", "this checkout", "0", "lexical_s", "p50"), "s",
           ("freshness", "this checkout", "0", "load_avg_before")),
    Figure("service_rss_paired_mb", "service memory after its auto-index runs, paired run",
           "speed.json", ("freshness", "this checkout", "0", "service_rss_mb"), "MB",
           ("freshness", "this checkout", "0", "load_avg_before")),
    Figure("freshness_lexical_p50_s", "new message found through the service, lexical, p50",
           "freshness.json", ("lexical_s", "p50"), "s", ("load_avg_before",)),
    Figure("service_rss_after_writes_mb", "service memory after its auto-index runs",
           "freshness.json", ("raw", "service_rss_mb"), "MB", ("load_avg_before",)),
)  # fmt: skip


def _dig(doc: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        if isinstance(doc, list):
            if "=" in step:
                key, _, want = step.partition("=")
                doc = next((d for d in doc if str(d.get(key)) == want), None)
            else:
                doc = doc[int(step)] if int(step) < len(doc) else None
        elif isinstance(doc, dict):
            doc = doc.get(step)
        else:
            return None
        if doc is None:
            return None
    return doc


def read_figures(results: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """Each headline figure found in the result files: {"value", "load"} (load may be None)."""
    out: dict[str, dict[str, Any]] = {}
    cache: dict[str, Any] = {}
    for fig in FIGURES:
        if fig.file not in cache:
            try:
                cache[fig.file] = json.loads((results / fig.file).read_text())
            except (OSError, ValueError):
                cache[fig.file] = None
        value = _dig(cache[fig.file], fig.path)
        if isinstance(value, int | float):
            load = _dig(cache[fig.file], fig.load) if fig.load else None
            load = load[0] if isinstance(load, list) and load else load  # the 1-minute average
            out[fig.key] = {"value": value, "load": load if isinstance(load, int | float) else None}
    return out


def commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
            text=True, check=True, cwd=Path(__file__).parent,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def load_history(path: Path) -> list[dict[str, Any]]:
    try:
        return list(json.loads(path.read_text())["runs"])
    except (OSError, ValueError, KeyError):
        return []


def sources(results: Path = RESULTS) -> dict[str, str]:
    """Each result file the figures come from → a fingerprint of its bytes."""
    out = {}
    for name in sorted({fig.file for fig in FIGURES}):
        try:
            out[name] = hashlib.sha256((results / name).read_bytes()).hexdigest()[:12]
        except OSError:
            continue
    return out


def rewritten(results: Path = RESULTS) -> set[str] | None:
    """The result files a benchmark has written since the last commit (changed or new in the
    working tree): the figures measured by this run. A file as committed holds a figure from
    an earlier commit. None outside a git checkout (every file counts)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", "."],
            capture_output=True, text=True, check=True, cwd=results,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return {Path(line[3:].strip().strip('"')).name for line in out.splitlines() if line.strip()}


def _measured_again(
    key: str, figure: dict[str, Any], source: str | None, runs: list[dict[str, Any]]
) -> bool:
    """False when the figure is the one the latest run that had it recorded: the same result
    file (or, in runs before fingerprints, the same value at the same load) — a benchmark not
    run since, whose figure would otherwise be put down as this commit's."""
    file = next(fig.file for fig in FIGURES if fig.key == key)
    before = next((r for r in reversed(runs) if key in r["figures"]), None)
    if before is None:
        return True
    if "sources" in before:
        return before["sources"].get(file) != source
    return before["figures"][key] != figure


def record(results: Path = RESULTS, history: Path | None = None, by: str = "make bench") -> dict:
    """Append the headline figures measured since the last run to the history — those whose
    result file was written since the last commit and differs from the one the last run
    read; a figure from an older file is not put down again as this commit's. Return the
    entry."""
    history = history or results / "history.json"
    runs = load_history(history)
    found, files, written = read_figures(results), sources(results), rewritten(results)
    key_file = {fig.key: fig.file for fig in FIGURES}
    if written is not None:
        found = {key: figure for key, figure in found.items() if key_file[key] in written}
    entry = {
        "commit": commit(),
        "at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "by": by,
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
        "load_avg_now": [round(x, 2) for x in os.getloadavg()],
        "figures": {
            key: figure
            for key, figure in found.items()
            if _measured_again(key, figure, files.get(key_file[key]), runs)
        },
        "sources": files,
    }
    runs.append(entry)
    history.write_text(json.dumps({"runs": runs}, indent=1, ensure_ascii=False) + "\n")
    return entry


def moves(runs: list[dict[str, Any]], threshold: float = THRESHOLD) -> list[dict[str, Any]]:
    """Each figure of the last run that moved by more than `threshold` against the latest
    earlier run that had it."""
    if not runs:
        return []
    last, earlier = runs[-1], runs[:-1]
    out = []
    for fig in FIGURES:
        now = last["figures"].get(fig.key)
        before_run = next((r for r in reversed(earlier) if fig.key in r["figures"]), None)
        if now is None or before_run is None:
            continue
        before = before_run["figures"][fig.key]
        if not before["value"]:
            continue
        change = now["value"] / before["value"] - 1
        if abs(change) > threshold:
            worse = change > 0 if fig.lower_is_better else change < 0
            out.append({
                "key": fig.key, "label": fig.label, "unit": fig.unit, "change": change,
                "worse": worse, "before": before, "now": now,
                "before_commit": before_run["commit"], "now_commit": last["commit"],
            })  # fmt: skip
    return out


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _load(fig: dict[str, Any]) -> str:
    load = fig.get("load")
    return f"load {load}" if load is not None else "load not recorded"


def report(found: list[dict[str, Any]]) -> str:
    if not found:
        return f"no headline figure moved by more than {THRESHOLD:.0%} since the last run"
    lines = [f"headline figures that moved by more than {THRESHOLD:.0%} since the last run:"]
    for m in found:
        word = "WORSE" if m["worse"] else "better"
        lines.append(
            f"  {word:6} {m['label']}: {_num(m['before']['value'])} → {_num(m['now']['value'])} "
            f"{m['unit']} ({m['change']:+.0%}; {m['before_commit']} at {_load(m['before'])} → "
            f"{m['now_commit']} at {_load(m['now'])})"
        )
    return "\n".join(lines)


def table(runs: list[dict[str, Any]]) -> str:
    """The current value of every headline figure (from the latest run that has it)."""
    lines = ["| figure | value | load | commit, when |", "|---|---:|---|---|"]
    for fig in FIGURES:
        run = next((r for r in reversed(runs) if fig.key in r["figures"]), None)
        if run is None:
            continue
        f = run["figures"][fig.key]
        load = "" if f.get("load") is None else str(f["load"])
        lines.append(
            f"| {fig.label} | {_num(f['value'])} {fig.unit} | {load} | {run['commit']}, {run['at']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(prog="python -m bench.ledger")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--compare", action="store_true", help="only compare the last two runs")
    parser.add_argument("--table", action="store_true", help="print the current figures")
    args = parser.parse_args(argv)
    history = args.results / "history.json"
    if args.table:
        print(table(load_history(history)))
        return []
    if not args.compare:
        record(args.results, history)
    found = moves(load_history(history))
    print(report(found))
    return found


if __name__ == "__main__":
    main()
