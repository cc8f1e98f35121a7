"""The engine for bulk embedding (casper.backends.bulk): on an Apple-silicon Mac the GPU, a
backend fixed in config.toml, or torch when onnxruntime is missing, without a race; otherwise
nothing is decided ahead: the run races the engines on its own passages (test_engine_race.py)."""

from __future__ import annotations

from casper.backends import bulk


def test_on_an_apple_silicon_mac_the_gpu_embeds_bulk_runs_without_a_race() -> None:
    choice = bulk.decide("auto", "auto", gpu=True, onnx=True)
    assert choice is not None and (choice.backend, choice.device) == ("torch", "mps")
    assert bulk.decide("auto", "mps", gpu=True, onnx=True).device == "mps"


def test_on_a_cpu_nothing_is_decided_ahead_of_the_run() -> None:
    assert bulk.decide("auto", "auto", gpu=False, onnx=True) is None
    assert bulk.decide("auto", "cpu", gpu=False, onnx=True) is None


def test_a_backend_fixed_in_the_settings_or_a_missing_onnxruntime_needs_no_race() -> None:
    fixed = bulk.decide("onnx", "auto", gpu=False, onnx=True)
    assert fixed is not None and fixed.backend == "onnx" and "config.toml" in fixed.why
    torch = bulk.decide("torch", "cpu", gpu=False, onnx=True)
    assert torch is not None and torch.backend == "torch"
    missing = bulk.decide("auto", "auto", gpu=False, onnx=False)
    assert missing is not None and missing.backend == "torch" and "not installed" in missing.why


def test_a_machine_busier_than_its_cores_keeps_onnxruntime_without_a_race() -> None:
    busy = bulk.decide("auto", "auto", gpu=False, onnx=True, load=9.5, cores=2)
    assert busy is not None and busy.backend == "onnx" and "busy (load 9.5 on 2 cores)" in busy.why
    assert bulk.decide("auto", "auto", gpu=False, onnx=True, load=1.2, cores=2) is None
    # the Apple GPU and a fixed backend are the settings' choice, busy or not
    assert bulk.decide("auto", "auto", gpu=True, onnx=True, load=9.5, cores=2).device == "mps"
    assert bulk.decide("torch", "cpu", gpu=False, onnx=True, load=9.5, cores=2).backend == "torch"
