"""Chunk rows written to the index in a background thread, while the caller keeps chunking.

LanceDB encodes and writes outside the GIL, so on two cores the write of one batch overlaps
the chunking of the next (a first index spent a third of its lexical step waiting on writes).
Operations run in the order given; consecutive appends become one streamed LanceDB write (one
commit and a few large fragments instead of one small fragment per batch).

Imports: pyarrow, casper.index.chunk_index (the ChunkIndex it writes to).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from casper.index.chunk_index import ChunkIndex

_STOP, _ABORT = "stop", "abort"
DEPTH = 2  # batches waiting for the writer: bounds memory, keeps it busy


class WriteAborted(Exception):
    """Raised inside a streamed append when the caller gave up (its own error is re-raised)."""


class ChunkWriter:
    """`append`, `upsert` and `delete` queue work; `close` waits for it and re-raises a
    failure; `abort` (on the caller's error) stops without committing a streamed append."""

    def __init__(self, index: ChunkIndex) -> None:
        self.index = index
        self.waited_s = 0.0  # time the caller spent blocked on a full queue or in close()
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=DEPTH)
        self._error: BaseException | None = None
        index._for_writing()  # check out the head here, not from the writer thread
        self._thread = threading.Thread(target=self._run, name="casper-chunk-writer", daemon=True)
        self._thread.start()

    def append(self, rows: pa.Table) -> None:
        if rows.num_rows:
            self._put(("append", rows))

    def upsert(self, rows: pa.Table) -> None:
        if rows.num_rows:
            self._put(("upsert", rows))

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._put(("delete", list(ids)))

    def settle(self) -> None:
        """Wait until everything queued so far is committed (before reading the table again)."""
        done = threading.Event()
        self._put(("sync", done))
        started = time.perf_counter()
        while not done.wait(0.2):
            if self._error is not None:
                raise self._error
            if not self._thread.is_alive():
                raise RuntimeError("the index writer stopped")
        self.waited_s += time.perf_counter() - started

    def close(self) -> None:
        """Wait for every queued write; raise the writer's error, if any."""
        self._put((_STOP, None))
        started = time.perf_counter()
        self._thread.join()
        self.waited_s += time.perf_counter() - started
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        """Stop after the operation in flight; a streamed append in flight is not committed."""
        if self._thread.is_alive():
            try:
                self._queue.put((_ABORT, None), timeout=60)
            except queue.Full:  # the writer is stuck: it is a daemon thread, leave it
                return
            self._thread.join()

    def _put(self, op: tuple[str, Any]) -> None:
        started = time.perf_counter()
        while True:
            if self._error is not None:
                raise self._error
            try:
                self._queue.put(op, timeout=0.2)
                break
            except queue.Full:
                if not self._thread.is_alive():
                    raise RuntimeError("the index writer stopped") from self._error
        self.waited_s += time.perf_counter() - started

    def _run(self) -> None:
        try:
            op = self._queue.get()
            while op[0] not in (_STOP, _ABORT):
                kind, payload = op
                if kind == "append":
                    op = self._append_run(payload)
                    continue
                if kind == "upsert":
                    self.index.upsert_rows(payload)
                elif kind == "delete":
                    self.index.delete_ids(payload)
                else:
                    payload.set()  # "sync": everything before it is committed
                op = self._queue.get()
        except WriteAborted:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by close()/_put()
            self._error = exc
            while True:  # unblock a caller waiting to put
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break

    def _append_run(self, first: pa.Table) -> tuple[str, Any]:
        """Stream this append and every append queued right after it as one write; returns
        the operation that ended the run."""
        after: list[tuple[str, Any]] = []

        def batches() -> Iterator[pa.RecordBatch]:
            yield from first.to_batches()
            while True:
                op = self._queue.get()
                if op[0] == _ABORT:
                    raise WriteAborted
                if op[0] != "append":
                    after.append(op)
                    return
                yield from op[1].to_batches()

        reader = pa.RecordBatchReader.from_batches(first.schema, batches())
        try:
            self.index.append_rows(reader)
        except Exception as exc:
            if isinstance(exc, WriteAborted) or "WriteAborted" in str(exc):
                raise WriteAborted from exc  # LanceDB re-raises the reader's error its own way
            raise
        return after[0] if after else (_STOP, None)
