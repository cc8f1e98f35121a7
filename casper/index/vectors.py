"""In-memory search state of one index version: vectors (exact or binary+rescore), filters, meta.

Imports: numpy, pyarrow, casper.store (sign_bits, chunk_table for types). Vectors are float16
rows in vector_cache.py's file, read (never mapped) only for the candidates being scored, and
widened to float32 for them alone. Large searches rank every row by Hamming distance on sign
bits, re-rank a shortlist by the query's values against those signs, and score exactly only
the last few hundred rows (sign_bits.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from casper.index.chunk_meta import (
    META_COLUMNS,
    ChunkIds,
    ChunkMeta,
    DisplayColumns,
    FilterColumns,
)
from casper.index.sign_bits import hamming, nearest, pack, sign_codes, sign_scores

if TYPE_CHECKING:
    import pyarrow as pa

    from casper.index.chunk_table import Filter

__all__ = [
    "META_COLUMNS",
    "ChunkMeta",
    "FilterColumns",
    "VectorMatrix",
    "private_files",
    "sign_codes",
]

EXACT_MAX = 8_192  # rows scored exactly; above this, binary candidates + exact rescoring
# Stage 1 (Hamming) keeps the WIDE nearest: on all-MiniLM-L6-v2 chat embeddings (100k), the
# 2,000 nearest by Hamming distance held 0.998 of the exact top 10, 4,000 all of it; at 1M
# MiniLM-shaped rows 1/64 of the rows (15,625) held 0.999. Stage 2 (signs against the query's
# values) keeps NARROW of those for exact float16 scoring: 1,024 of 15,625 kept 0.997 of the
# top 10 at 1M (bench: `python -m bench.vecmem`).
RESCORE_MIN = 2_048
RESCORE_PER_HIT = 40
RESCORE_SHARE = 64  # and at least 1/64 of the candidate rows
NARROW_MIN = 1_024
NARROW_PER_HIT = 16


@dataclass(slots=True)
class VectorMatrix:
    """One table version: meta and filters of every row; float16 vectors of those embedded.

    `vectors`, `codes` and `vec_rows` cover only the rows that have a vector (all of them once
    the semantic index is complete), in table order; `vec_rows` maps them to table rows.
    """

    version: int
    filters: FilterColumns
    ids: ChunkIds  # table order
    display: DisplayColumns
    generation: int = 0
    built_at: float = 0.0
    # (vectors, mean, codes, vec_rows), or how to get them: loaded on the first vector search,
    # so a lexical-only search never builds or maps the vector cache
    _part: tuple[Any, ...] | None = field(default=None, repr=False)
    _loader: Callable[[], tuple[Any, ...]] | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        meta: pa.Table,
        vectors: NDArray[np.floating] | None = None,
        mean: NDArray[np.float32] | None = None,
        codes: NDArray[np.uint64] | None = None,
        vec_rows: NDArray[np.int64] | None = None,
        *,
        version: int,
        generation: int = 0,
        loader: Callable[[], tuple[Any, ...]] | None = None,
    ) -> VectorMatrix:
        """From a META_COLUMNS scan and the vectors of `vec_rows` (default: every row), or a
        `loader` returning (vectors, mean, codes, vec_rows) when they are first needed."""
        part = None
        if vectors is not None:
            if vec_rows is None:
                vec_rows = np.arange(len(vectors), dtype=np.int64)
            if mean is None or codes is None:
                mean, codes = sign_codes(vectors)
            part = (vectors, mean, codes, vec_rows)
        return cls(
            version=version,
            filters=FilterColumns.from_arrow(meta),
            ids=ChunkIds(meta["id"].combine_chunks()),
            display=DisplayColumns.from_arrow(meta),
            generation=generation,
            built_at=time.monotonic(),
            _part=part,
            _loader=loader,
        )

    @property
    def loaded(self) -> bool:
        """True once the vectors are in (or mapped into) memory."""
        return self._part is not None

    def repoint(self, generation: int, loader: Callable[[], tuple[Any, ...]]) -> VectorMatrix:
        """The same rows and meta with another vector generation (loaded when first needed)."""
        return replace(self, generation=generation, built_at=time.monotonic(), _part=None,
                       _loader=loader)  # fmt: skip

    def _vector_part(self) -> tuple[Any, ...]:
        if self._part is None:
            if self._loader is None:
                raise ValueError("a VectorMatrix needs vectors or a loader")
            self._part = self._loader()
        return self._part

    @property
    def vectors(self) -> NDArray[np.float16]:
        """(len(vec_rows), dim) L2-normalised float16 rows, usually memory-mapped."""
        return self._vector_part()[0]

    @property
    def mean(self) -> NDArray[np.float32]:
        return self._vector_part()[1]

    @property
    def codes(self) -> NDArray[np.uint64]:
        """(words, len(vec_rows)): sign bits of (vector - mean)."""
        return self._vector_part()[2]

    @property
    def vec_rows(self) -> NDArray[np.int64]:
        """Table row of each vector row."""
        return self._vector_part()[3]

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def coverage(self) -> tuple[int, int]:
        """(rows with a vector, rows): the semantic index is complete when they are equal."""
        return len(self.vec_rows), len(self.ids)

    def mask(self, where: Filter | None) -> NDArray[np.bool_] | None:
        """Rows passing the filter (None = all)."""
        return self.filters.mask(where)

    def meta(self, ids: list[str]) -> dict[str, ChunkMeta]:
        """Display fields of the given chunks, from memory."""
        rows = self.ids.rows_of(ids)
        found = [(cid, int(r)) for cid, r in zip(ids, rows.tolist(), strict=True) if r >= 0]
        if not found:
            return {}
        at = np.array([r for _, r in found], dtype=np.int64)
        rowids = self.display.rowids_at(at)
        f, d = self.filters, self.display
        out = {}
        for (cid, r), message_rows in zip(found, rowids, strict=True):
            name, participants = d.labels[d.label_of[r]]
            out[cid] = ChunkMeta(
                id=cid, chat_id=int(f.chat_ids[r]), chat_name=name, participants=participants,
                start=float(f.starts[r]), end=float(f.ends[r]), rowids=message_rows,
            )  # fmt: skip
        return out

    def rowids_of(self, ids: list[str]) -> dict[str, tuple[int, ...]]:
        """Message rowids per chunk id (for overlap dedupe without touching disk)."""
        return {cid: m.rowids for cid, m in self.meta(ids).items()}

    def search(
        self, query: NDArray[np.float32], n: int, mask: NDArray[np.bool_] | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, cosine) among the embedded rows in `mask` (table rows; None = all)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        complete = len(self.vec_rows) == len(self.ids)
        if mask is not None and not complete:
            mask = mask[self.vec_rows]  # into vector-row order
        count = len(self.vec_rows) if mask is None else int(mask.sum())
        n = min(n, count)
        if n <= 0:
            return []
        if count <= EXACT_MAX:
            rows = np.arange(len(self.vec_rows)) if mask is None else np.flatnonzero(mask)
        else:
            rows = self._candidates(q, n, count, mask)
        # float16 rows are read for the candidates only, and widened to float32 only for them
        scores = _dot(_rows(self.vectors, rows), q)
        best = _top(scores, n)
        ids = self.ids.at(self.vec_rows[rows[best]])
        return [(cid, float(scores[i])) for cid, i in zip(ids, best, strict=True)]

    def _candidates(
        self, q: NDArray[np.float32], n: int, count: int, mask: NDArray[np.bool_] | None
    ) -> NDArray[np.int64]:
        """Vector rows worth an exact score (ascending): Hamming shortlist, then sign re-rank."""
        centred = q - self.mean
        qcode = pack(centred[None, :] > 0)[:, 0]
        wide = max(RESCORE_MIN, RESCORE_PER_HIT * n, count // RESCORE_SHARE)
        rows = nearest(hamming(self.codes, qcode, mask), min(wide, count))
        narrow = max(NARROW_MIN, NARROW_PER_HIT * n)
        if len(rows) <= narrow:
            return rows
        estimate = sign_scores(self.codes, rows, q)
        return np.sort(rows[np.argpartition(-estimate, narrow - 1)[:narrow]])


def _rows(vectors: Any, rows: NDArray[np.int64]) -> NDArray[np.floating]:
    """Rows of an in-memory array or of a VectorFile (read, not mapped)."""
    take = getattr(vectors, "take", None)
    if take is not None and not isinstance(vectors, np.ndarray):
        return take(rows)
    return vectors[rows]


@contextmanager
def private_files() -> Iterator[None]:
    """Create files owner-only while the block runs (the index holds message text)."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _dot(rows: NDArray[np.floating], q: NDArray[np.float32]) -> NDArray[np.float32]:
    rows = np.asarray(rows, dtype=np.float32)  # float16 storage, float32 arithmetic
    # einsum stays single-threaded: OpenBLAS gemv spins up threads that stall for 10–20 ms
    # when the other core is busy (measured on the 2-core dev box), even for 4k rows.
    return np.einsum("ij,j->i", rows, q)


def _top(scores: NDArray[np.float32], n: int) -> NDArray[np.int64]:
    if n < len(scores):
        part = np.argpartition(-scores, n - 1)[:n]
        return part[np.argsort(-scores[part], kind="stable")]
    return np.argsort(-scores, kind="stable")
