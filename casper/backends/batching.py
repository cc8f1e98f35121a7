"""PURE: passages embedded longest-first in model batches, for every embedding backend.

Sorting across the whole input (a library's encode sorts only within one call) and handing the
model one batch per call keeps the padding per batch small and lets progress advance every
batch instead of jumping by hundreds.

Imports: numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

ProgressFn = Callable[[int, int], None]


def embed_longest_first(
    texts: Sequence[str],
    encode: Callable[[list[str]], NDArray[np.float32]],
    *,
    dim: int,
    batch_size: int,
    prefix: str = "",
    on_progress: ProgressFn | None = None,
) -> NDArray[np.float32]:
    """`texts` (each after `prefix`) as an (n, dim) float32 array in their own order;
    `on_progress(done, total)` after each batch."""
    total = len(texts)
    out = np.empty((total, dim), dtype=np.float32)
    order = sorted(range(total), key=lambda i: -len(texts[i]))
    for start in range(0, total, batch_size):
        idx = order[start : start + batch_size]
        out[idx] = encode([prefix + texts[i] for i in idx])
        if on_progress is not None:
            on_progress(min(start + batch_size, total), total)
    return out
