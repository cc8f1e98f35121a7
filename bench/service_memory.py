"""Service memory on the demo: `ps -o rss` of the running service after searches, an ask and an
hour of auto-index runs.

Run `python -m bench.service_memory [--runs 240] [--code DIR [--label NAME]] [--cache DIR]`. Writes
bench/results/service_memory.json and service_memory.md (a run with `--code` is named by that
folder and kept beside the others, so a paired before/after lands in one file).

The demo corpus in WAL mode, indexed with the bundled MiniLM (bench.freshness's cached build), is
copied; `casper search` starts the real service (auto-index on, its own models, no cross-encoder
and no Qwen cached, as on this box); then:
- RSS after one search, after two more searches and an `ask`, and after 16 s idle;
- an hour of texting, simulated: `--runs` times, one message is appended to chat.db (the bulk
  writer's rows, one commit) and the loop waits until the service's auto-index has run on it;
  240 runs is a message every 15 s for an hour, each its own run (the watcher runs once the
  writes pause for 0.5 s, and they do between these). RSS is read along the way;
- RSS 16 s after the last run and after one more search.
`--code DIR` runs the client and the service from another checkout (PYTHONPATH=DIR, from a
neutral working directory) on the same data: the paired "before" of a change. Linux figures (RSS
counts clean library pages too: smaps of the end state are recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.freshness import CACHE, build
from bench.measure import load_avg, now_utc

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]


class Service:
    """`casper` commands on one home, from one checkout; the service they start."""

    def __init__(self, home: Path, code: Path) -> None:
        self.home, self.code = home, code
        self.env = {**os.environ, "CASPER_HOME": str(home), "PYTHONPATH": str(code)}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "casper", "--home", str(self.home), *args],
            capture_output=True, text=True, env=self.env, cwd=tempfile.gettempdir(), timeout=600,
        )  # fmt: skip

    def status(self) -> dict[str, Any]:
        return json.loads(self.run("serve", "--status", "--json").stdout)

    def rss_mb(self) -> float:
        pid = self.status()["pid"]
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True)
        return round(int(out.stdout.strip()) / 1024, 1)

    def smaps(self) -> dict[str, float]:
        """The end state's resident MB by kind (anonymous, library files, other files)."""
        pid, out, kind = self.status()["pid"], {}, "anonymous"
        with open(f"/proc/{pid}/smaps") as fh:
            for line in fh:
                head = line.split()
                if "-" in head[0] and ":" not in head[0]:
                    path = head[5] if len(head) > 5 else ""
                    kind = ("libraries" if ".so" in path else "anonymous"
                            if not path or path.startswith("[") else "other files")  # fmt: skip
                elif head[0] == "Rss:":
                    out[kind] = out.get(kind, 0.0) + int(head[1]) / 1024
        return {k: round(v, 1) for k, v in sorted(out.items())}


def measure(svc: Service, chat_db: Path, runs: int) -> dict[str, Any]:
    from ingest.synthetic import append_messages

    steps: list[dict[str, Any]] = []

    def step(name: str) -> None:
        steps.append({"step": name, "rss_mb": svc.rss_mb(), "load": load_avg()[0]})
        print(steps[-1], flush=True)

    started = time.monotonic()
    svc.run("search", "dentist", "--person", "Priya")  # starts the service: index + MiniLM
    step("after one search")
    svc.run("search", "thanksgiving")
    svc.run("ask", "who do I text the most?")
    step("after two more searches and an ask")
    time.sleep(16)
    step("idle 16 s")
    done = svc.status()["auto_index"]["runs"]
    marks = {1, 10, 30, 60, 120, 180, runs}
    for i in range(1, runs + 1):
        append_messages(chat_db, 1, seed=1000 + i)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            auto = svc.status()["auto_index"]
            if auto["runs"] > done and auto["state"] != "running":
                done = auto["runs"]
                break
            time.sleep(0.3)
        if i in marks:
            step(f"after {i} auto-index runs")
    time.sleep(16)
    step("idle 16 s after the last run")
    svc.run("search", "dentist")
    step("then one search")
    return {"steps": steps, "smaps_end": svc.smaps(), "elapsed_s": round(time.monotonic() -
            started, 1), "auto_index_runs": done}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.service_memory")
    parser.add_argument("--runs", type=int, default=240, help="auto-index runs (240: an hour)")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--label", default=None, help="the column's name (default: --code's)")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    work, info = build(env, args.cache)
    svc = Service(work / "home", args.code.resolve())
    try:
        record = {"code": args.label or args.code.resolve().name, "measured": now_utc(),
                  "load_before": load_avg(), "demo": info,
                  **measure(svc, work / "src" / "chat.db", args.runs),
                  "load_after": load_avg()}  # fmt: skip
    finally:
        svc.run("serve", "--stop")
        shutil.rmtree(work, ignore_errors=True)
    path = RESULTS / "service_memory.json"
    records = json.loads(path.read_text()) if path.exists() else []
    records = [r for r in records if r.get("code") != record["code"]] + [record]
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1) + "\n")
    (RESULTS / "service_memory.md").write_text(markdown(records))
    return record


def markdown(records: list[dict[str, Any]]) -> str:
    lines = ["# Service memory on the demo (`python -m bench.service_memory`)", "",
             "`ps -o rss` of the running service, MB; each column one checkout (`--code`).", ""]  # fmt: skip
    names = [r["code"] for r in records]
    lines += ["| step | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    order = list(dict.fromkeys(s["step"] for r in records for s in r["steps"]))
    for name in order:
        cells = [next((f"{s['rss_mb']:.0f}" for s in r["steps"] if s["step"] == name), "–")
                 for r in records]  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for key in ("measured", "load_before", "load_after", "elapsed_s", "auto_index_runs",
                "smaps_end"):  # fmt: skip
        lines.append(f"| {key} | " + " | ".join(str(r.get(key)) for r in records) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
