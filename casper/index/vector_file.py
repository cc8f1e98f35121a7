"""Float16 rows of a vector cache file, read with `pread` into a private buffer per call.

Imports: numpy, os. Why not a memory mapping: a search rescoring a few thousand random rows
touches a page per row, and the kernel maps whole neighbourhoods around each fault (fault-around,
large folios), so a mapping of the 732 MB float16 file of 1M chunks grew to 500-800 MB of this
process's RSS within a few queries, and `madvise(MADV_DONTNEED)` afterwards still let a single
query peak above 500 MB. A `pread` copies only the rows asked for into a buffer the caller owns;
the file's pages stay in the kernel's page cache (shared, reclaimable), never in the process.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

# rows this close together are read with one call: up to 6 KB of unneeded rows cost less to
# copy than another system call
MERGE_GAP = 8
_PREADV = hasattr(os, "preadv")


class VectorFile:
    """(rows, dim) float16 matrix stored in an `.npy` file, read row by row on demand."""

    def __init__(self, path: Path, dim: int) -> None:
        self.path = Path(path)
        # held open for the object's life: a writer may replace and delete the file while a
        # reader still searches this version (a mapping kept it alive the same way)
        self._fd = os.open(self.path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        with os.fdopen(self._fd, "rb", closefd=False) as fh:
            major, _minor = np.lib.format.read_magic(fh)
            fmt = np.lib.format
            read = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
            shape, fortran, dtype = read(fh)
            self._offset = fh.tell()
        if fortran or np.dtype(dtype) != np.float16 or len(shape) != 2 or shape[1] != dim:
            raise ValueError(f"{self.path.name} is not a ({dim},) float16 row file")
        self.shape: tuple[int, int] = (int(shape[0]), int(dim))
        self.dtype = np.dtype(np.float16)
        self._row_bytes = dim * self.dtype.itemsize
        # a file cut short (a full disk, a damaged copy) is refused here, where the caller
        # treats it as no cache and rebuilds one, not halfway through a search
        if os.fstat(self._fd).st_size < self._offset + self.nbytes:
            raise ValueError(f"{self.path.name} is shorter than its header says")

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        """Size of the rows on disk (none of it is held in memory)."""
        return self.shape[0] * self._row_bytes

    def take(self, rows: NDArray[np.integer]) -> NDArray[np.float16]:
        """The given rows (ascending), copied into a new array."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.shape[1]), dtype=np.float16)
        if not len(rows):
            return out
        if rows[0] < 0 or rows[-1] >= self.shape[0] or np.any(np.diff(rows) < 0):
            raise IndexError("rows must be ascending and inside the file")
        breaks = np.flatnonzero(np.diff(rows) > MERGE_GAP) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [len(rows)]))
        firsts, lasts = rows[starts], rows[ends - 1] + 1
        # the loop runs once per run of rows, ~1,000 times a search: bytes, not rows, and
        # plain ints computed by numpy up front, so each turn is little more than its call
        rb, base = self._row_bytes, self._offset
        view = out.data.cast("B")  # the array's own buffer (a memoryview), as bytes
        runs = zip(starts.tolist(), ends.tolist(), firsts.tolist(), lasts.tolist(), strict=True)
        for s, e, lo, hi in runs:
            if hi - lo == e - s:  # a contiguous run: straight into the result
                self._read(view[s * rb : e * rb], base + lo * rb)
            else:
                span = np.empty((hi - lo, self.shape[1]), dtype=np.float16)
                self._read(span.data.cast("B"), base + lo * rb)
                out[s:e] = span[rows[s:e] - lo]
        return out

    def _read(self, view: memoryview, offset: int) -> None:
        """Fill `view` (bytes) from the file at `offset`."""
        if _PREADV and os.preadv(self._fd, [view], offset) == len(view):
            return  # the usual case: a regular file gives all of it in one call
        pos = 0
        while pos < len(view):  # a short read (or no preadv): keep reading
            if _PREADV:
                got = os.preadv(self._fd, [view[pos:]], offset + pos)
            else:  # a Python built without preadv (older macOS SDKs): one copy more
                data = os.pread(self._fd, len(view) - pos, offset + pos)
                got = len(data)
                view[pos : pos + got] = data
            if got <= 0:
                raise OSError(f"{self.path.name} is shorter than its header says")
            pos += got

    def __getitem__(self, key: Any) -> NDArray[np.float16]:
        """Rows by index, slice or index array (any order), as a new array."""
        if isinstance(key, slice):
            return self.take(np.arange(*key.indices(self.shape[0])))
        idx = np.asarray(key)
        if idx.dtype == bool:
            return self.take(np.flatnonzero(idx))
        flat = idx.reshape(-1).astype(np.int64)
        flat = np.where(flat < 0, flat + self.shape[0], flat)
        order = np.argsort(flat, kind="stable")
        got = np.empty((len(flat), self.shape[1]), dtype=np.float16)
        got[order] = self.take(flat[order])
        return got.reshape(*idx.shape, self.shape[1])

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray[Any]:
        whole = self.take(np.arange(self.shape[0]))
        return whole if dtype is None else whole.astype(dtype)
