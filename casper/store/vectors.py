"""In-memory search state of one index version: vectors (exact or binary+rescore), filters, meta.

Imports: numpy, pyarrow. A float32 matrix-vector product is memory-bound (23 ms per 100k×384 on
2 cores), so large searches rank by Hamming distance on sign bits first, then rescore exactly.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pyarrow as pa

    from casper.store.index import Filter

EXACT_MAX = 8_192  # rows scored exactly; above this, binary candidates + exact rescoring
# On all-MiniLM-L6-v2 chat embeddings (100k), rescoring the 2,000 nearest by Hamming distance
# gave recall@10 0.998 vs exact, 4,000 gave 1.000; the bench re-measures per corpus size.
RESCORE_MIN = 2_048
RESCORE_PER_HIT = 40
RESCORE_SHARE = 64  # and at least 1/64 of the candidate rows
CACHE_KEYS = ("vectors", "mean", "codes")
log = logging.getLogger(__name__)
META_COLUMNS = [
    "id",
    "chat_id",
    "chat_name",
    "participants",
    "person_ids",
    "start",
    "end",
    "rowids",
]


@dataclass(frozen=True, slots=True)
class ChunkMeta:
    """What a hit shows besides message text."""

    id: str
    chat_id: int
    chat_name: str
    participants: tuple[str, ...]
    start: float
    end: float
    rowids: tuple[int, ...]


@dataclass(slots=True)
class FilterColumns:
    """chat_id, start, end and person → rows: enough to evaluate a Filter in memory."""

    chat_ids: NDArray[np.int64]
    starts: NDArray[np.float64]
    ends: NDArray[np.float64]
    person_rows: dict[str, NDArray[np.int64]]

    @classmethod
    def from_arrow(cls, table: pa.Table) -> FilterColumns:
        """From the chat_id, start, end and person_ids columns of a scan."""
        import pyarrow.compute as pc

        people = table["person_ids"].combine_chunks()
        parents = np.asarray(pc.list_parent_indices(people).to_numpy(), dtype=np.int64)
        encoded = pc.dictionary_encode(people.flatten())
        codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        labels = encoded.dictionary.to_pylist()
        order = np.argsort(codes, kind="stable")
        splits = np.cumsum(np.bincount(codes, minlength=len(labels)))[:-1]
        groups = np.split(parents[order], splits) if len(labels) else []
        return cls(
            chat_ids=np.asarray(table["chat_id"].to_numpy(), dtype=np.int64),
            starts=np.asarray(table["start"].to_numpy(), dtype=np.float64),
            ends=np.asarray(table["end"].to_numpy(), dtype=np.float64),
            person_rows={str(k): np.unique(g) for k, g in zip(labels, groups, strict=True)},
        )

    def __len__(self) -> int:
        return len(self.chat_ids)

    def mask(self, where: Filter | None) -> NDArray[np.bool_] | None:
        """Rows passing the filter (None = all), same semantics as `Filter.sql`."""
        if where is None or where.empty:
            return None
        keep = np.ones(len(self), dtype=bool)
        if where.chat_id is not None:
            keep &= self.chat_ids == int(where.chat_id)
        if where.person_id is not None:
            person = np.zeros(len(self), dtype=bool)
            person[self.person_rows.get(where.person_id, np.empty(0, dtype=np.int64))] = True
            keep &= person
        if where.since is not None:
            keep &= self.ends >= float(where.since)
        if where.until is not None:
            keep &= self.starts < float(where.until)
        return keep


@dataclass(slots=True)
class VectorMatrix:
    """One table version: L2-normalised vectors (scan order), sign codes, filters and meta."""

    version: int
    meta_table: pa.Table  # META_COLUMNS, same row order as `vectors`
    vectors: NDArray[np.float32]
    mean: NDArray[np.float32]
    codes: NDArray[np.uint64]  # (words, n): sign bits of (vector - mean), column-major
    filters: FilterColumns
    ids: list[str]
    _positions: dict[str, int] | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        meta: pa.Table,
        vectors: NDArray[np.float32],
        mean: NDArray[np.float32] | None = None,
        codes: NDArray[np.uint64] | None = None,
        *,
        version: int,
    ) -> VectorMatrix:
        """From a META_COLUMNS scan and the vectors in the same order (codes computed if absent)."""
        if mean is None or codes is None:
            mean, codes = sign_codes(vectors)
        return cls(
            version=version,
            meta_table=meta.combine_chunks(),
            vectors=vectors,
            mean=mean,
            codes=codes,
            filters=FilterColumns.from_arrow(meta),
            ids=meta["id"].to_pylist(),
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def positions(self) -> dict[str, int]:
        """id → row, built on first use."""
        if self._positions is None:
            self._positions = {cid: i for i, cid in enumerate(self.ids)}
        return self._positions

    def mask(self, where: Filter | None) -> NDArray[np.bool_] | None:
        """Rows passing the filter (None = all)."""
        return self.filters.mask(where)

    def meta(self, ids: list[str]) -> dict[str, ChunkMeta]:
        """Display fields of the given chunks, from memory."""
        rows = [(cid, self.positions[cid]) for cid in ids if cid in self.positions]
        if not rows:
            return {}
        picked = self.meta_table.take([r for _, r in rows]).to_pylist()
        return {
            cid: ChunkMeta(
                id=cid,
                chat_id=int(row["chat_id"]),
                chat_name=row["chat_name"] or "",
                participants=tuple(row["participants"] or ()),
                start=float(row["start"]),
                end=float(row["end"]),
                rowids=tuple(row["rowids"] or ()),
            )  # fmt: skip
            for (cid, _), row in zip(rows, picked, strict=True)
        }

    def rowids_of(self, ids: list[str]) -> dict[str, tuple[int, ...]]:
        """Message rowids per chunk id (for overlap dedupe without touching disk)."""
        return {cid: m.rowids for cid, m in self.meta(ids).items()}

    def search(
        self, query: NDArray[np.float32], n: int, mask: NDArray[np.bool_] | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, cosine) among the rows in `mask` (None = all rows)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        count = len(self) if mask is None else int(mask.sum())
        n = min(n, count)
        if n <= 0:
            return []
        if count <= EXACT_MAX:
            rows = np.arange(len(self)) if mask is None else np.flatnonzero(mask)
        else:
            depth = max(RESCORE_MIN, RESCORE_PER_HIT * n, count // RESCORE_SHARE)
            rows = np.sort(self._binary_candidates(q, depth, mask))
        exact_all = mask is None and count <= EXACT_MAX
        scores = _dot(self.vectors if exact_all else self.vectors[rows], q)
        best = _top(scores, n)
        return [(self.ids[rows[i]], float(scores[i])) for i in best]

    def _binary_candidates(
        self, q: NDArray[np.float32], depth: int, mask: NDArray[np.bool_] | None
    ) -> NDArray[np.int64]:
        qcode = _pack(q[None, :] > self.mean)[:, 0]
        # int32, not uint16: numpy's fast (SIMD) argpartition skips 16-bit types (4x slower)
        dist = np.bitwise_count(self.codes[0] ^ qcode[0]).astype(np.int32)
        for word in range(1, len(qcode)):
            dist += np.bitwise_count(self.codes[word] ^ qcode[word])
        if mask is not None:
            dist[~mask] = np.iinfo(np.int32).max
        depth = min(depth, len(dist))
        rows = np.argpartition(dist, depth - 1)[:depth] if depth < len(dist) else np.arange(depth)
        return rows if mask is None else rows[mask[rows]]


@contextmanager
def private_files() -> Iterator[None]:
    """Create files owner-only while the block runs (the index holds message text)."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


