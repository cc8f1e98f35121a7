"""The vector side of the chunk index (a mixin of `ChunkIndex`): the float16 side file, the
lazily loaded search matrix, and what is still missing a vector.

Imports: pyarrow (through the index), casper.store (vecstore, vector_cache, vectors).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from casper.errors import IndexMissing
from casper.index.files import BM25_FILE, Generation
from casper.index.vecstore import VectorStore
from casper.index.vector_cache import build_vectors, drop_caches, load_vectors
from casper.index.vectors import META_COLUMNS, VectorMatrix, private_files

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

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
    """Expects from `ChunkIndex`: dir, dim, table, version, generation, scan()."""

    dir: Path
    dim: int
    table: Any
    generation: Generation
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

    def matrix(self) -> VectorMatrix:
        """The in-memory search state of the generation this process reads.

        Meta and filters are loaded per table version; the vectors on the first vector search
        (a lexical-only search never builds or maps them). A generation that only added vectors
        (a fill publishes as it goes) keeps the meta and re-points the vectors.
        """
        for _ in range(_REOPEN_TRIES):
            version, seen = self.version, self.generation
            current = self._matrix
            if current is not None and current.version == version:
                if current.generation != seen.number:
                    # same table version, more vectors: keep the meta and filters
                    current = current.repoint(seen.number, self._loader(version, seen))
                    self._matrix = current
                return current
            meta = self.scan(META_COLUMNS)
            if self.generation != seen:
                continue  # a read reopened at a newer generation meanwhile: build again
            built = VectorMatrix.build(
                meta, version=version, generation=seen.number, loader=self._loader(version, seen)
            )
            self._matrix = built
            del meta
            release_freed_memory()  # the scan's buffers, now copied into compact columns
            return built
        raise IndexMissing(
            f"the search index in {self.dir} kept changing while loading",
            hint="try again when `casper index` has finished",
        )

    def _loader(self, version: int, seen: Generation) -> Callable[[], tuple[Any, ...]]:
        """Loads (or first builds) the vector cache of a generation; called on the first vector
        search, so lexical-only searches never touch it. The chunks' content hashes are read
        only to build a cache (not kept: ~60 MB of strings at 1M chunks)."""

        def load() -> tuple[Any, ...]:
            cached = load_vectors(self.dir, version, seen.number, self.dim)
            if cached is None:
                if (self.version, self.generation.table) != (version, seen.table):
                    raise IndexMissing(
                        f"the search index in {self.dir} changed while loading",
                        hint="run the search again",
                    )
                keys = self.scan(["content_hash"])["content_hash"].to_pylist()
                fetch = self.vectors.gather
                cached = build_vectors(self.dir, version, seen.number, self.dim, keys, fetch)
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

    def erase_removed(self) -> int:
        """After rows were purged (people kept out): no copy of the removed chunks' vectors or
        content hashes left anywhere in the index folder — erased from the side file, every
        vector cache deleted (older generations' too; the next search builds its own from the
        side file) and rank-bm25's file of the chunks (rebuilt when next used). Returns how many
        vectors went."""
        keys = self.scan(["content_hash"])["content_hash"].to_pylist()
        gone = self.vectors.prune(keys, erase=True)
        drop_caches(self.dir)
        (self.dir / BM25_FILE).unlink(missing_ok=True)
        return gone
