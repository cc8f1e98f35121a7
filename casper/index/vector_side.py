"""The vector side of the chunk index (a mixin of `ChunkIndex`): the float16 side file, the
lazily loaded search matrix, and what is still missing a vector.

Imports: pyarrow (through the index), casper.store (vecstore, vector_cache, vectors).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from casper.errors import IndexMissing
from casper.index.vecstore import VectorStore
from casper.index.vector_cache import build_vectors, load_vectors
from casper.index.vectors import META_COLUMNS, VectorMatrix, private_files

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

REFRESH_S = 30.0  # a reader's matrix lags a running vector fill by at most this
_REOPEN_TRIES = 3


def release_freed_memory() -> None:
    """Hand memory freed after a large scan back to the OS. glibc keeps freed blocks in its
    arenas (the meta scan of 622k chunks left ~140 MB resident after it was dropped); other
    platforms' allocators are left alone (not measured)."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):  # not glibc (musl has none)
        ctypes.CDLL(None).malloc_trim(0)


class VectorSide:
    """Expects from `ChunkIndex`: dir, dim, table, version, epoch, scan()."""

    dir: Path
    dim: int
    table: Any
    epoch: int
    _matrix: VectorMatrix | None
    _vectors: VectorStore | None

    @property
    def version(self) -> int:  # pragma: no cover - ChunkIndex defines it
        raise NotImplementedError

    def scan(self, columns: list[str], where: str | None = None) -> pa.Table:  # pragma: no cover
        raise NotImplementedError

    @property
    def vectors(self) -> VectorStore:
        """The side file holding every embedded chunk's vector (opened on first use)."""
        if self._vectors is None:
            with private_files():
                self._vectors = VectorStore.open(self.dir, self.dim)
        return self._vectors

    def matrix(self, *, refresh: bool = False) -> VectorMatrix:
        """The in-memory search state of the current table version and vector generation.

        Meta and filters are loaded per table version; the vectors on the first vector search
        (a lexical-only search never builds or maps them). While vectors are being filled in by
        another process their generation changes every batch; a reader then re-points at most
        every REFRESH_S seconds, not on every search (`refresh` re-points now).
        """
        for _ in range(_REOPEN_TRIES):
            version, epoch = self.version, self.epoch
            generation = self.vectors.generation()
            current = self._matrix
            if current is not None and current.version == version:
                if current.generation == generation and not refresh:
                    return current
                young = time.monotonic() - current.built_at < REFRESH_S
                if current.loaded and not refresh and young:
                    done, total = current.coverage
                    if done < total:
                        return current
                # same table version: keep the meta and filters, re-point the vectors
                self._matrix = current.repoint(generation, self._loader(version, generation))
                return self._matrix
            meta = self.scan(META_COLUMNS)
            if self.epoch != epoch:
                continue  # a read reopened at a newer generation meanwhile: build again
            self._matrix = VectorMatrix.build(
                meta, version=version, generation=generation,
                loader=self._loader(version, generation),
            )  # fmt: skip
            del meta
            release_freed_memory()  # the scan's buffers, now copied into compact columns
            return self._matrix
        raise IndexMissing(
            f"the search index in {self.dir} kept changing while loading",
            hint="try again when `casper index` has finished",
        )

    def _loader(self, version: int, generation: int) -> Callable[[], tuple[Any, ...]]:
        """Loads (or first builds) the vector cache of a version; called on the first vector
        search, so lexical-only searches never touch it. The chunks' content hashes are read
        only to build a cache (not kept: ~60 MB of strings at 1M chunks)."""
        epoch = self.epoch

        def load() -> tuple[Any, ...]:
            cached = load_vectors(self.dir, version, generation, self.dim)
            if cached is None:
                if (self.version, self.epoch) != (version, epoch):
                    raise IndexMissing(
                        f"the search index in {self.dir} changed while loading",
                        hint="run the search again",
                    )
                keys = self.scan(["content_hash"])["content_hash"].to_pylist()
                fetch = self.vectors.gather
                cached = build_vectors(self.dir, version, generation, self.dim, keys, fetch)
                del keys
                release_freed_memory()
            return cached

        return load

    def vector_status(self) -> tuple[int, int]:
        """(chunks with a vector, chunks): `vectors_done`, `vectors_total`."""
        status = self.vectors.status()
        if status is not None and status["version"] == self.version:
            return status["done"], status["total"]
        return self.matrix().coverage

    def missing_vectors(self, batch: int = 4096) -> Iterator[list[tuple[str, str]]]:
        """(content_hash, embed_text) of chunks without a vector, streamed in batches (a text
        shared by several chunks comes once per batch)."""
        cols = ["content_hash", "embed_text"]
        for rb in self.table.search().select(cols).limit(None).to_batches(batch):
            keys = rb.column("content_hash").to_pylist()
            have = self.vectors.present(keys)
            if len(have) < len(set(keys)):
                body = rb.column("embed_text").to_pylist()
                todo = {k: t for k, t in zip(keys, body, strict=True) if k not in have}
                yield list(todo.items())

    def count_missing(self, batch: int = 8192) -> int:
        """Chunks (table rows) without a vector; reads only the hash column."""
        missing = 0
        for rb in self.table.search().select(["content_hash"]).limit(None).to_batches(batch):
            keys = rb.column("content_hash").to_pylist()
            have = self.vectors.present(keys)
            missing += sum(1 for k in keys if k not in have)
        return missing

    def prune_vectors(self) -> int:
        """Drop side-file vectors of chunks no longer in the table."""
        keys = self.scan(["content_hash"])["content_hash"].to_pylist()
        return self.vectors.prune(keys)
