"""Where the embedder runs: the choice from the settings and the machine (the device faked),
the checked onnxruntime copy's cache (its export faked), and the fallback to torch on the CPU
with a notice. No model library is imported here; tests/slow/test_embed_backends.py loads the
real ones."""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from casper.backends import factory, onnx_embedder, placement
from casper.backends.onnx_embedder import (
    FAILED_SUFFIX,
    MODEL_FILE,
    TOKENIZER_FILE,
    OnnxUnusable,
    prepare,
    write_meta,
)
from casper.backends.placement import Placement, choose
from casper.config import BUNDLED_EMBEDDER, load_config
from casper.errors import ConfigError


def _machine(gpu: bool, onnx: bool = True) -> dict[str, Any]:
    return {"gpu": lambda: gpu, "onnx": lambda: onnx}


@pytest.mark.parametrize(
    ("backend", "device", "gpu", "onnx", "expected"),
    [
        ("auto", "auto", True, True, ("torch", "mps")),  # a Mac: the GPU
        ("auto", "auto", False, True, ("onnx", "cpu")),  # this box: onnxruntime
        ("auto", "auto", False, False, ("torch", "cpu")),  # no onnxruntime installed
        ("auto", "cpu", True, True, ("onnx", "cpu")),  # a Mac told to use its CPU
        ("torch", "auto", False, True, ("torch", "cpu")),
        ("torch", "cpu", True, True, ("torch", "cpu")),
        ("onnx", "auto", True, True, ("onnx", "cpu")),  # onnx runs on the CPU, even on a Mac
        ("torch", "mps", True, True, ("torch", "mps")),
    ],
)
def test_the_device_and_backend_follow_the_settings_and_the_machine(
    backend: str, device: str, gpu: bool, onnx: bool, expected: tuple[str, str]
) -> None:
    plan = choose(backend, device, **_machine(gpu, onnx))
    assert (plan.backend, plan.device) == expected
    assert plan.notice is None


def test_what_the_machine_lacks_is_said_and_the_cpu_used() -> None:
    plan = choose("auto", "mps", **_machine(gpu=False))
    assert (plan.backend, plan.device) == ("onnx", "cpu")
    assert plan.notice and "Apple GPU (mps) is not available" in plan.notice
    plan = choose("onnx", "cpu", **_machine(gpu=False, onnx=False))
    assert (plan.backend, plan.device) == ("torch", "cpu")
    assert plan.notice and "onnxruntime is not installed" in plan.notice


def test_off_a_mac_the_gpu_is_not_asked_for() -> None:
    if sys.platform == "darwin":
        pytest.skip("on a Mac the answer is the machine's")
    before = "torch" in sys.modules
    assert placement.apple_gpu() is False
    assert ("torch" in sys.modules) is before  # not imported to ask


def test_placement_says_where() -> None:
    assert Placement("onnxruntime", "cpu", 2).describe() == "onnxruntime on the CPU, 2 threads"
    assert Placement("torch", "mps").describe() == "torch on the Apple GPU (mps)"
    assert Placement("torch", "mps").short() == "GPU (mps) · torch"
    assert Placement("onnxruntime", "cpu", 2).short() == "CPU · onnxruntime"


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"embed_backend": "tensorrt"}, 'embed_backend = "tensorrt" is not accepted: .*"onnx"'),
        ({"embed_device": "cuda"}, 'embed_device = "cuda" is not accepted: .*"mps"'),
        ({"embed_backend": "onnx", "embed_device": "mps"}, "onnx runs on the CPU"),
    ],
)
def test_settings_that_cannot_be_are_refused(
    tmp_path: Path, values: dict[str, str], needle: str
) -> None:
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(tmp_path, **values)
    assert info.value.hint


def test_settings_are_read_from_config_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('embed_backend = "torch"\nembed_device = "cpu"\n')
    cfg = load_config(tmp_path)
    assert (cfg.embed_backend, cfg.embed_device) == ("torch", "cpu")
    assert (
        load_config(tmp_path / "x").embed_backend,
        load_config(tmp_path / "x").embed_device,
    ) == (
        "auto",
        "auto",
    )


