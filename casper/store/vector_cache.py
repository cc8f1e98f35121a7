"""The on-disk search cache of one index version: float16 rows, sign codes, table rows, keys.

Imports: numpy, casper.store.vectors. Written once per table version and vector generation
(by the index run, or by the first vector search after a change) and memory-mapped by readers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from casper.store.vectors import _pack, private_files

CACHE_KEYS = ("vectors", "mean", "codes", "rows", "keys")


Cached = tuple[NDArray[np.float16], NDArray[np.float32], NDArray[np.uint64], NDArray[np.int64]]


def _cache_paths(directory: Path, version: int, generation: int) -> dict[str, Path]:
    return {k: directory / f"{k}-{version}-{generation}.npy" for k in CACHE_KEYS}


def load_vectors(directory: Path, version: int, generation: int, dim: int) -> Cached | None:
    """(vectors, mean, codes, vec_rows) of a table version + vector generation, memory-mapped."""
    paths = _cache_paths(directory, version, generation)
    try:
        got = {k: np.load(p, mmap_mode="r") for k, p in paths.items() if k != "keys"}
    except (OSError, ValueError):
        return None
    n = len(got["rows"])
    if got["vectors"].shape != (n, dim) or got["codes"].shape[1:] != (n,):
        return None
    return got["vectors"], np.asarray(got["mean"]), got["codes"], got["rows"]


Blocks = Iterator[tuple[NDArray[np.int64], NDArray[np.float16]]]
Fetch = Callable[[Sequence[str]], tuple[int, Blocks]]
_STEP = 16_384  # rows per block: bounds the float32 temporaries (~25 MB at 384 dims)


def build_vectors(
    directory: Path, version: int, generation: int, dim: int, keys: Sequence[str], fetch: Fetch
) -> Cached:
    """Write the cache of one table version (chunks `keys`, in table order) and return it
    memory-mapped.

    Vectors already in the newest previous cache are copied from it (an incremental run
    fetches only its new chunks); the rest come from `fetch` (the side file). Rows are appended
    with plain writes and the sign codes computed in a second pass over the file, so the column
    is never whole in memory, nor left resident through a mapping.
    """
    paths = _cache_paths(directory, version, generation)
    key_arr = np.asarray(list(keys), dtype=np.bytes_) if len(keys) else np.empty(0, "S1")
    src = np.full(len(keys), -1, dtype=np.int64)  # row in the previous cache, or -1
    prev = _previous(directory, paths["keys"], dim)
    if prev is not None:
        old_keys, _ = prev
        order = np.argsort(old_keys, kind="stable")
        ranked = old_keys[order]
        at = np.minimum(np.searchsorted(ranked, key_arr), max(len(ranked) - 1, 0))
        hit = ranked[at] == key_arr if len(ranked) else np.zeros(len(keys), bool)
        src[hit] = order[at[hit]]
    need = np.flatnonzero(src < 0)
    fetched, blocks = fetch([keys[i] for i in need])
    count = int((src >= 0).sum()) + fetched
    merged = _merged(src, prev[1] if prev else None, need, blocks, dim)
    try:
        with private_files():
            _write_cache(paths, merged, count, dim, key_arr)
        keep = {p.name for p in paths.values()}
        for old in directory.glob("*-*.npy"):
            if old.name not in keep and old.name.split("-")[0] in CACHE_KEYS:
                old.unlink(missing_ok=True)
    except OSError as exc:
        raise OSError(f"could not write the vector cache: {type(exc).__name__}") from exc
    finally:
        if prev is not None:
            prev[1].close()
    loaded = load_vectors(directory, version, generation, dim)
    assert loaded is not None
    return loaded


class _Rows:
    """Read-only float16 rows of a cache file through a private mapping whose pages are
    released after every block (they would otherwise stay in this process's RSS)."""

    def __init__(self, path: Path, dim: int) -> None:
        import mmap

        self._fh = path.open("rb")
        major, _minor = np.lib.format.read_magic(self._fh)
        fmt = np.lib.format
        read = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
        shape, _, _ = read(self._fh)
        self._offset = self._fh.tell()
        self._map = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._rows = np.frombuffer(
            self._map, dtype=np.float16, offset=self._offset, count=shape[0] * dim
        ).reshape(shape[0], dim)

    def __len__(self) -> int:
        return len(self._rows)

    def take(self, rows: NDArray[np.int64]) -> NDArray[np.float16]:
        import mmap

        out = self._rows[rows]
        if hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED)
        return out

    def close(self) -> None:
        del self._rows
        self._map.close()
        self._fh.close()


