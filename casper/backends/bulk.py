"""Which engine embeds a bulk run (a first index, `--rebuild`, a large reconcile): the faster one
on this machine, by measurement rather than by rule.

onnxruntime loads in seconds and holds ~200 MB, so queries and the service's small runs keep
it; for thousands of passages only the rate counts, and on some CPUs torch embeds faster
(docs/performance.md). So the first bulk run on a machine times both engines on the history's
own passages (`probe`: one batch, after a warm-up), remembers the rates per machine, libraries
and model (`remembered`, a small file in Casper's cache folder), and every bulk run after it
reads the verdict (`decide`). On an Apple-silicon Mac torch on the GPU (MPS) is chosen as for
every run; a backend fixed in config.toml is kept. Every engine is held to torch-on-the-CPU's
vectors (casper.backends.placement), so the vectors, and search, do not depend on the verdict.

Imports: stdlib, casper.backends.placement; engines are built by the caller (the factory).
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from casper.backends.placement import choose, cpu_threads

if TYPE_CHECKING:
    from casper.protocols import Embedder

# torch must beat onnxruntime by this much to embed a bulk run: it loads for longer and holds
# more, and two rates within a few percent are the same rate on a busy machine
MARGIN = 1.10
PROBE_PASSAGES = 64  # the history's own passages each engine embeds for the verdict
WARM_UP = 8  # embedded first by each engine, untimed (first calls allocate)
PROBE_FILE = "bulk-probe.json"


@dataclass(frozen=True, slots=True)
class BulkChoice:
    """The engine for a bulk run: `backend` "torch" | "onnx" on `device`, and why, in words
    for the progress line and `index --json` ("torch: 1.6× onnxruntime on this machine's
    probe"). `rates`: passages per second each engine embedded on the probe."""

    backend: str
    device: str
    why: str
    rates: Mapping[str, float] = field(default_factory=dict)


def decide(
    backend: str,
    device: str,
    *,
    gpu: bool,
    onnx: bool,
    rates: Mapping[str, float] | None,
) -> BulkChoice | None:
    """The bulk engine for the settings `embed_backend`/`embed_device` on a machine with (or
    without) the Apple GPU and onnxruntime, given the probe's `rates` (None: not probed yet).
    None means: probe both engines first."""
    plan = choose(backend, device, gpu=lambda: gpu, onnx=lambda: onnx)
    if plan.device == "mps":
        return BulkChoice("torch", "mps", "torch on the Apple GPU (mps), as for every run")
    if backend != "auto" or plan.backend == "torch":
        why = (
            f'embed_backend = "{backend}" in config.toml'
            if backend != "auto"
            else "onnxruntime is not installed"
        )
        return BulkChoice(plan.backend, plan.device, why)
    if not rates or not rates.get("onnx") or not rates.get("torch"):
        return None
    ratio = rates["torch"] / rates["onnx"]
    if ratio >= MARGIN:
        why = f"torch: {ratio:.1f}× onnxruntime on this machine's probe"
        return BulkChoice("torch", "cpu", why, rates)
    if ratio >= 1:
        why = f"onnxruntime: torch only {ratio:.2f}× its rate on this machine's probe"
    else:
        why = f"onnxruntime: {1 / ratio:.1f}× torch on this machine's probe"
    return BulkChoice("onnx", "cpu", why, rates)


def probe(
    texts: Sequence[str], engines: Mapping[str, Callable[[], Embedder]]
) -> tuple[dict[str, float], dict[str, Embedder]]:
    """Each engine built (`engines[name]()`), warmed up, then timed on `texts`: (passages per
    second by name, the built engines by name)."""
    rates: dict[str, float] = {}
    built: dict[str, Embedder] = {}
    sample = list(texts[:PROBE_PASSAGES])
    for name, make in engines.items():
        engine = make()
        built[name] = engine
        engine.embed_documents(sample[:WARM_UP])
        started = time.perf_counter()
        engine.embed_documents(sample)
        rates[name] = round(len(sample) / max(time.perf_counter() - started, 1e-9), 1)
    return rates, built


def machine_key(model: str, libraries: Mapping[str, str]) -> str:
    """What the rates depend on: the processor, the threads, the libraries' versions, the
    model (its name and checksum)."""
    libs = ", ".join(f"{k} {v}" for k, v in sorted(libraries.items()))
    where = f"{platform.system()} {platform.machine()} | {cpu_model()} | {cpu_threads()} threads"
    return f"{where} | {libs} | {model}"


def cpu_model() -> str:
    """The processor's name (Linux: /proc/cpuinfo), else what platform says."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def remembered(cache: Path, key: str) -> dict[str, float] | None:
    """The rates a probe measured for `key`, or None."""
    try:
        entry = json.loads((cache / PROBE_FILE).read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    rates = entry.get("rates") if isinstance(entry, dict) else None
    if isinstance(rates, dict) and all(isinstance(v, int | float) for v in rates.values()):
        return {str(k): float(v) for k, v in rates.items()}
    return None


def remember(cache: Path, key: str, rates: Mapping[str, float], texts: Sequence[str]) -> None:
    """Keep the rates for `key` (owner-only file; an unwritable cache only costs a probe)."""
    try:
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = cache / PROBE_FILE
        try:
            known = json.loads(path.read_text())
            known = known if isinstance(known, dict) else {}
        except (OSError, ValueError):
            known = {}
        sample = list(texts[:PROBE_PASSAGES])
        known[key] = {
            "rates": dict(rates),
            "passages": len(sample),
            "mean_chars": round(sum(map(len, sample)) / max(len(sample), 1)),
            "at": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        }
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(known, fh, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass
