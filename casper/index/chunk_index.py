"""The chunk index: one LanceDB table (FTS + scalar indexes) plus an in-memory vector matrix.

Generations: a writer (`casper index`) works on the table's head and, when done, `publish`es it
by writing `generation.json` last (`files.Generation`: a number that goes up at every publish,
the table version, the run); only then are older versions cleaned up. A fill publishes the same
version again as vectors arrive, so readers see them without reopening the table. Readers open
and stay on the published generation (never a half-written head), and `refresh_if_stale()` (one
`stat`) moves them to a newer one: a new table version is reopened, more vectors only re-point
the matrix. A read that races the cleanup of the version it held reopens at the new generation
and retries once.

The read side (scans, the search legs) is `reads.ChunkReads`, the vector side
`vector_side.VectorSide`, the directory's file names, the generation record and removal `files`.

Imports: pyarrow, numpy, casper.records, casper.errors, casper.index.*; lancedb lazily (it
costs ~1.4 s to import, and a process that never opens the index should not pay it).
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from casper.errors import IndexMismatch, IndexMissing
from casper.index.chunk_table import (
    Filter,
    IndexedChunk,
    file_key,
    index_specs,
    pieces_to_arrow,
    read_json,
    table_schema,
    write_json,
)
from casper.index.files import (
    GENERATION,
    MANIFEST,
    SCHEMA_VERSION,
    TABLE,
    Generation,
    discard,
    identity,
    mismatch_message,
    only_older,
    read_generation,
    remove_index,
    write_generation,
)
from casper.index.health import manifest_damage, table_damage
from casper.index.lance_import import lancedb as import_lancedb
from casper.index.reads import ChunkReads, id_predicates
from casper.index.vecstore import FILE as VECTOR_FILE
from casper.index.vecstore import VectorStore
from casper.index.vector_side import VectorSide
from casper.index.vectors import VectorMatrix, private_files
from casper.records import Chunk, to_piece

log = logging.getLogger(__name__)

# Old versions still hold deleted messages' text, so once a new generation is published every
# older version goes. A time-based grace would not protect a long-lived reader anyway: Lance ages
# a version from when it was written, and a service's generation may be hours old. Readers that
# lose the race reopen at the new generation and retry once instead.
CLEANUP_OLDER_THAN = timedelta(0)
KEEP_WHILE_WRITING = timedelta(days=7)  # lancedb's default: nothing a reader holds goes early
_REOPEN_TRIES = 3
UPGRADE_HINT = (
    "run `casper index`: it rebuilds the search index for this version (vectors are kept)"
)
T = TypeVar("T")
__all__ = [
    "ChunkIndex", "Filter", "Generation", "IndexedChunk", "discard", "table_schema",
    "vector_status_at",
]  # fmt: skip


class ChunkIndex(ChunkReads, VectorSide):
    """Chunks with vectors in LanceDB; exact-or-binary vector search served from memory."""

    def __init__(
        self, index_dir: Path, db: Any, table: Any, dim: int, manifest: dict[str, Any]
    ) -> None:
        self.dir = index_dir
        self.dim = dim
        self._db = db
        self.table = table
        self.manifest = manifest
        self._matrix: VectorMatrix | None = None
        self._writing = False  # a writer works on the head; readers stay on a generation
        self._run = 0  # a writer's run number: the last published one + 1
        self._seen: tuple[int, int, int] | None = None  # generation file identity last read
        # the generation this process reads: a search that saw two of them mixed them
        self.generation = Generation()
        self._vectors = None  # the side file (index_vectors.VectorSide.vectors)
        self._meta_cache = (None, {})  # index_reads.ChunkReads.chunk_meta's, per version

    # ---- opening -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        index_dir: Path,
        *,
        embedder_name: str | None,
        dim: int | None,
        checksum: str | None,
        chunker_version: str,
        create: bool = True,
        reset: bool = False,
        after: Generation | None = None,
    ) -> ChunkIndex:
        """Open the index at its published generation; a different model or chunker raises
        IndexMismatch, not mixed vectors. `embedder_name=None` accepts the recorded model (for
        BM25-only use without loading one; `check_embedder` verifies a model loaded later).
        `after`: the generation of an index this one replaces (a new one numbers on from it)."""
        index_dir = Path(index_dir)
        if reset and index_dir.exists():
            remove_index(index_dir)
        found = read_json(index_dir / MANIFEST)
        if not found and (damaged := manifest_damage(index_dir)) is not None:
            raise damaged.error()  # not "no manifest (unknown model)": it is there, unreadable
        if embedder_name is None:
            embedder_name, dim, checksum = (
                found.get("embedder"),
                found.get("dim"),
                found.get("checksum"),
            )
        expected = {
            "schema": SCHEMA_VERSION, "embedder": embedder_name, "dim": dim,
            "checksum": checksum, "chunker": chunker_version,
        }  # fmt: skip
        if not (index_dir / f"{TABLE}.lance").exists():
            if not create:
                raise IndexMissing(f"no search index at {index_dir}")
            if embedder_name is None or dim is None:
                raise IndexMissing(f"no search index at {index_dir}")
            return cls._create(index_dir, expected, after or Generation())
        if not found or identity(found) != expected:
            hint = UPGRADE_HINT if only_older(found, expected) else None
            raise IndexMismatch(mismatch_message(found, expected), hint=hint)
        index = cls(index_dir, None, None, int(found["dim"]), found)
        index._reopen()
        return index

    @classmethod
    def _create(cls, index_dir: Path, manifest: dict[str, Any], after: Generation) -> ChunkIndex:
        lancedb = import_lancedb()

        with private_files():
            index_dir.mkdir(parents=True, exist_ok=True)
            os.chmod(index_dir, 0o700)
            db = lancedb.connect(str(index_dir))
            table = db.create_table(TABLE, schema=table_schema(manifest["dim"]))
            write_json(index_dir / MANIFEST, manifest)
        index = cls(index_dir, db, table, manifest["dim"], dict(manifest))
        index._writing, index._run = True, after.run + 1
        # readers see it empty, never a half-written first run; numbers go on from `after`
        index._publish(index.version, after)
        return index

    def check_embedder(self, embedder: Any) -> None:
        """Raise IndexMismatch unless `embedder` is the model this index's vectors came from."""
        now = {
            "embedder": embedder.name,
            "dim": int(embedder.dim),
            "checksum": getattr(embedder, "checksum", ""),
        }
        recorded = {k: self.manifest.get(k) for k in now}
        if recorded != now:
            raise IndexMismatch(mismatch_message(self.manifest, {**self.manifest, **now}))

    @property
    def version(self) -> int:
        return int(self.table.version)

    # ---- generations ---------------------------------------------------------------------
    def refresh_if_stale(self) -> bool:
        """Follow the newest published generation if a writer published one since we last
        looked; True when it moved. A new table version is reopened; more vectors on the same
        one only re-point the matrix (on its next use). Costs one `stat` when nothing changed
        (call it per request)."""
        if self._writing or file_key(self.dir / GENERATION) == self._seen:
            return False
        self._seen = file_key(self.dir / GENERATION)
        now = read_generation(self.dir)
        if now == self.generation:
            return False
        if now.version is not None and now.table == self.generation.table:
            self.generation = now  # the same table with more vectors
        else:
            self._reopen()
        return True

    def publish(self, *, cleanup: bool = True) -> int:
        """Make the head the generation readers use (the record is written last, atomically),
        then drop older versions. Returns the published version. The first publish of a writer
        starts a new run: readers that keep more than the index (the service's store) reopen."""
        self._for_writing()
        version = self._publish(self.version)
        if cleanup:
            with private_files(), warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                self.table.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
            if self.version != version:  # the cleanup pass compacted once more: same rows
                version = self._publish(self.version)
        return version

    def publish_run(self) -> Generation:
        """Publish this writer's run even when it wrote no chunk (the store changed, and readers
        that keep more than the index, such as the service's store, follow runs)."""
        self._for_writing()
        if self.generation.run != self._run or self.generation.version != self.version:
            self.publish(cleanup=self.generation.version != self.version)
        return self.generation

    def publish_vectors(self) -> Generation:
        """Publish the vectors filled in since the last publish: the same table version and
        run, the next generation number (readers re-point their matrix, nothing is reopened)."""
        current = read_generation(self.dir)
        version = current.version if current.version is not None else self.version
        run = current.run if current.version is not None else self._run
        with private_files():
            self.generation = write_generation(self.dir, version=version, run=run)
        self._seen = file_key(self.dir / GENERATION)
        return self.generation

    def _publish(self, version: int, after: Generation | None = None) -> int:
        with private_files():
            self.generation = write_generation(self.dir, version=version, run=self._run,
                                               after=after)  # fmt: skip
        self._seen = file_key(self.dir / GENERATION)
        return version

    def _reopen(self) -> None:
        """Open the table afresh at the published generation (the head when none is published).

        A fresh connection, not a checkout on the old handle: `--rebuild` replaces the whole
        directory, and version numbers restart with it."""
        lancedb = import_lancedb()

        for attempt in range(_REOPEN_TRIES):
            self._seen = file_key(self.dir / GENERATION)
            generation = read_generation(self.dir)
            published = generation.version
            manifest = read_json(self.dir / MANIFEST)
            if manifest and identity(manifest) != identity(self.manifest):
                raise IndexMismatch(
                    "the search index was rebuilt with different settings while open",
                    hint="run the command again",
                )
            try:
                db = lancedb.connect(str(self.dir))
                table = db.open_table(TABLE)
                if published is not None and int(published) != int(table.version):
                    table.checkout(int(published))
            except (OSError, RuntimeError, ValueError) as exc:
                # a writer replaced the generation (or the directory) under us: look again
                if attempt == _REOPEN_TRIES - 1:
                    damaged = table_damage(self.dir)  # or it does not open at all
                    if damaged:
                        raise damaged[0].error() from exc
                    raise IndexMissing(
                        f"the search index in {self.dir} is being rewritten",
                        hint="try again when `casper index` has finished",
                    ) from exc
                time.sleep(0.05 * (attempt + 1))
                continue
            self._db, self.table, self.manifest = db, table, manifest or self.manifest
            self._matrix = None
            self.generation = generation
            return

    def _read(self, fn: Callable[[], T]) -> T:
        """Run a read; if the version it used was cleaned up meanwhile, reopen at the published
        generation and retry (a writer may publish twice in quick succession)."""
        for attempt in range(_REOPEN_TRIES):
            try:
                return fn()
            except (OSError, RuntimeError, ValueError):
                if self._writing or attempt == _REOPEN_TRIES - 1:
                    raise
                log.info("index version gone during a read; reopening at the published one")
                self._reopen()
        raise AssertionError("unreachable")

    def _for_writing(self) -> None:
        if not self._writing:
            self.table.checkout_latest()  # a reader's pinned version is read-only
            self._writing = True
            self._run = read_generation(self.dir).run + 1  # what this writer publishes

    # ---- writing -------------------------------------------------------------------------
    def upsert(self, chunks: Sequence[Chunk], vectors: NDArray[np.float32] | None = None) -> None:
        """Insert or replace chunks (by id); with `vectors` (rows aligned) they are stored too,
        without them the chunks are searchable lexically until `ensure_vectors` fills them in."""
        if not chunks:
            return
        self.upsert_rows(self._to_arrow(chunks, vectors))

    def add(self, chunks: Sequence[Chunk], vectors: NDArray[np.float32] | None = None) -> None:
        """Append chunks whose ids are known to be new (cheaper than `upsert`)."""
        if not chunks:
            return
        self.append_rows(self._to_arrow(chunks, vectors))

    def _to_arrow(self, chunks: Sequence[Chunk], vectors: NDArray[np.float32] | None) -> pa.Table:
        if vectors is not None:
            vecs = np.asarray(vectors, dtype=np.float32)
            if vecs.shape != (len(chunks), self.dim):
                raise ValueError(
                    f"expected vectors of shape {(len(chunks), self.dim)}, got {vecs.shape}"
                )
            self.vectors.put([c.content_hash for c in chunks], vecs)
        return pieces_to_arrow([to_piece(c) for c in chunks], self.dim)

    def append_rows(self, data: pa.Table | pa.RecordBatchReader) -> None:
        """Append rows (see `pieces_to_arrow`) whose ids are known to be new; a reader is
        written as it is read, in one commit."""
        self._for_writing()
        with private_files():
            self.table.add(data)
        self._matrix = None

    def upsert_rows(self, data: pa.Table) -> None:
        """Insert or replace rows (see `pieces_to_arrow`) by id."""
        self._for_writing()
        with private_files():
            (
                self.table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data)
            )
        self._matrix = None

    def delete_ids(self, ids: Sequence[str]) -> int:
        """Delete chunks by id; returns how many ids were asked for."""
        ids = list(dict.fromkeys(ids))
        if ids:
            self._for_writing()
        with private_files():
            for where in id_predicates(ids):
                self.table.delete(where)
        if ids:
            self._matrix = None
        return len(ids)

    def clear(self) -> None:
        """Delete every chunk (readers keep the published generation until `optimize`)."""
        self._for_writing()
        with private_files():
            self.table.delete("true")
        self._matrix = None

    def set_source(self, source: dict[str, str]) -> None:
        """Record which store (and chat.db) the chunks were built from, in the manifest."""
        if self.manifest.get("source") == source:
            return
        self.manifest = {**self.manifest, "source": dict(source)}
        with private_files():
            write_json(self.dir / MANIFEST, self.manifest)

    def optimize(self, *, warm: bool = True) -> None:
        """Create missing indexes, fold new rows into them, compact; then publish the result as
        the new generation (which drops old versions, and with them deleted messages' text)."""
        self._for_writing()
        if self.count():
            with private_files():
                self._ensure_indices()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    # no cleanup yet: readers still hold the last published generation
                    for _ in range(3):  # until compaction and index folding settle
                        before = self.version
                        self.table.optimize(cleanup_older_than=KEEP_WHILE_WRITING)
                        if self.version == before:
                            break
            self._matrix = None
            if warm:
                self.matrix().coverage  # noqa: B018 - builds the vector cache now, not on a search
        self.publish()

    def _ensure_indices(self) -> None:
        present = {ix.name for ix in self.table.list_indices()}
        for column, name, config in index_specs():
            if name not in present:
                self.table.create_index(column, config=config, replace=True, name=name)


