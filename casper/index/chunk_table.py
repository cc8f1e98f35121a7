"""The `chunks` table's layout and the small pieces around it: Arrow schema, index specs, the
filter every retrieval leg applies, row <-> Chunk, and atomic JSON files (manifest, generation).

Imports: pyarrow, casper.records, casper.index (chunk_text, lance_import); lancedb inside
`index_specs` (only a build needs it, and its import is the slowest). Split from
`casper.index.chunk_index` so that module keeps to the index's behaviour (opening,
generations, writing, reading).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pyarrow as pa

from casper.index.chunk_text import unsegmented_text
from casper.index.lance_import import defer_namespace_client
from casper.records import SEGMENT_KEY, Chunk, Piece, is_message_row

CHUNK_COLS = [
    "id", "chat_id", "chat_name", "participants", "person_ids", "start", "end",
    "segment_start", "rowids", "guids", "text", "embed_text", "content_hash", "dates",
]  # fmt: skip


assert list(Piece._fields) == CHUNK_COLS, "pieces are written column by column, in this order"


def pieces_to_arrow(pieces: Sequence[Piece], dim: int) -> pa.Table:
    """Rows for the `chunks` table (the `cjk` residue derived from `text`). A message alone
    (`is_message_row`) keeps its words, residue and date terms in the `message_*` columns
    and leaves the windows' empty, so each unit's full-text indexes hold its own documents."""
    schema = table_schema(dim)
    # one transpose in C instead of a Python loop per column
    transposed = zip(*pieces, strict=True) if pieces else ([] for _ in CHUNK_COLS)
    columns: dict[str, Sequence[Any]] = dict(zip(CHUNK_COLS, transposed, strict=True))
    columns["cjk"] = [unsegmented_text(text) for text in columns["text"]]
    alone = [is_message_row(cid) for cid in columns["id"]]
    for column in ("text", "cjk", "dates"):
        values = columns[column]
        columns[f"message_{column}"] = [
            v if one else "" for v, one in zip(values, alone, strict=True)
        ]
        columns[column] = [("" if one else v) for v, one in zip(values, alone, strict=True)]
    arrays = [pa.array(columns[f.name], type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


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
            pa.field("dates", pa.string()),  # date terms (casper.dates.mentions), own FTS index
            # a message alone (casper.records.is_message_row): its words, CJK/emoji residue and
            # date terms, apart from the windows' so neither unit's BM25 counts the other's
            pa.field("message_text", pa.string()),
            pa.field("message_cjk", pa.string()),
            pa.field("message_dates", pa.string()),
        ]
    )


def quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# which rows a search leg ranks: the windows of messages, or each message alone
Unit = Literal["window", "message"]
# the full-text column a leg searches, per unit
FTS_COLUMNS: dict[Unit, dict[str, str]] = {
    "window": {"text": "text", "cjk": "cjk", "dates": "dates"},
    "message": {"text": "message_text", "cjk": "message_cjk", "dates": "message_dates"},
}


@dataclass(frozen=True, slots=True)
class Filter:
    """Restrictions applied inside every retrieval leg; times are UTC seconds, until exclusive.
    `unit`: which rows the leg ranks (a restriction too: the other unit's rows never come)."""

    person_id: str | None = None
    chat_id: int | None = None
    since: float | None = None
    until: float | None = None
    unit: Unit = "window"

    @property
    def empty(self) -> bool:
        """No restriction but the unit."""
        return all(v is None for v in (self.person_id, self.chat_id, self.since, self.until))

    def sql(self) -> str | None:
        """The same restriction as a LanceDB `where` clause (overlapping chunks count)."""
        parts: list[str] = []
        if self.chat_id is not None:
            parts.append(f"chat_id = {int(self.chat_id)}")
        if self.person_id is not None:
            parts.append(f"array_has_any(person_ids, [{quote(self.person_id)}])")
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


def index_specs() -> list[tuple[str, str, Any]]:
    defer_namespace_client()
    from lancedb.index import FTS, BTree, LabelList

    ngram = FTS(
        base_tokenizer="ngram", ngram_min_length=1, ngram_max_length=3, lower_case=False,
        stem=False, remove_stop_words=False, ascii_folding=False,
    )  # fmt: skip
    # terms are written as they are searched: split on spaces, nothing stemmed or dropped
    terms = FTS(
        base_tokenizer="whitespace", lower_case=False, stem=False, remove_stop_words=False,
        ascii_folding=False,
    )  # fmt: skip
    return [
        ("text", "text_idx", FTS()),
        ("cjk", "cjk_idx", ngram),
        ("dates", "dates_idx", terms),
        ("message_text", "message_text_idx", FTS()),
        ("message_cjk", "message_cjk_idx", ngram),
        ("message_dates", "message_dates_idx", terms),
        ("id", "id_idx", BTree()),
        ("chat_id", "chat_id_idx", BTree()),
        ("start", "start_idx", BTree()),
        ("end", "end_idx", BTree()),
        ("person_ids", "person_ids_idx", LabelList()),
    ]


def row_to_chunk(row: dict[str, Any]) -> Chunk:
    tuples = {k: tuple(row[k] or ()) for k in ("participants", "person_ids", "rowids", "guids")}
    return Chunk(
        id=row["id"], chat_id=int(row["chat_id"]), chat_name=row["chat_name"] or "",
        start=float(row["start"]), end=float(row["end"]),
        text=row["text"] or row.get("message_text") or "",
        embed_text=row["embed_text"] or "", content_hash=row["content_hash"] or "",
        dates=row.get("dates") or row.get("message_dates") or "",
        extra={SEGMENT_KEY: repr(float(row["segment_start"]))}, **tuples,
    )  # fmt: skip


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic replace: a reader sees the old file or the new one, never half of either."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def file_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
