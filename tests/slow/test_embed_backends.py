"""The embedder's backends on the real bundled MiniLM: onnxruntime's vectors are torch's (the
index built with one is searched with the other), it loads without torch, and the Apple GPU
is left for the CPU, with a notice, when it fails or disagrees (the device faked off a Mac;
the real GPU checked where there is one)."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from casper.backends.embedder import MINILM_DIM, MINILM_SHA256, SentenceTransformerEmbedder
from casper.backends.onnx_embedder import META_FILE, MODEL_FILE, OnnxEmbedder
from casper.backends.onnx_export import export_checked
from casper.backends.placement import MIN_COSINE, Placement, apple_gpu
from casper.config import BUNDLED_EMBEDDER
from tests.conftest import MODEL_CACHE

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]

# chunk-like texts (not the probe texts the export was checked on)
TEXTS = [
    "Sam: did u see the game last night\nme: yes!! that last goal\nSam: unreal",
    "Mom: Thanksgiving at ours this year? 🦃\nme: of course, I'll bring the pie",
    "me: dentist moved to thursday 3pm\nPriya: ok I'll pick up the kids then",
    "Kevin: flight lands 10:40, terminal 2\nme: I'll be there",
    "lol",
    "Paola: can you send me the photos from Lisbon\nme: sending now 📸",
    "Emi: I got the job!!!\nme: CONGRATS 🎉🎉 drinks friday?",
    "me: running 10 min late, sorry\nSam: np",
]
QUERIES = ["when is the dentist appointment", "who got a new job", "thanksgiving plans"]


@pytest.fixture(scope="module")
def torch_cpu() -> SentenceTransformerEmbedder:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        return SentenceTransformerEmbedder.bundled()


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        return OnnxEmbedder.cached(
            BUNDLED_EMBEDDER, cache=MODEL_CACHE, threads=2, export=export_checked
        )


def _min_cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.min(np.sum(a * b, axis=1)))


def test_onnx_vectors_are_torchs(
    torch_cpu: SentenceTransformerEmbedder, onnx: OnnxEmbedder
) -> None:
    # same identity: an index either one built accepts the other's queries
    assert (onnx.name, onnx.dim, onnx.checksum) == (BUNDLED_EMBEDDER, MINILM_DIM, MINILM_SHA256)
    assert (onnx.name, onnx.dim, onnx.checksum) == (
        torch_cpu.name,
        torch_cpu.dim,
        torch_cpu.checksum,
    )
    docs = onnx.embed_documents(TEXTS)
    assert docs.dtype == np.float32 and docs.shape == (len(TEXTS), MINILM_DIM)
    assert _min_cos(docs, torch_cpu.embed_documents(TEXTS)) >= MIN_COSINE
    queries = np.stack([onnx.embed_query(q) for q in QUERIES])
    assert _min_cos(queries, np.stack([torch_cpu.embed_query(q) for q in QUERIES])) >= MIN_COSINE
    # and the same neighbours: a query finds the same passage with either
    assert (queries @ docs.T).argmax(axis=1).tolist() == [2, 6, 1]
    assert onnx.placement.backend == "onnxruntime" and onnx.placement.device == "cpu"


def test_the_copy_is_private_and_records_its_check(onnx: OnnxEmbedder) -> None:
    folder = next(p for p in (MODEL_CACHE / "onnx").iterdir() if (p / MODEL_FILE).exists())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in folder.iterdir())
    assert json.loads((folder / META_FILE).read_text())["min_cosine"] >= MIN_COSINE
    assert onnx.min_cosine >= MIN_COSINE


def test_onnx_loads_without_torch(onnx: OnnxEmbedder, tmp_path: Path) -> None:
    """What the service holds warm: onnxruntime and the tokenizer, not torch (~300 MB less)."""
    code = (
        "import sys\n"
        "from casper.config import load_config\n"
        "from casper.backends import factory\n"
        f"e = factory.make_embedder(load_config({str(tmp_path)!r}))\n"
        "e.embed_query('hello')\n"
        "print(type(e).__name__, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    env = {**os.environ, "CASPER_CACHE": str(MODEL_CACHE), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=REPO, check=True)  # fmt: skip
    assert out.stdout.split() == ["OnnxEmbedder", "False", "False"]


# ---- the Apple GPU, faked off a Mac -------------------------------------------------------------
@pytest.fixture
def cpu_again(torch_cpu: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each GPU test starts from (and leaves) the shared model on the CPU."""
    monkeypatch.setattr(torch_cpu, "placement", Placement("torch", "cpu", 1))


