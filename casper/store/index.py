"""The chunk index: one LanceDB table (FTS + scalar indexes) plus an in-memory vector matrix.

Imports: lancedb, pyarrow, numpy, casper.records, casper.chunking, casper.errors.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple

import lancedb
import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from casper.chunking import SEGMENT_KEY, segment_start, unsegmented_text
from casper.errors import IndexMismatch, IndexMissing
from casper.records import Chunk
from casper.store.vectors import (
    META_COLUMNS,
    VectorMatrix,
    load_vectors,
    private_files,
    save_vectors,
)

log = logging.getLogger(__name__)

TABLE = "chunks"
MANIFEST = "manifest.json"
SCHEMA_VERSION = 1
_IN_BATCH = 1000  # ids per `id IN (...)` predicate
_CHUNK_COLS = [
    "id", "chat_id", "chat_name", "participants", "person_ids", "start", "end",
    "segment_start", "rowids", "guids", "text", "embed_text", "content_hash",
]  # fmt: skip


def table_schema(dim: int) -> pa.Schema:
    """Arrow schema of the `chunks` table."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("chat_id", pa.int64()),
            pa.field("chat_name", pa.string()),
            pa.field("participants", pa.list_(pa.string())),
            pa.field("person_ids", pa.list_(pa.string())),
            pa.field("start", pa.float64()),
            pa.field("end", pa.float64()),
            pa.field("segment_start", pa.float64()),
            pa.field("rowids", pa.list_(pa.int64())),
            pa.field("guids", pa.list_(pa.string())),
            pa.field("text", pa.string()),
            pa.field("cjk", pa.string()),  # CJK/emoji characters only, for the n-gram leg
            pa.field("embed_text", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class Filter:
    """Restrictions applied inside every retrieval leg; times are UTC seconds, until exclusive."""

    person_id: str | None = None
    chat_id: int | None = None
    since: float | None = None
    until: float | None = None

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.person_id, self.chat_id, self.since, self.until))

    def sql(self) -> str | None:
        """The same restriction as a LanceDB `where` clause (overlapping chunks count)."""
        parts: list[str] = []
        if self.chat_id is not None:
            parts.append(f"chat_id = {int(self.chat_id)}")
        if self.person_id is not None:
            parts.append(f"array_has_any(person_ids, [{_quote(self.person_id)}])")
        if self.since is not None:
            parts.append(f"`end` >= {float(self.since)!r}")
        if self.until is not None:
            parts.append(f"`start` < {float(self.until)!r}")
        return " AND ".join(parts) or None


class IndexedChunk(NamedTuple):
    """What incremental indexing needs to know about a stored chunk."""

    id: str
    content_hash: str
    segment_start: float
    rowids: tuple[int, ...]


def _index_specs() -> list[tuple[str, str, Any]]:
    from lancedb.index import FTS, BTree, LabelList

    ngram = FTS(
        base_tokenizer="ngram", ngram_min_length=1, ngram_max_length=3, lower_case=False,
        stem=False, remove_stop_words=False, ascii_folding=False,
    )  # fmt: skip
    return [
        ("text", "text_idx", FTS()),
        ("cjk", "cjk_idx", ngram),
        ("id", "id_idx", BTree()),
        ("chat_id", "chat_id_idx", BTree()),
        ("start", "start_idx", BTree()),
        ("end", "end_idx", BTree()),
        ("person_ids", "person_ids_idx", LabelList()),
    ]


