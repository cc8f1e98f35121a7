"""Per-chunk bookkeeping a searching process keeps in memory: ids, filter columns, display meta.

Imports: numpy, pyarrow (pyarrow.compute inside the filters: its kernels are slow to load),
casper.index.chunk_table (types only). Everything is held in numpy and Arrow columns, not Python
objects: at 622k chunks a list of id strings, an id → row dict, the chunks' content hashes as a
list and an Arrow copy of every meta column took ~330 MB (bench/vecmem.py); these columns take
~45 MB.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

import numpy as np
from numpy.typing import NDArray

from casper.records import MESSAGE_UNIT

if TYPE_CHECKING:
    import pyarrow as pa

    from casper.index.chunk_table import Filter

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
_STEP = 65_536  # ids converted per block
_SEP = "\x1f"  # joins a chunk's participants into one dictionary-encodable string


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


class ChunkIds(Sequence[str]):
    """Chunk ids in table order as one sorted fixed-width byte array (about 30 B a chunk,
    against ~150 B for a list of str plus an id → row dict): row → id by index, id → row by
    binary search."""

    __slots__ = ("_rank", "_row", "_sorted")

    def __init__(self, ids: pa.Array) -> None:
        import pyarrow.compute as pc

        order = pc.sort_indices(ids).to_numpy()
        ranked = ids.take(order).cast("binary")
        width = max(1, int(pc.max(pc.binary_length(ranked)).as_py() or 1)) if len(ids) else 1
        self._sorted: NDArray[np.bytes_] = np.empty(len(ids), dtype=f"S{width}")
        for lo in range(0, len(ids), _STEP):  # a block at a time: few Python bytes objects live
            part = ranked.slice(lo, _STEP).to_numpy(zero_copy_only=False)
            self._sorted[lo : lo + len(part)] = part
        self._row = order.astype(np.int32)  # table row of each sorted id
        self._rank = np.empty(len(order), dtype=np.int32)  # sorted position of each table row
        self._rank[self._row] = np.arange(len(order), dtype=np.int32)

    def __len__(self) -> int:
        return len(self._row)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return self.at(np.arange(len(self))[i])
        return self._sorted[self._rank[i]].decode()

    def __iter__(self) -> Iterator[str]:
        return iter(self.at(np.arange(len(self))))

    @property
    def nbytes(self) -> int:
        return self._sorted.nbytes + self._row.nbytes + self._rank.nbytes

    def at(self, rows: NDArray[np.integer]) -> list[str]:
        """Ids of the given table rows."""
        return [b.decode() for b in self._sorted[self._rank[np.asarray(rows, dtype=np.int64)]]]

    def rows_of(self, ids: Sequence[str]) -> NDArray[np.int64]:
        """Table row of each id, -1 for an id not in the table."""
        if not len(ids) or not len(self):
            return np.full(len(ids), -1, dtype=np.int64)
        wanted = np.array([i.encode() for i in ids], dtype=np.bytes_)
        at = np.minimum(np.searchsorted(self._sorted, wanted), len(self) - 1)
        found = self._sorted[at] == wanted
        return np.where(found, self._row[at], -1).astype(np.int64)


@dataclass(slots=True)
class DisplayColumns:
    """chat name + participants (dictionary-encoded: a chat repeats them on every chunk) and
    message rowids of every row; times and chat ids come from the filter columns."""

    labels: list[tuple[str, tuple[str, ...]]]
    label_of: NDArray[np.int32]
    rowids: pa.ListArray

    @classmethod
    def from_arrow(cls, table: pa.Table) -> DisplayColumns:
        import pyarrow.compute as pc

        names = pc.fill_null(table["chat_name"].combine_chunks(), "")
        people = pc.fill_null(pc.binary_join(table["participants"].combine_chunks(), _SEP), "")
        joined = pc.binary_join_element_wise(names, people, _SEP + _SEP)
        encoded = pc.dictionary_encode(joined)
        labels = []
        for text in encoded.dictionary.to_pylist():
            name, _, who = text.partition(_SEP + _SEP)
            labels.append((name, tuple(who.split(_SEP)) if who else ()))
        return cls(
            labels=labels,
            label_of=np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int32),
            rowids=table["rowids"].combine_chunks(),
        )

    @property
    def nbytes(self) -> int:
        return self.label_of.nbytes + self.rowids.nbytes

    def rowids_at(self, rows: NDArray[np.int64]) -> list[tuple[int, ...]]:
        return [tuple(r or ()) for r in self.rowids.take(rows).to_pylist()]


@dataclass(slots=True)
class FilterColumns:
    """chat_id, start, end, person → rows and which rows hold a message alone: enough to
    evaluate a Filter in memory."""

    chat_ids: NDArray[np.int64]
    starts: NDArray[np.float64]
    ends: NDArray[np.float64]
    person_rows: dict[str, NDArray[np.int32]]
    # rows of a message alone (casper.records.is_message_row); None: none in the table
    alone: NDArray[np.bool_] | None = None

    @classmethod
    def from_arrow(cls, table: pa.Table) -> FilterColumns:
        """From the chat_id, start, end and person_ids columns of a scan."""
        import pyarrow.compute as pc

        people = table["person_ids"].combine_chunks()
        parents = np.asarray(pc.list_parent_indices(people).to_numpy(), dtype=np.int32)
        encoded = pc.dictionary_encode(people.flatten())
        codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        labels = encoded.dictionary.to_pylist()
        order = np.argsort(codes, kind="stable")
        splits = np.cumsum(np.bincount(codes, minlength=len(labels)))[:-1]
        groups = np.split(parents[order], splits) if len(labels) else []
        alone = None
        if "id" in table.column_names:
            ends_with = pc.ends_with(table["id"].combine_chunks(), f":{MESSAGE_UNIT}")
            found = np.asarray(ends_with.to_numpy(zero_copy_only=False), dtype=bool)
            alone = found if found.any() else None
        return cls(
            chat_ids=np.asarray(table["chat_id"].to_numpy(), dtype=np.int64),
            starts=np.asarray(table["start"].to_numpy(), dtype=np.float64),
            ends=np.asarray(table["end"].to_numpy(), dtype=np.float64),
            person_rows={str(k): np.unique(g) for k, g in zip(labels, groups, strict=True)},
            alone=alone,
        )

    def __len__(self) -> int:
        return len(self.chat_ids)

    @property
    def nbytes(self) -> int:
        columns = self.chat_ids.nbytes + self.starts.nbytes + self.ends.nbytes
        alone = self.alone.nbytes if self.alone is not None else 0
        return columns + alone + sum(rows.nbytes for rows in self.person_rows.values())

    def mask(self, where: Filter | None) -> NDArray[np.bool_] | None:
        """Rows passing the filter (None = all), same semantics as `Filter.sql`; the rows of
        its unit only (windows when `where` is None)."""
        unit = "window" if where is None else where.unit
        if unit == "window" and self.alone is None and (where is None or where.empty):
            return None
        keep = self._unit_rows(unit)
        if where is None or where.empty:
            return keep
        if where.chat_id is not None:
            keep &= self.chat_ids == int(where.chat_id)
        if where.person_id is not None:
            person = np.zeros(len(self), dtype=bool)
            person[self.person_rows.get(where.person_id, np.empty(0, dtype=np.int32))] = True
            keep &= person
        if where.since is not None:
            keep &= self.ends >= float(where.since)
        if where.until is not None:
            keep &= self.starts < float(where.until)
        return keep

    def _unit_rows(self, unit: str) -> NDArray[np.bool_]:
        """A fresh mask of the unit's rows (the caller narrows it in place)."""
        if self.alone is None:
            return np.full(len(self), unit == "window", dtype=bool)
        return ~self.alone if unit == "window" else self.alone.copy()