Cached = tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.uint64]]


def _cache_paths(directory: Path, version: int) -> dict[str, Path]:
    return {k: directory / f"{k}-{version}.npy" for k in CACHE_KEYS}


def load_vectors(directory: Path, version: int, n: int, dim: int) -> Cached | None:
    """(vectors, mean, codes) of a table version from the memory-mapped cache, if present."""
    try:
        got = {k: np.load(p, mmap_mode="r") for k, p in _cache_paths(directory, version).items()}
    except (OSError, ValueError):
        return None
    if got["vectors"].shape != (n, dim) or got["codes"].shape[1:] != (n,):
        return None
    return got["vectors"], np.asarray(got["mean"]), got["codes"]


def save_vectors(directory: Path, version: int, vectors: NDArray[np.float32]) -> Cached:
    """Compute the sign codes and cache everything as .npy (other versions' files removed)."""
    mean, codes = sign_codes(vectors)
    arrays = {"vectors": vectors, "mean": mean, "codes": codes}
    paths = _cache_paths(directory, version)
    try:
        with private_files():
            for key, path in paths.items():
                tmp = path.with_name(path.name + ".tmp")
                with tmp.open("wb") as fh:
                    np.save(fh, arrays[key])
                os.replace(tmp, path)
        keep = {p.name for p in paths.values()}
        for old in directory.glob("*-*.npy"):
            if old.name not in keep and old.name.split("-")[0] in CACHE_KEYS:
                old.unlink(missing_ok=True)
    except OSError as exc:  # a cache: searching works without it, only cold starts are slower
        log.warning("could not write the vector cache: %s", type(exc).__name__)
    return vectors, mean, codes


def sign_codes(vectors: NDArray[np.float32]) -> tuple[NDArray[np.float32], NDArray[np.uint64]]:
    """(mean, codes): centring vector and (words, n) sign bits of the centred rows."""
    n, dim = vectors.shape
    mean = vectors.mean(axis=0).astype(np.float32) if n else np.zeros(dim, np.float32)
    codes = np.empty(((dim + 63) // 64, n), dtype=np.uint64)
    for lo in range(0, n, 65_536):  # blocks keep the boolean temporary small
        codes[:, lo : lo + 65_536] = _pack(vectors[lo : lo + 65_536] > mean)
    return mean, codes


def _pack(bits: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """(words, n) uint64 from an (n, dim) boolean array, padded to whole 64-bit words."""
    packed = np.packbits(bits, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed.view(np.uint64).reshape(len(bits), packed.shape[1] // 8).T)


def _dot(rows: NDArray[np.float32], q: NDArray[np.float32]) -> NDArray[np.float32]:
    # einsum stays single-threaded: OpenBLAS gemv spins up threads that stall for 10–20 ms
    # when the other core is busy (measured on the 2-core dev box), even for 4k rows.
    return np.einsum("ij,j->i", rows, q)


def _top(scores: NDArray[np.float32], n: int) -> NDArray[np.int64]:
    if n < len(scores):
        part = np.argpartition(-scores, n - 1)[:n]
        return part[np.argsort(-scores[part], kind="stable")]
    return np.argsort(-scores, kind="stable")
