"""The real-model tests run MLX's float32 matmul on torch's sgemm (tests/fast_blas.py), and it
computes the same products as numpy."""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np
import pytest

from tests.fast_blas import torch_sgemm_library

pytestmark = pytest.mark.slow


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.environ.get("CASPER_TEST_REFERENCE_BLAS"),
    reason="only the Linux mlx-cpu wheel links the reference BLAS",
)
def test_sgemm_resolves_to_torch_in_the_global_scope() -> None:
    library = torch_sgemm_library()
    assert library is not None
    found = ctypes.cast(ctypes.CDLL(None).sgemm_, ctypes.c_void_p).value
    torch_own = ctypes.cast(ctypes.CDLL(str(library)).sgemm_, ctypes.c_void_p).value
    assert found == torch_own


def test_mlx_float32_matmul_matches_numpy() -> None:
    import mlx.core as mx

    rng = np.random.default_rng(3)
    a = rng.standard_normal((67, 130)).astype(np.float32)
    b = rng.standard_normal((130, 45)).astype(np.float32)
    got = np.array(mx.array(a) @ mx.array(b))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    # transposed operands take the other sgemm branches
    got_t = np.array(mx.array(b).T @ mx.array(a).T)
    np.testing.assert_allclose(got_t, b.T @ a.T, rtol=1e-4, atol=1e-4)
