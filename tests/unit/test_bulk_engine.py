"""The engine for bulk embedding (casper.backends.bulk): decided by a probe of both engines on
the history's own passages, remembered per machine and model; the Apple GPU is still chosen on
an Apple-silicon Mac; a fixed backend is kept."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from casper.backends import bulk


def test_on_an_apple_silicon_mac_the_gpu_embeds_bulk_runs_without_a_probe() -> None:
    choice = bulk.decide("auto", "auto", gpu=True, onnx=True, rates=None)
    assert choice is not None and (choice.backend, choice.device) == ("torch", "mps")
    # the GPU is the settings' choice even when a probe once found onnxruntime faster
    faster_onnx = {"torch": 50.0, "onnx": 90.0}
    assert bulk.decide("auto", "mps", gpu=True, onnx=True, rates=faster_onnx).device == "mps"


def test_on_a_cpu_the_probe_decides_and_until_then_nothing_is_decided() -> None:
    assert bulk.decide("auto", "auto", gpu=False, onnx=True, rates=None) is None
    torch_faster = bulk.decide("auto", "auto", gpu=False, onnx=True,
                               rates={"torch": 100.0, "onnx": 62.5})  # fmt: skip
    assert torch_faster is not None
    assert (torch_faster.backend, torch_faster.device) == ("torch", "cpu")
    assert torch_faster.why == "torch: 1.6× onnxruntime on this machine's probe"
    close = bulk.decide("auto", "auto", gpu=False, onnx=True, rates={"torch": 103, "onnx": 100})
    assert close is not None and close.backend == "onnx" and "only 1.03×" in close.why
    onnx_faster = bulk.decide("auto", "cpu", gpu=False, onnx=True,
                              rates={"torch": 50.0, "onnx": 100.0})  # fmt: skip
    assert onnx_faster is not None and onnx_faster.backend == "onnx"
    assert onnx_faster.why == "onnxruntime: 2.0× torch on this machine's probe"


def test_a_backend_fixed_in_the_settings_or_a_missing_onnxruntime_needs_no_probe() -> None:
    fixed = bulk.decide("onnx", "auto", gpu=False, onnx=True, rates={"torch": 99.0, "onnx": 1.0})
    assert fixed is not None and fixed.backend == "onnx" and "config.toml" in fixed.why
    torch = bulk.decide("torch", "cpu", gpu=False, onnx=True, rates=None)
    assert torch is not None and torch.backend == "torch"
    missing = bulk.decide("auto", "auto", gpu=False, onnx=False, rates=None)
    assert missing is not None and missing.backend == "torch" and "not installed" in missing.why


class _Paced:
    """An engine that takes `per_text` seconds a passage."""

    def __init__(self, per_text: float) -> None:
        self.per_text, self.seen = per_text, 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.per_text * len(texts))
        self.seen += len(texts)
        return np.zeros((len(texts), 4), np.float32)


def test_the_probe_times_each_engine_on_the_passages_it_is_given() -> None:
    texts = [f"passage {i}" for i in range(200)]
    rates, built = bulk.probe(
        texts, {"onnx": lambda: _Paced(0.002), "torch": lambda: _Paced(0.001)}
    )
    assert rates["torch"] > 1.4 * rates["onnx"]
    assert built["torch"].seen == built["onnx"].seen == bulk.WARM_UP + bulk.PROBE_PASSAGES


def test_the_rates_are_remembered_per_machine_and_model_in_an_owner_only_file(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    key = bulk.machine_key("bundled:all-MiniLM-L6-v2 abc", {"torch": "2.9", "onnxruntime": "1.23"})
    other = bulk.machine_key("another-model", {"torch": "2.9", "onnxruntime": "1.23"})
    assert key != other and bulk.cpu_model() in key
    assert bulk.remembered(cache, key) is None
    bulk.remember(cache, key, {"torch": 98.0, "onnx": 70.0}, ["a b c"] * 80)
    assert bulk.remembered(cache, key) == {"torch": 98.0, "onnx": 70.0}
    assert bulk.remembered(cache, other) is None
    assert stat.S_IMODE(os.stat(cache / bulk.PROBE_FILE).st_mode) == 0o600
    (cache / bulk.PROBE_FILE).write_text("{not json")
    assert bulk.remembered(cache, key) is None  # a damaged file costs a probe, nothing else
