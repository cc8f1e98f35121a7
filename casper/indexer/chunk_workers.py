"""A first index's chunking, spread over worker processes: a million messages are ~10 CPU-seconds
of chunking in Python, which one process spends alone while the other cores wait.

Only when every chat is chunked from scratch (a new or cleared index) and there are at least
`MIN_MESSAGES` to chunk: the chats, in id order, are cut into groups of about equal message
counts; each worker process (spawned: it shares nothing with this one) reads its group's rows
from the store through a read-only connection, chunks them (`index_pieces`, the same function a
single process uses) and hands back the rows as Arrow; this process appends them to the index
in group order, so the table holds the same rows in the same order as a single process writes
them. Started while this process reads the chats and names (their imports overlap it).

Imports: stdlib, casper.indexer.chunking, casper.index.chunk_table, casper.records,
casper.store.db.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from casper.indexer.chunking import ChunkOptions, index_pieces
from casper.records import ChatInfo

if TYPE_CHECKING:
    import pyarrow as pa

MIN_MESSAGES = 100_000  # below this, starting processes costs more than chunking in one
GROUPS_PER_WORKER = 4  # smaller groups: the workers finish together, and memory stays low


def workers() -> int:
    return min(os.cpu_count() or 1, 4)


def wanted(messages: int, *, fresh: bool, options: ChunkOptions) -> bool:
    """Worth chunking with workers: a fresh index, enough messages, more than one core, and a
    zone another process can be sent (a ZoneInfo made from /etc/localtime's bytes cannot)."""
    if not fresh or messages < MIN_MESSAGES or workers() < 2:
        return False
    try:
        pickle.dumps(options)
    except (pickle.PicklingError, TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class Group:
    """One worker task: chunk these chats (in this order) from the store at `store_path`."""

    store_path: str
    chats: tuple[ChatInfo, ...]
    names: dict[str, str]
    options: ChunkOptions
    dim: int


def groups(chats: Sequence[ChatInfo], sizes: Mapping[int, int], parts: int) -> list[list[ChatInfo]]:
    """`chats` (in their order) cut into at most `parts` runs of about equal message counts."""
    total = sum(sizes.get(c.id, 0) for c in chats)
    target = max(total / max(parts, 1), 1)
    out: list[list[ChatInfo]] = [[]]
    filled = 0
    for chat in chats:
        if out[-1] and filled >= target * len(out) and len(out) < parts:
            out.append([])
        out[-1].append(chat)
        filled += sizes.get(chat.id, 0)
    return [g for g in out if g]


def chunk_group(group: Group) -> tuple[pa.Table, int]:
    """Worker: the group's chunk rows as one Arrow table, and the messages chunked."""
    from casper.index.chunk_table import pieces_to_arrow
    from casper.store.db import Store

    conn = sqlite3.connect(f"{Path(group.store_path).absolute().as_uri()}?mode=ro", uri=True)
    try:
        store = Store(conn, Path(group.store_path))  # read-only: only its queries are used
        pieces = []
        messages = 0
        for chat in group.chats:
            rows = store.searchable_rows(chat.id)
            messages += len(rows)
            pieces += index_pieces(rows, chat, group.names, group.options)
    finally:
        conn.close()
    return pieces_to_arrow(pieces, group.dim), messages


class Pool:
    """The worker processes of one chunking stage (a context: started on entry)."""

    def __init__(self, n: int) -> None:
        self.executor = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))
        # a worker's imports take a second: start them now, while the caller reads the chats
        for _ in range(n):
            self.executor.submit(_warm)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def chunk(
        self,
        store_path: Path,
        parts: Sequence[Sequence[ChatInfo]],
        names: Mapping[str, str],
        options: ChunkOptions,
        dim: int,
    ) -> Iterator[tuple[pa.Table, int]]:
        """Each group's rows and message count, in group order, as soon as it is done."""
        futures: list[Future[tuple[pa.Table, int]]] = [
            self.executor.submit(
                chunk_group, Group(str(store_path), tuple(part), dict(names), options, dim)
            )  # fmt: skip
            for part in parts
        ]
        for future in futures:
            yield future.result()


def _warm() -> None:
    """Import what a group needs before the first group arrives."""
    import casper.index.chunk_table  # noqa: F401
    import casper.store.db  # noqa: F401


Progress = Callable[[int], None]