class ChunkIndex:
    """Chunks with vectors in LanceDB; exact-or-binary vector search served from memory."""

    def __init__(self, index_dir: Path, db: Any, table: Any, dim: int) -> None:
        self.dir = index_dir
        self.dim = dim
        self._db = db
        self.table = table
        self._matrix: VectorMatrix | None = None

    # ---- opening -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        index_dir: Path,
        *,
        embedder_name: str,
        dim: int,
        checksum: str,
        chunker_version: str,
        create: bool = True,
        reset: bool = False,
    ) -> ChunkIndex:
        """Open the index; a different model or chunker raises IndexMismatch, not mixed vectors."""
        index_dir = Path(index_dir)
        expected = {
            "schema": SCHEMA_VERSION, "embedder": embedder_name, "dim": int(dim),
            "checksum": checksum, "chunker": chunker_version,
        }  # fmt: skip
        manifest = index_dir / MANIFEST
        if reset and index_dir.exists():
            _remove_index(index_dir)
        if not (index_dir / f"{TABLE}.lance").exists():
            if not create:
                raise IndexMissing(f"no search index at {index_dir}")
            return cls._create(index_dir, expected)
        found = json.loads(manifest.read_text()) if manifest.exists() else {}
        if found != expected:
            raise IndexMismatch(_mismatch_message(found, expected))
        db = lancedb.connect(str(index_dir))
        return cls(index_dir, db, db.open_table(TABLE), dim)

    @classmethod
    def _create(cls, index_dir: Path, manifest: dict[str, Any]) -> ChunkIndex:
        with private_files():
            index_dir.mkdir(parents=True, exist_ok=True)
            os.chmod(index_dir, 0o700)
            db = lancedb.connect(str(index_dir))
            table = db.create_table(TABLE, schema=table_schema(manifest["dim"]))
            tmp = index_dir / (MANIFEST + ".tmp")
            tmp.write_text(json.dumps(manifest, indent=1))
            os.replace(tmp, index_dir / MANIFEST)
        return cls(index_dir, db, table, manifest["dim"])

    @property
    def version(self) -> int:
        return int(self.table.version)

    # ---- writing -------------------------------------------------------------------------
    def upsert(self, chunks: Sequence[Chunk], vectors: NDArray[np.float32]) -> None:
        """Insert or replace chunks (by id) with their vectors (rows aligned with `chunks`)."""
        if not chunks:
            return
        data = self._to_arrow(chunks, vectors)
        with private_files():
            (
                self.table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data)
            )
        self._matrix = None

    def add(self, chunks: Sequence[Chunk], vectors: NDArray[np.float32]) -> None:
        """Append chunks whose ids are known to be new (cheaper than `upsert`)."""
        if not chunks:
            return
        data = self._to_arrow(chunks, vectors)
        with private_files():
            self.table.add(data)
        self._matrix = None

    def _to_arrow(self, chunks: Sequence[Chunk], vectors: NDArray[np.float32]) -> pa.Table:
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.shape != (len(chunks), self.dim):
            raise ValueError(
                f"expected vectors of shape {(len(chunks), self.dim)}, got {vecs.shape}"
            )
        vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        flat = pa.array(vecs.reshape(-1), type=pa.float32())
        columns = {
            "id": [c.id for c in chunks],
            "chat_id": [c.chat_id for c in chunks],
            "chat_name": [c.chat_name for c in chunks],
            "participants": [list(c.participants) for c in chunks],
            "person_ids": [list(c.person_ids) for c in chunks],
            "start": [float(c.start) for c in chunks],
            "end": [float(c.end) for c in chunks],
            "segment_start": [segment_start(c) for c in chunks],
            "rowids": [list(c.rowids) for c in chunks],
            "guids": [list(c.guids) for c in chunks],
            "text": [c.text for c in chunks],
            "cjk": [unsegmented_text(c.text) for c in chunks],
            "embed_text": [c.embed_text for c in chunks],
            "content_hash": [c.content_hash for c in chunks],
        }
        schema = table_schema(self.dim)
        arrays = [pa.array(columns[f.name], type=f.type) for f in schema if f.name != "vector"]
        arrays.append(pa.FixedSizeListArray.from_arrays(flat, self.dim))
        return pa.Table.from_arrays(arrays, schema=schema)

    def delete_ids(self, ids: Sequence[str]) -> int:
        """Delete chunks by id; returns how many ids were asked for."""
        ids = list(dict.fromkeys(ids))
        with private_files():
            for i in range(0, len(ids), _IN_BATCH):
                part = ids[i : i + _IN_BATCH]
                self.table.delete(f"id IN ({', '.join(_quote(x) for x in part)})")
        if ids:
            self._matrix = None
        return len(ids)

    def optimize(self) -> None:
        """Create missing indexes, fold new rows into them, compact, drop old versions."""
        if self.count() == 0:
            return
        with private_files():
            self._ensure_indices()
            # Old versions still hold deleted messages' text: keep only the latest.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                self.table.optimize(cleanup_older_than=timedelta(0))
        self._matrix = None
        self.matrix()  # writes the vector cache now rather than on the first search

    def rebuild_fts(self) -> None:
        """Rebuild both full-text indexes from scratch."""
        if self.count() == 0:
            return
        with private_files():
            for column, name, config in _index_specs()[:2]:
                self.table.create_index(column, config=config, replace=True, name=name)

    def _ensure_indices(self) -> None:
        present = {ix.name for ix in self.table.list_indices()}
        for column, name, config in _index_specs():
            if name not in present:
                self.table.create_index(column, config=config, replace=True, name=name)

    # ---- reading -------------------------------------------------------------------------
    def count(self) -> int:
        return int(self.table.count_rows())

    def scan(self, columns: list[str], where: str | None = None) -> pa.Table:
        """Selected columns of every row (optionally matching a SQL `where`)."""
        query = self.table.search().select(columns).limit(None)
        if where:
            query = query.where(where)
        return query.to_arrow()

    def chunk_rows(self, chat_ids: Sequence[int]) -> dict[int, list[IndexedChunk]]:
        """The indexed chunks of several chats in one scan, grouped by chat."""
        out: dict[int, list[IndexedChunk]] = {int(c): [] for c in chat_ids}
        wanted = sorted(out)
        cols = ["id", "chat_id", "content_hash", "segment_start", "rowids"]
        for i in range(0, len(wanted), _IN_BATCH):
            part = ", ".join(str(c) for c in wanted[i : i + _IN_BATCH])
            for r in self.scan(cols, f"chat_id IN ({part})").to_pylist():
                row = (r["id"], r["content_hash"], r["segment_start"], tuple(r["rowids"] or ()))
                out[int(r["chat_id"])].append(IndexedChunk(*row))
        return out

    def ids_for_chat(self, chat_id: int) -> dict[str, str]:
        """id → content_hash of one chat's chunks."""
        return {c.id: c.content_hash for c in self.chunk_rows([chat_id])[int(chat_id)]}

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in the order asked (unknown ids are skipped)."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, Chunk] = {}
        for i in range(0, len(wanted), _IN_BATCH):
            part = wanted[i : i + _IN_BATCH]
            where = f"id IN ({', '.join(_quote(x) for x in part)})"
            for row in self.scan(_CHUNK_COLS, where).to_pylist():
                found[row["id"]] = _row_to_chunk(row)
        return [found[i] for i in wanted if i in found]

    def matrix(self) -> VectorMatrix:
        """The in-memory search state of the current table version (loaded once per version)."""
        version = self.version
        if self._matrix is None or self._matrix.version != version:
            meta = self.scan(META_COLUMNS)
            cached = load_vectors(self.dir, version, meta.num_rows, self.dim)
            if cached is None:
                column = self.scan(["vector"])["vector"].combine_chunks()
                flat = column.flatten().to_numpy(zero_copy_only=False)
                vectors = np.asarray(flat, dtype=np.float32).reshape(meta.num_rows, self.dim)
                cached = save_vectors(self.dir, version, vectors)
            self._matrix = VectorMatrix.build(meta, *cached, version=version)
        return self._matrix

    def vector_search(
        self, vec: NDArray[np.float32], n: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, cosine) by the query vector, restricted by `where` before ranking."""
        matrix = self.matrix()
        return matrix.search(vec, n, matrix.mask(where))

    def fts_search(
        self, query: str, n: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, BM25) from LanceDB's word FTS on `text`, prefiltered by `where`."""
        return self._fts(query, "text", n, where)

    def ngram_search(
        self, query: str, n: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, BM25) over CJK/emoji n-grams; empty when the query has none."""
        residue = unsegmented_text(query)
        return self._fts(residue, "cjk", n, where) if residue.strip() else []

    def _fts(
        self, query: str, column: str, n: int, where: Filter | None
    ) -> list[tuple[str, float]]:
        if not query.strip() or n <= 0 or self.count() == 0:
            return []
        builder = (
            self.table.search(query, query_type="fts", fts_columns=column)
            .select(["id", "_score"])
            .limit(n)
        )
        sql = where.sql() if where else None
        if sql:
            builder = builder.where(sql, prefilter=True)
        try:
            rows = builder.to_arrow()
        except (ValueError, RuntimeError) as exc:
            # a broken FTS index must not take search down: the other legs still answer
            log.warning("full-text search on %s failed: %s", column, type(exc).__name__)
            return []
        return list(zip(rows["id"].to_pylist(), rows["_score"].to_pylist(), strict=True))


def _row_to_chunk(row: dict[str, Any]) -> Chunk:
    tuples = {k: tuple(row[k] or ()) for k in ("participants", "person_ids", "rowids", "guids")}
    return Chunk(
        id=row["id"], chat_id=int(row["chat_id"]), chat_name=row["chat_name"] or "",
        start=float(row["start"]), end=float(row["end"]), text=row["text"] or "",
        embed_text=row["embed_text"] or "", content_hash=row["content_hash"] or "",
        extra={SEGMENT_KEY: repr(float(row["segment_start"]))}, **tuples,
    )  # fmt: skip


def _mismatch_message(found: dict[str, Any], expected: dict[str, Any]) -> str:
    if not found:
        return "the search index has no manifest (unknown model)"
    diffs = [
        f"{key} {found.get(key)!r} (index) vs {expected[key]!r} (now)"
        for key in expected
        if found.get(key) != expected[key]
    ]
    return "the search index was built with different settings: " + "; ".join(diffs)


def _remove_index(index_dir: Path) -> None:
    """Delete an index directory, but only one that looks like ours."""
    entries = {p.name for p in index_dir.iterdir()}
    if entries and not ({MANIFEST, f"{TABLE}.lance"} & entries):
        raise IndexMismatch(f"{index_dir} does not look like a Casper index; not deleting it")
    shutil.rmtree(index_dir)