# ---- the onnxruntime copy's cache (export faked) ----------------------------------------------
class FakeExport:
    """Writes what an export writes (files and meta), or fails as one can."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls = 0
        self.fail = fail

    def __call__(self, model: str, folder: Path) -> None:
        self.calls += 1
        if self.fail:
            raise OnnxUnusable(self.fail)
        folder.mkdir(mode=0o700)
        (folder / MODEL_FILE).write_bytes(b"graph and weights")
        (folder / TOKENIZER_FILE).write_text("{}")
        sha = onnx_embedder.sha256_of(folder / MODEL_FILE)
        write_meta(folder, {"name": model, "model_sha256": sha, "min_cosine": 1.0})


def test_the_copy_is_made_once_private_and_reused(tmp_path: Path) -> None:
    export = FakeExport()
    first = prepare("m", name="m", checksum="abc", cache=tmp_path / "cache", export=export)
    again = prepare("m", name="m", checksum="abc", cache=tmp_path / "cache", export=export)
    assert first.folder == again.folder and export.calls == 1
    assert first.notice is None
    assert stat.S_IMODE(os.stat(tmp_path / "cache").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(first.folder.parent).st_mode) == 0o700
    # another model, or other weights under the same name: another copy
    other = prepare("m", name="m", checksum="def", cache=tmp_path / "cache", export=export)
    assert other.folder != first.folder and export.calls == 2


def test_a_damaged_copy_is_made_again_and_said(tmp_path: Path) -> None:
    export = FakeExport()
    made = prepare("m", name="m", checksum="abc", cache=tmp_path, export=export)
    (made.folder / MODEL_FILE).write_bytes(b"graph and weights, one bit off")
    again = prepare("m", name="m", checksum="abc", cache=tmp_path, export=export)
    assert export.calls == 2
    assert again.notice and "damaged" in again.notice and "changed" in again.notice
    assert onnx_embedder.check_folder(again.folder) is None
    (again.folder / "meta.json").write_text("{not json")
    assert prepare("m", name="m", checksum="abc", cache=tmp_path, export=export).notice
    assert export.calls == 3


def test_a_failed_export_is_remembered_not_retried(tmp_path: Path) -> None:
    export = FakeExport(fail="min cosine 0.94 < 0.9999")
    with pytest.raises(OnnxUnusable, match="0.94"):
        prepare("m", name="m", checksum="abc", cache=tmp_path, export=export)
    with pytest.raises(OnnxUnusable, match="to try again, delete") as info:
        prepare("m", name="m", checksum="abc", cache=tmp_path, export=export)
    assert export.calls == 1 and "0.94" in info.value.message
    marker = next((tmp_path / "onnx").glob("*" + FAILED_SUFFIX))
    assert json.loads(marker.read_text())["reason"].startswith("min cosine")
    marker.unlink()  # what the message says to do
    with pytest.raises(OnnxUnusable):
        prepare("m", name="m", checksum="abc", cache=tmp_path, export=export)
    assert export.calls == 2


def test_a_model_without_an_identity_gets_no_copy(tmp_path: Path) -> None:
    with pytest.raises(OnnxUnusable, match="could not be identified"):
        prepare("m", name="m", checksum="", cache=tmp_path, export=FakeExport())


def test_the_cache_is_casper_cache_or_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casper.backends.loading import model_cache

    monkeypatch.setenv("CASPER_CACHE", str(tmp_path / "c"))
    assert model_cache() == tmp_path / "c"
    monkeypatch.delenv("CASPER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    expected = Path.home() / "Library/Caches/casper" if sys.platform == "darwin" else None
    assert model_cache() == (expected or tmp_path / "xdg" / "casper")


# ---- the factory: onnxruntime, else torch on the CPU with a notice ------------------------------
class FakeTorchEmbedder:
    def __init__(self, model: str, batch_size: int = 64, device: str = "cpu",
                 notice: str | None = None) -> None:  # fmt: skip
        self.name, self.batch_size, self.device, self.notice = model, batch_size, device, notice


def test_onnx_that_cannot_run_the_model_falls_back_to_torch_with_a_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import casper.backends.embedder as embedder_module

    def unusable(*_a: object, **_k: object) -> None:
        raise OnnxUnusable("onnxruntime's vectors differ from torch's (min cosine 0.940000)")

    monkeypatch.setattr(placement, "apple_gpu", lambda: False)
    monkeypatch.setattr(onnx_embedder.OnnxEmbedder, "cached", unusable)
    monkeypatch.setattr(embedder_module, "SentenceTransformerEmbedder", FakeTorchEmbedder)
    with caplog.at_level(logging.WARNING):
        built = factory.make_embedder(load_config(tmp_path, embed_model=BUNDLED_EMBEDDER))
    assert isinstance(built, FakeTorchEmbedder) and built.device == "cpu"
    assert built.notice and "min cosine 0.94" in built.notice and "torch on the CPU" in built.notice
    assert any("min cosine 0.94" in r.getMessage() for r in caplog.records)


def test_the_gpu_is_asked_of_torch_on_a_mac(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import casper.backends.embedder as embedder_module

    monkeypatch.setattr(placement, "apple_gpu", lambda: True)  # the device, faked
    monkeypatch.setattr(embedder_module, "SentenceTransformerEmbedder", FakeTorchEmbedder)
    built = factory.make_embedder(load_config(tmp_path))
    assert isinstance(built, FakeTorchEmbedder)
    assert (built.device, built.notice) == ("mps", None)