def test_a_gpu_that_cannot_take_the_model_leaves_it_on_the_cpu(
    torch_cpu: SentenceTransformerEmbedder, cpu_again: None, caplog: pytest.LogCaptureFixture
) -> None:
    if apple_gpu():
        pytest.skip("this machine's GPU takes it")
    expected = torch_cpu.embed_documents(TEXTS)
    with caplog.at_level(logging.WARNING):
        torch_cpu._to_gpu()  # off a Mac torch has no MPS: moving there raises
    assert torch_cpu.placement.device == "cpu"
    assert torch_cpu.placement.notice and "could not load the model" in torch_cpu.placement.notice
    assert "embedding on the CPU" in caplog.text
    np.testing.assert_allclose(torch_cpu.embed_documents(TEXTS), expected, atol=1e-6)


def test_a_gpu_whose_vectors_differ_is_not_used(
    torch_cpu: SentenceTransformerEmbedder, cpu_again: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = torch_cpu._encode_raw
    rng = np.random.default_rng(0)

    def on_a_bad_gpu(texts: list[str]) -> np.ndarray:
        vectors = real(texts)
        if torch_cpu.placement.device == "mps":  # a GPU kernel that is subtly wrong
            vectors = vectors + rng.normal(0, 0.05, vectors.shape).astype(np.float32)
        return vectors

    monkeypatch.setattr(torch_cpu._model, "to", lambda device: torch_cpu._model)  # "moved"
    monkeypatch.setattr(torch_cpu, "_encode_raw", on_a_bad_gpu)
    torch_cpu._to_gpu()
    assert torch_cpu.placement.device == "cpu"
    assert torch_cpu.placement.notice and "differ from the CPU's" in torch_cpu.placement.notice


def test_a_gpu_that_fails_while_embedding_hands_over_to_the_cpu(
    torch_cpu: SentenceTransformerEmbedder, cpu_again: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = torch_cpu.embed_documents(TEXTS)
    real = torch_cpu._encode_raw

    def out_of_memory(texts: list[str]) -> np.ndarray:
        if torch_cpu.placement.device == "mps":
            raise RuntimeError("MPS backend out of memory (MPS allocated: 9 GB)")
        return real(texts)

    monkeypatch.setattr(torch_cpu._model, "to", lambda device: torch_cpu._model)
    monkeypatch.setattr(torch_cpu, "_encode_raw", out_of_memory)
    monkeypatch.setattr(torch_cpu, "placement", Placement("torch", "mps"))
    np.testing.assert_allclose(torch_cpu.embed_documents(TEXTS), expected, atol=1e-6)
    assert torch_cpu.placement.device == "cpu"
    assert torch_cpu.placement.notice and "out of memory" in torch_cpu.placement.notice


@pytest.mark.skipif(not apple_gpu(), reason="needs an Apple-silicon Mac with MPS")
def test_the_apple_gpu_gives_the_cpus_vectors(torch_cpu: SentenceTransformerEmbedder) -> None:
    gpu = SentenceTransformerEmbedder.bundled(device="mps")
    assert gpu.placement.device == "mps", gpu.placement.notice
    assert _min_cos(gpu.embed_documents(TEXTS), torch_cpu.embed_documents(TEXTS)) >= MIN_COSINE
