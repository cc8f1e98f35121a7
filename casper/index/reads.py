"""The read side of the chunk index (a mixin of `ChunkIndex`): scans, chunks by id or chat,
display meta for hits, and the search legs (vector, word FTS, CJK/emoji n-grams, and the
words as typed with date terms).

Every read goes through `ChunkIndex._read`, which reopens at the published generation and
retries when a writer cleaned up the version a read held.

Imports: pyarrow, numpy, casper.records, casper.index (chunk_text, chunk_table, vectors).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from casper.index.chunk_table import (
    CHUNK_COLS,
    FTS_COLUMNS,
    Filter,
    IndexedChunk,
    quote,
    row_to_chunk,
)
from casper.index.chunk_text import unsegmented_text
from casper.index.files import Generation
from casper.index.health import table_damage
from casper.index.vectors import META_COLUMNS, ChunkMeta, VectorMatrix
from casper.records import Chunk

log = logging.getLogger(__name__)

T = TypeVar("T")
IN_BATCH = 1000  # ids per `id IN (...)` predicate
_MESSAGE_COLS = ["message_text", "message_dates"]  # a message alone's words and dates
_META_CACHE_MAX = 50_000  # chunk_meta rows kept between searches without a matrix


def id_predicates(ids: Sequence[str]) -> list[str]:
    """`id IN (...)` predicates covering `ids`, IN_BATCH ids each (LanceDB parses each one)."""
    return [
        f"id IN ({', '.join(quote(x) for x in ids[i : i + IN_BATCH])})"
        for i in range(0, len(ids), IN_BATCH)
    ]


class ChunkReads:
    """Expects from `ChunkIndex`: table, version, generation, _matrix, _read(), matrix()."""

    dir: Path
    table: Any
    generation: Generation
    _matrix: VectorMatrix | None
    # chunk_meta read without a matrix, per table (version, run); ChunkIndex.__init__ sets it
    _meta_cache: tuple[tuple[int, tuple[int | None, int]] | None, dict[str, ChunkMeta]]

    if TYPE_CHECKING:  # declared for the type checker only: defined by the other parts

        @property
        def version(self) -> int: ...  # ChunkIndex

        def _read(self, fn: Callable[[], T]) -> T: ...  # ChunkIndex

        def matrix(self) -> VectorMatrix: ...  # VectorSide

    def count(self) -> int:
        return self._read(lambda: int(self.table.count_rows()))

    def scan(self, columns: list[str], where: str | None = None) -> pa.Table:
        """Selected columns of every row (optionally matching a SQL `where`)."""

        def run() -> pa.Table:
            query = self.table.search().select(columns).limit(None)
            return (query.where(where) if where else query).to_arrow()

        return self._read(run)

    def chunk_rows(self, chat_ids: Sequence[int]) -> dict[int, list[IndexedChunk]]:
        """The indexed chunks of several chats in one scan, grouped by chat."""
        out: dict[int, list[IndexedChunk]] = {int(c): [] for c in chat_ids}
        wanted = sorted(out)
        cols = ["id", "chat_id", "content_hash", "segment_start", "rowids"]
        for i in range(0, len(wanted), IN_BATCH):
            part = ", ".join(str(c) for c in wanted[i : i + IN_BATCH])
            for r in self.scan(cols, f"chat_id IN ({part})").to_pylist():
                row = (r["id"], r["content_hash"], r["segment_start"], tuple(r["rowids"] or ()))
                out[int(r["chat_id"])].append(IndexedChunk(*row))
        return out

    def chunk_meta(self, ids: Sequence[str]) -> dict[str, ChunkMeta]:
        """Display fields and rowids of the given chunks (unknown ids are skipped): from the
        search matrix when one is built for this version, else read for just these ids. A
        cold lexical search then never loads the meta of every chunk (seconds at 1M)."""
        current = self._matrix
        if current is not None and current.version == self.version:
            return current.meta(list(ids))
        table = (self.version, self.generation.table)
        if self._meta_cache[0] != table:
            self._meta_cache = (table, {})
        cache = self._meta_cache[1]
        wanted = [cid for cid in dict.fromkeys(ids) if cid not in cache]
        for where in id_predicates(wanted):
            for row in self.scan(META_COLUMNS, where).to_pylist():
                cache[row["id"]] = ChunkMeta(
                    id=row["id"], chat_id=int(row["chat_id"]), chat_name=row["chat_name"] or "",
                    participants=tuple(row["participants"] or ()), start=float(row["start"]),
                    end=float(row["end"]), rowids=tuple(row["rowids"] or ()),
                )  # fmt: skip
        if len(cache) > _META_CACHE_MAX:
            self._meta_cache = (self._meta_cache[0], {})
        return {cid: cache[cid] for cid in ids if cid in cache}

    def ids_for_chat(self, chat_id: int) -> dict[str, str]:
        """id → content_hash of one chat's chunks."""
        return {c.id: c.content_hash for c in self.chunk_rows([chat_id])[int(chat_id)]}

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in the order asked (unknown ids are skipped)."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, Chunk] = {}
        for where in id_predicates(wanted):
            for row in self.scan([*CHUNK_COLS, *_MESSAGE_COLS], where).to_pylist():
                found[row["id"]] = row_to_chunk(row)
        return [found[i] for i in wanted if i in found]

    # ---- the search legs -----------------------------------------------------------------
    def vector_search(
        self, vec: NDArray[np.float32], n: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, cosine) by the query vector, restricted by `where` before ranking."""
        matrix = self.matrix()
        return matrix.search(vec, n, matrix.mask(where))

    def fts_search(
        self, query: str, n: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, BM25) from LanceDB's word FTS on the unit's words (`text` of the
        windows, `message_text` of the messages alone), prefiltered by `where`."""
        return self._fts(query, _column(where, "text"), n, where)

    def ngram_search(
        self, query: str, n: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, BM25) over CJK/emoji n-grams; empty when the query has none."""
        residue = unsegmented_text(query)
        return self._fts(residue, _column(where, "cjk"), n, where) if residue.strip() else []

    def dates_search(
        self, terms: Sequence[str], n: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Top-n (id, BM25) of the chunks whose messages mention these dates (the `dates`
        column's terms, casper.dates.mentions)."""
        return self._fts(" ".join(terms), _column(where, "dates"), n, where) if terms else []

    def _fts(
        self, query: str, column: str, n: int, where: Filter | None
    ) -> list[tuple[str, float]]:
        if not query.strip() or n <= 0 or self.count() == 0:
            return []
        sql = where.sql() if where else None

        def run() -> pa.Table:
            builder = (
                self.table.search(query, query_type="fts", fts_columns=column)
                .select(["id", "_score"])
                .limit(n)
            )
            return (builder.where(sql, prefilter=True) if sql else builder).to_arrow()

        try:
            rows = self._read(run)
        except (ValueError, RuntimeError, OSError) as exc:
            # a damaged index is named (the other legs alone would answer less, quietly);
            # any other failure of one query costs this leg, not the search
            damaged = table_damage(self.dir)
            if damaged:
                raise damaged[0].error() from exc
            log.warning("full-text search on %s failed: %s", column, type(exc).__name__)
            return []
        return list(zip(rows["id"].to_pylist(), rows["_score"].to_pylist(), strict=True))


def _column(where: Filter | None, column: str) -> str:
    """The full-text column of `where`'s unit that holds what `column` holds for windows."""
    return FTS_COLUMNS["window" if where is None else where.unit][column]
