"""Give MLX's CPU matrix multiply an optimised BLAS on Linux, for the real-model tests.

The Linux `mlx-cpu` wheel links the netlib *reference* BLAS (`mlx_cpu.libs/libblas-*.so`): its
`cblas_sgemm` calls the Fortran `sgemm_` through the dynamic linker, and the reference `sgemm_`
is a plain triple loop (~5 GFLOP/s quiet on the 2-core box; numpy's OpenBLAS ~57). Reading
SmolLM2's ~900-token prompts is almost all sgemm, so that is where the slow tests' minutes went.

torch (already a dependency) ships an optimised `sgemm_` in libtorch_cpu. Loading that library
into the global symbol scope before MLX's first float32 matmul makes the reference `cblas_sgemm`
wrapper call it instead (measured: 13x less CPU per 512x576x1536 GEMM, same results within
float32 rounding). Nothing in Casper changes: the tests still run the real MlxEngine and mlx-lm;
only the arithmetic library under them is faster. On macOS MLX uses Accelerate / Metal and this
does nothing. CASPER_TEST_REFERENCE_BLAS=1 keeps the reference BLAS (to compare, or to rule
this out when a real-model test fails).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from pathlib import Path


def torch_sgemm_library() -> Path | None:
    """libtorch_cpu.so of the installed torch (found without importing torch), if any."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "lib" / "libtorch_cpu.so"
    return path if path.is_file() else None


def route_mlx_sgemm_to_torch() -> Path | None:
    """Load libtorch_cpu globally (Linux only); the library it loaded, or None."""
    if not sys.platform.startswith("linux") or os.environ.get("CASPER_TEST_REFERENCE_BLAS"):
        return None
    library = torch_sgemm_library()
    if library is None:
        return None
    import torch  # noqa: F401  (its own dependencies first, from its own loader)

    ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
    return library
