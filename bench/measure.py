"""Measuring one process for the scale benchmarks (bench/scale.py, bench/vecmem.py,
bench/synth.py): resident memory per kind of mapping, CPU seconds, the load average, and one
measurement run in a fresh niced child (so one measurement's pages never count in another's).

Linux only where it reads /proc (the benchmarks' numbers come from the 2-core Linux box).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MB = 2**20


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
    """RSS by kind, Python objects (when tracemalloc runs) and pyarrow's pool, in MB."""
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
    """User + system CPU seconds of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load_avg() -> list[float]:
    """The 1, 5 and 15-minute load averages (recorded beside every figure: the box is shared)."""
    return [round(x, 2) for x in os.getloadavg()]


def now_utc() -> str:
    """When a record was measured, to the minute (labels the rows of scale.md)."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(round(0.95 * (len(ordered) - 1)))]


def run_child(
    module: str, function: str, args: dict[str, Any], code: Path | None = None
) -> dict[str, Any]:
    """`module.function(**args)` in a fresh process at nice 10 (casper imported from `code`,
    default this checkout); its JSON result comes back with wall and CPU seconds, the load
    averages around it and when it ran."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load, at = load_avg(), now_utc()
    t = time.perf_counter()
    script = (
        # the benchmark module from this checkout first, then casper (imported lazily inside
        # the measurement) from `code`
        f"import json, sys, {module}; sys.path.insert(0, {str(code or ROOT)!r}); "
        f"print(json.dumps({module}.{function}(**json.loads(sys.argv[1]))))"
    )
    proc = subprocess.run(
        ["nice", "-n", "10", sys.executable, "-c", script, json.dumps(args)],
        capture_output=True, text=True, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{module}.{function} failed:\n{proc.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    got["wall_s"] = round(time.perf_counter() - t, 1)
    got["cpu_s"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
    got["at"] = at
    got["load_avg_before"] = load
    got["load_avg_after"] = load_avg()
    return got
