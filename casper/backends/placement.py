"""Where the embedder runs: which library (torch or onnxruntime) on which device (the CPU or
the Apple GPU), chosen from the settings and what this machine has, and how that is said.

`choose` only decides; the adapters load, and fall back to torch on the CPU (with a notice)
when the choice fails there: MPS that errors or gives other vectors, an ONNX export that does
not reproduce torch's vectors. Every backend is held to torch-on-the-CPU's vectors, so an
index built with one is searched with another (docs/architecture.md, measured decisions).

Imports: stdlib only; torch only on an Apple-silicon Mac, to ask whether MPS is there.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

# The vectors a backend must reproduce: min cosine to torch-on-the-CPU over the probe texts.
MIN_COSINE = 0.9999

# Fixed texts every accelerated backend is checked on against torch on the CPU: chat lines,
# three-message passages, emoji, accents and CJK, blanks around text, an empty string, and a
# passage past the model's 256-token limit (truncation). Mixed lengths in one batch exercise
# the padding mask.
PROBE_TEXTS: tuple[str, ...] = (
    "see you at 7",
    "Did you book the dentist? 🦷",
    "me: are we still on for thanksgiving?\nSam: yes!! mom is making the pie\nme: perfect",
    "lol ok 😂😂",
    "  leading and trailing blanks  ",
    "",
    "Café crème à Montréal, naïve résumé",
    "明天见 ・ また明日",
    "Priya: can u grab milk on the way home\nme: sure\nPriya: thx ❤️",
    "the car needs new tyres before winter",
    " ".join(f"word{i} and another thing we said on day {i}" for i in range(60)),
    "k",
)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an embedder runs. `notice`: why that is not what the settings asked (a fallback),
    for the user to read once (index progress, the service log)."""

    backend: str  # "torch" | "onnxruntime"
    device: str  # "cpu" | "mps"
    threads: int | None = None  # CPU threads the library uses
    notice: str | None = None
    why: str | None = None  # why this engine, when a bulk run chose it (casper.backends.bulk)

    def describe(self) -> str:
        """`onnxruntime on the CPU, 2 threads`, `torch on the Apple GPU (mps)`."""
        where = "the Apple GPU (mps)" if self.device == "mps" else "the CPU"
        threads = f", {self.threads} threads" if self.threads and self.device == "cpu" else ""
        return f"{self.backend} on {where}{threads}"

    def short(self) -> str:
        """`CPU · onnxruntime`, `GPU (mps) · torch`: for a progress line."""
        return f"{'GPU (mps)' if self.device == 'mps' else 'CPU'} · {self.backend}"

    def with_notice(self, notice: str | None) -> Placement:
        return replace(self, notice=notice)

    def with_why(self, why: str | None) -> Placement:
        return replace(self, why=why)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to try: `backend` "torch" | "onnx" on `device` "cpu" | "mps"; `notice` when the
    settings asked for something this machine does not have."""

    backend: str
    device: str
    notice: str | None = None


def apple_gpu() -> bool:
    """True on an Apple-silicon Mac whose torch can use the GPU (MPS). Elsewhere torch is not
    imported to ask."""
    if sys.platform != "darwin" or platform.machine() != "arm64":
        return False
    try:
        import torch

        return bool(torch.backends.mps.is_available())
    except Exception:  # noqa: BLE001 - a torch that cannot say has no usable GPU for us
        return False


def onnxruntime_installed() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def choose(
    backend: str,
    device: str,
    *,
    gpu: Callable[[], bool] | None = None,
    onnx: Callable[[], bool] | None = None,
) -> Plan:
    """The backend and device to try for the settings `embed_backend` and `embed_device`;
    `gpu` and `onnx` say what the machine has (default: ask it).

    auto device: the Apple GPU when there is one (and the backend is not onnx), else the CPU.
    auto backend: torch on the GPU, onnxruntime on the CPU when installed, else torch.
    """
    gpu = gpu or apple_gpu
    onnx = onnx or onnxruntime_installed
    notice = None
    if device == "mps" and not gpu():
        notice = "the Apple GPU (mps) is not available on this machine: embedding on the CPU"
        device = "cpu"
    elif device == "auto":
        device = "mps" if backend != "onnx" and gpu() else "cpu"
    if backend == "auto":
        backend = "torch" if device == "mps" or not onnx() else "onnx"
    elif backend == "onnx" and not onnx():
        notice = "onnxruntime is not installed: embedding with torch on the CPU"
        backend = "torch"
    return Plan(backend, device, notice)


def cpu_threads() -> int:
    """The CPU threads an embedder uses: the cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # macOS has no affinity call
        return max(os.cpu_count() or 1, 1)
