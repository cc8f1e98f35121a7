"""Search fakes: HashEmbedder (Embedder), OverlapReranker (Reranker); deterministic, no models."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class HashEmbedder:
    """Bag of hashed lowercase words, L2-normalised: texts sharing words get similar vectors."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"
        self.checksum = "hash"
        self.calls: list[int] = []  # number of texts per embed_documents call

    def _vector(self, text: str) -> NDArray[np.float32]:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in _words(text):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return vec / norm

    def embed_documents(
        self, texts: Sequence[str], on_progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        """(n, dim) float32, rows L2-normalised."""
        self.calls.append(len(texts))
        out = np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim))
        if on_progress is not None:
            on_progress(len(texts), len(texts))
        return out.astype(np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """(dim,) float32, L2-normalised."""
        return self._vector(text)

    @property
    def embedded(self) -> int:
        """Total documents embedded so far."""
        return sum(self.calls)


class OverlapReranker:
    """score = share of the query's distinct words that appear in the text."""

    name = "overlap"

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Scores aligned with `texts`, in [0, 1]."""
        self.calls.append((query, len(texts)))
        terms = set(_words(query))
        if not terms:
            return [0.0] * len(texts)
        return [len(terms & set(_words(t))) / len(terms) for t in texts]
