"""Where a chunk index lives and which chunker it must have been cut with: opening it (for an
embedder, or for whichever model built it), creating it, replacing it, and what can be read
about it without LanceDB (its published generation, its recorded vector status).

The composition root builds one from the configuration (`casper.app.runtime.index_place`); the
index run and the readers get it passed in, so nothing below the root reads a Config.

Imports: stdlib, casper.errors, casper.protocols (types), casper.index (chunk_index lazily: it
imports pyarrow and numpy, which a no-op `casper index` never needs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from casper.errors import IndexMissing
from casper.index.files import (
    SCHEMA_VERSION,
    Generation,
    identity,
    is_current,
    older_schema,
    read_generation,
    read_manifest,
)

if TYPE_CHECKING:
    from casper.index.chunk_index import ChunkIndex
    from casper.protocols import Embedder


@dataclass(frozen=True, slots=True)
class IndexPlace:
    """The chunk index's directory and the chunker signature it must match."""

    directory: Path
    chunker_version: str

    def exists(self) -> bool:
        return self.directory.exists()

    def current(self) -> bool:
        """True when an index of this version's schema is here (its manifest says so); an
        older one (`outdated`) is rebuilt by the next `casper index`."""
        return is_current(self.directory)

    def open(
        self, embedder: Embedder | None, *, create: bool = False, after: Generation | None = None
    ) -> ChunkIndex:
        """The index at its published generation, checked against `embedder` and the chunker
        (`embedder=None`: whichever model built it, for BM25-only use without loading one).
        Raises IndexMissing when there is none (and `create` is off), IndexMismatch when it was
        built with other settings. `after`: the generation of what a new table replaces (its
        numbers go on from it)."""
        if not create and not self.directory.exists():
            raise IndexMissing(f"no search index in {self.directory.parent}")
        return self._open(embedder, create=create, after=after)

    def built_with(self, embedder: Embedder) -> bool:
        """True when the manifest here names this embedder, this chunker and this schema (read
        without LanceDB): a rebuild then keeps the folder and its vectors; otherwise it starts
        a new one."""
        found = read_manifest(self.directory)
        expected = {
            "schema": SCHEMA_VERSION, "embedder": embedder.name, "dim": embedder.dim,
            "checksum": getattr(embedder, "checksum", ""), "chunker": self.chunker_version,
        }  # fmt: skip
        return bool(found) and identity(found) == expected

    def replace(self, embedder: Embedder) -> ChunkIndex:
        """Start a new, empty index in place of this one (another model, or a damaged index):
        the old directory is renamed aside, then deleted; generation numbers go on from it, so
        a reader that held the old one sees a new generation, never a repeated number."""
        from casper.index.chunk_index import discard

        last = read_generation(self.directory)
        discard(self.directory)
        return self._open(embedder, create=True, after=last)

    def outdated(self) -> bool:
        """True when the index here was built by an earlier version of Casper (an older table
        schema): `upgrade` rebuilds it."""
        return older_schema(self.directory)

    def upgrade(self, embedder: Embedder) -> ChunkIndex | None:
        """A new, empty index in place of an outdated one built with this same model, keeping
        its vectors (they are keyed by the embedded text, so every chunk whose text is
        unchanged keeps its vector: no re-embedding); None when it was built with another
        model (that needs `casper index --rebuild`)."""
        from casper.index.chunk_index import discard
        from casper.index.vecstore import FILE

        built = identity(read_manifest(self.directory))
        now = (embedder.name, embedder.dim, getattr(embedder, "checksum", ""))
        if (built["embedder"], built["dim"], built["checksum"]) != now:
            return None
        last = read_generation(self.directory)
        discard(self.directory, keep=(FILE, f"{FILE}-wal", f"{FILE}-shm"))
        return self._open(embedder, create=True, after=last)

    def generation(self) -> Generation:
        """What was published last (Generation() when nothing was): one small file read."""
        return read_generation(self.directory)

    def recorded_vector_status(self) -> tuple[int, int] | None:
        """(vectors done, total) as the last fill recorded them for the published version; None
        when there is no such record. Never imports LanceDB."""
        from casper.index.chunk_index import recorded_vector_status

        return recorded_vector_status(self.directory)

    def vector_status(self) -> tuple[int, int] | None:
        """(vectors done, total), counted when no fill recorded them; None without an index."""
        from casper.index.chunk_index import vector_status_at

        return vector_status_at(self.directory)

    def _open(
        self, embedder: Embedder | None, *, create: bool, after: Generation | None = None
    ) -> ChunkIndex:
        # lance's Rust logger warns on routine events (a new table); keep stderr for real problems
        os.environ.setdefault("LANCE_LOG", "error")
        from casper.index.chunk_index import ChunkIndex

        return ChunkIndex.open(
            self.directory,
            embedder_name=embedder.name if embedder is not None else None,
            dim=embedder.dim if embedder is not None else None,
            checksum=getattr(embedder, "checksum", "") if embedder is not None else None,
            chunker_version=self.chunker_version,
            create=create,
            after=after,
        )
