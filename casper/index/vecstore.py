"""Chunk vectors kept beside the LanceDB table: float16 rows in SQLite, keyed by content hash.

Imports: sqlite3, numpy. Why a side file rather than the table's vector column: the lexical
index is written (and searchable) before any vector exists, and every embedded batch is
committed on its own, so a Ctrl-C or `kill -9` keeps the work done and the next run embeds only
what is missing. Rows are keyed by the chunk's content hash (the hash covers the embedded text),
so an unchanged chunk is never embedded twice, whatever its id. Readers learn of new rows from
the index's published generation (`files.Generation`), not from this file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from casper.index.files import VECTOR_FILE

FILE = VECTOR_FILE
_PART = 500  # keys per `IN (...)` lookup (SQLite's variable limit is far above)
_GATHER = 16_384  # rows per block written to the search cache


class VectorStore:
    """Durable key → float16 vector rows; every `put` is one committed transaction."""

    def __init__(self, conn: sqlite3.Connection, dim: int) -> None:
        self.conn = conn
        self.dim = dim

    @classmethod
    def open(cls, index_dir: Path, dim: int) -> VectorStore:
        """Open (creating) the side file of an index directory."""
        path = Path(index_dir) / FILE
        conn = sqlite3.connect(str(path), timeout=30.0, check_same_thread=False)
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        # WAL + NORMAL: a committed batch survives the process being killed (durable within
        # the commit), and readers in other processes never block the writer.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(
            "CREATE TABLE IF NOT EXISTS vec(key TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;"
            "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
        )
        conn.commit()
        return cls(conn, dim)

    def close(self) -> None:
        self.conn.close()

    # ---- writing -------------------------------------------------------------------------
    def put(self, keys: Sequence[str], vectors: NDArray[np.floating]) -> None:
        """Store L2-normalised float16 rows for `keys` and commit (one batch = one commit)."""
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(keys), self.dim)
        vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        half = vecs.astype(np.float16)
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO vec(key, v) VALUES (?, ?)",
                [(k, half[i].tobytes()) for i, k in enumerate(keys)],
            )

    def prune(self, keep: Iterable[str], *, erase: bool = False) -> int:
        """Delete rows whose key is not in `keep` (chunks gone from the table); returns how many.
        `erase`: no byte of them left in the file or its log either (people kept out): the
        freed space zeroed (secure_delete), the file rewritten (VACUUM), the log truncated."""
        if erase:
            self.conn.execute("PRAGMA secure_delete = ON")
        try:
            gone = self._prune(keep)
        finally:
            if erase:
                self.conn.execute("PRAGMA secure_delete = OFF")
        if erase:
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return gone

    def _prune(self, keep: Iterable[str]) -> int:
        with self.conn:
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS keep(key TEXT PRIMARY KEY)")
            self.conn.execute("DELETE FROM temp.keep")
            self.conn.executemany(
                "INSERT OR IGNORE INTO temp.keep(key) VALUES (?)", ((k,) for k in keep)
            )
            gone = self.conn.execute(
                "DELETE FROM vec WHERE key NOT IN (SELECT key FROM temp.keep)"
            ).rowcount
            self.conn.execute("DELETE FROM temp.keep")
        return int(gone)

    def set_status(self, version: int, done: int, total: int) -> None:
        """Remember how complete the vectors are for a table version (for doctor and search)."""
        status = json.dumps({"version": int(version), "done": int(done), "total": int(total)})
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO meta(k, v) VALUES ('status', ?)", (status,))

    # ---- reading -------------------------------------------------------------------------
    def status(self) -> dict[str, int] | None:
        row = self.conn.execute("SELECT v FROM meta WHERE k = 'status'").fetchone()
        return json.loads(row[0]) if row else None

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM vec").fetchone()[0])

    def present(self, keys: Sequence[str]) -> set[str]:
        """The subset of `keys` that has a vector."""
        found: set[str] = set()
        for i in range(0, len(keys), _PART):
            part = list(keys[i : i + _PART])
            q = f"SELECT key FROM vec WHERE key IN ({','.join('?' * len(part))})"
            found.update(k for (k,) in self.conn.execute(q, part))
        return found

    def gather(
        self, keys: Sequence[str]
    ) -> tuple[int, Iterator[tuple[NDArray[np.int64], NDArray[np.float16]]]]:
        """How many of `keys` have a vector, and (positions into `keys`, float16 rows) blocks
        of them in key order. Consume the blocks before the next call."""
        with self.conn:
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS want(pos INTEGER PRIMARY KEY, key)")
            self.conn.execute("DELETE FROM temp.want")
            self.conn.executemany("INSERT INTO temp.want VALUES (?, ?)", enumerate(keys))
        join = "FROM temp.want w JOIN vec v ON v.key = w.key"
        count = int(self.conn.execute(f"SELECT count(*) {join}").fetchone()[0])

        def blocks() -> Iterator[tuple[NDArray[np.int64], NDArray[np.float16]]]:
            try:
                cur = self.conn.execute(f"SELECT w.pos, v.v {join} ORDER BY w.pos")
                while rows := cur.fetchmany(_GATHER):
                    pos = np.fromiter((p for p, _ in rows), dtype=np.int64, count=len(rows))
                    block = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float16)
                    yield pos, block.reshape(len(rows), self.dim)
            finally:
                with self.conn:
                    self.conn.execute("DELETE FROM temp.want")

        return count, blocks()