def _previous(directory: Path, skip: Path, dim: int) -> tuple[NDArray, _Rows] | None:
    """(keys, rows) of the newest complete cache in `directory` other than `skip`."""
    for keys_path in sorted(directory.glob("keys-*.npy"), key=_mtime, reverse=True):
        if keys_path == skip:
            continue
        vectors = keys_path.with_name("vectors" + keys_path.name[len("keys") :])
        try:
            keys = np.load(keys_path)
            rows = _Rows(vectors, dim)
        except (OSError, ValueError):
            continue
        if len(rows) == len(keys):
            return keys, rows
        rows.close()
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _merged(
    src: NDArray[np.int64], prev: _Rows | None, need: NDArray[np.int64], fetched: Blocks, dim: int
) -> Blocks:
    """(table rows, float16 rows) in table order: from the previous cache where `src` says,
    else from the fetched stream (which comes in the order of `need`)."""
    buf_pos = np.empty(0, np.int64)
    buf_rows = np.empty((0, dim), np.float16)
    stream = iter(fetched)
    done = False
    for lo in range(0, len(src), _STEP):
        hi = min(lo + _STEP, len(src))
        while not done and (len(buf_pos) == 0 or buf_pos[-1] < hi - 1):
            part = next(stream, None)
            if part is None:
                done = True
                break
            buf_pos = np.concatenate([buf_pos, need[part[0]]])
            buf_rows = np.concatenate([buf_rows, part[1]])
        cut = int(np.searchsorted(buf_pos, hi))
        new_pos, new_rows = buf_pos[:cut], buf_rows[:cut]
        buf_pos, buf_rows = buf_pos[cut:], buf_rows[cut:]
        seg = src[lo:hi]
        have = np.flatnonzero(seg >= 0)
        if prev is None or not len(have):
            if len(new_pos):
                yield new_pos, new_rows
            continue
        pos = np.concatenate([lo + have, new_pos])
        rows = np.concatenate([prev.take(seg[have]), new_rows])
        order = np.argsort(pos, kind="stable")
        yield pos[order], rows[order]
    for _ in stream:  # let the fetch finish its cleanup
        pass


def _write_cache(
    paths: dict[str, Path], blocks: Blocks, count: int, dim: int, keys: NDArray
) -> None:
    tmp = {k: p.with_name(p.name + ".tmp") for k, p in paths.items()}
    half = np.dtype(np.float16)
    rows = np.empty(count, dtype=np.int64)
    total = np.zeros(dim, np.float64)
    filled = 0
    with tmp["vectors"].open("wb") as fh:
        header = {"descr": np.lib.format.dtype_to_descr(half), "fortran_order": False,
                  "shape": (count, dim)}  # fmt: skip
        np.lib.format.write_array_header_1_0(fh, header)
        offset = fh.tell()
        for positions, block in blocks:
            fh.write(np.ascontiguousarray(block, dtype=half).tobytes())
            rows[filled : filled + len(block)] = positions
            total += np.asarray(block, dtype=np.float32).sum(axis=0)
            filled += len(block)
    if filled != count:
        raise OSError(f"expected {count} vectors, got {filled}")
    mean = (total / max(count, 1)).astype(np.float32)
    codes = np.empty(((dim + 63) // 64, count), dtype=np.uint64)
    with tmp["vectors"].open("rb") as fh:
        fh.seek(offset)
        for lo in range(0, count, _STEP):
            m = min(_STEP, count - lo)
            block = np.fromfile(fh, dtype=half, count=m * dim).reshape(m, dim)
            codes[:, lo : lo + m] = _pack(block.astype(np.float32) > mean)
    arrays = {"mean": mean, "codes": codes, "rows": rows, "keys": keys[rows]}
    for key, arr in arrays.items():
        with tmp[key].open("wb") as fh:
            np.save(fh, arr)
    for key, path in paths.items():
        os.replace(tmp[key], path)
