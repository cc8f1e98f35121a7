"""LazyEmbedder: an Embedder that builds the real one on first use.

`search --mode bm25` (and a service that answers BM25 requests first) never needs vectors for a
query; loading sentence-transformers + torch for it costs ~5-7 s cold. The wrapper defers that
until a vector is asked for, then checks the loaded model against the index it will search
(`check`), so a lazily loaded model can never query vectors it didn't write.

Imports: casper.protocols (types only); the real embedder comes from `build`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from casper.protocols import Embedder


class LazyEmbedder:
    """Stands in for an Embedder; `loaded` tells whether the real one was built."""

    def __init__(
        self,
        build: Callable[[], Embedder],
        *,
        name: str,
        check: Callable[[Embedder], None] | None = None,
        dim: int | None = None,
        checksum: str | None = None,
    ) -> None:
        self.name = name  # the configured model name, known without loading it
        self._build = build
        self._check = check
        self._real: Embedder | None = None
        # known without loading (the bundled model's constants): `check` must confirm them
        self._dim, self._checksum = dim, checksum

    def set_check(self, check: Callable[[Embedder], None]) -> None:
        """Check the model against this when it loads (e.g. the index it will write to)."""
        self._check = check

    @property
    def loaded(self) -> bool:
        return self._real is not None

    def real(self) -> Embedder:
        """The real embedder, built (and checked) on first call."""
        if self._real is None:
            embedder = self._build()
            if self._check is not None:
                self._check(embedder)
            self._real = embedder
        return self._real

    @property
    def dim(self) -> int:
        return self._dim if self._dim is not None else self.real().dim

    @property
    def checksum(self) -> str:
        if self._checksum is not None:
            return self._checksum
        return str(getattr(self.real(), "checksum", ""))

    def embed_documents(
        self, texts: Sequence[str], on_progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        return self.real().embed_documents(texts, on_progress)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self.real().embed_query(text)