def recorded_vector_status(index_dir: Path) -> tuple[int, int] | None:
    """(vectors_done, vectors_total) as the last fill recorded them for the published table
    version, read without LanceDB (~1.4 s to import); None when there is no index, no record
    or one for another version."""
    index_dir = Path(index_dir)
    found = read_json(index_dir / MANIFEST)
    if not (index_dir / f"{TABLE}.lance").exists() or found.get("schema") != SCHEMA_VERSION:
        return None
    published = read_generation(index_dir).version
    if published is None or not (index_dir / VECTOR_FILE).exists():
        return None
    with private_files():
        side = VectorStore.open(index_dir, int(found["dim"]))
    try:
        status = side.status()
    finally:
        side.close()
    if status is not None and status["version"] == published:
        return status["done"], status["total"]
    return None


def vector_status_at(index_dir: Path) -> tuple[int, int] | None:
    """(vectors_done, vectors_total) of the index in `index_dir` without loading a model;
    None when there is no index (or one from an older schema). Exact when the last fill
    recorded this table version, otherwise counted (a pass over the chunk hashes)."""
    index_dir = Path(index_dir)
    recorded = recorded_vector_status(index_dir)
    if recorded is not None:  # the common case, answered without importing LanceDB
        return recorded
    found = read_json(index_dir / MANIFEST)
    if not (index_dir / f"{TABLE}.lance").exists() or found.get("schema") != SCHEMA_VERSION:
        return None
    index = ChunkIndex(index_dir, None, None, int(found["dim"]), found)
    index._reopen()
    try:
        status = index.vectors.status()
        total = index.count()
        if status is not None and status["version"] == index.version:
            return status["done"], status["total"]
        return total - index.count_missing(), total
    finally:
        index.vectors.close()
