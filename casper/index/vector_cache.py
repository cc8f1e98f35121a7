"""The on-disk search cache of one index version: float16 rows, sign codes, table rows, keys.

Imports: numpy, casper.index (sign_bits, vector_file, vectors). Written once per published
generation (`files.Generation`: its table version and number name the files) by the index run
or by the first vector search after a change. Readers
map the sign codes and table rows (every search reads all the codes) and read float16 rows with
`pread` only for the candidates they score (vector_file.py says why not a mapping).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from casper.datadir import unusable
from casper.index.sign_bits import pack
from casper.index.vector_file import VectorFile
from casper.index.vectors import private_files

CACHE_KEYS = ("vectors", "mean", "codes", "rows", "keys")
STALE_TMP_S = 3600.0  # a half-written cache this old has no live builder (a build takes seconds)


Cached = tuple[VectorFile, NDArray[np.float32], NDArray[np.uint64], NDArray[np.int64]]


def _cache_paths(directory: Path, version: int, generation: int) -> dict[str, Path]:
    return {k: directory / f"{k}-{version}-{generation}.npy" for k in CACHE_KEYS}


def load_vectors(directory: Path, version: int, generation: int, dim: int) -> Cached | None:
    """(vectors, mean, codes, vec_rows) of a table version + generation number: the float16
    rows as a VectorFile, the codes and table rows memory-mapped."""
    paths = _cache_paths(directory, version, generation)
    try:
        got = {
            k: np.load(p, mmap_mode="r") for k, p in paths.items() if k not in ("keys", "vectors")
        }
        vectors = VectorFile(paths["vectors"], dim)
    except (OSError, ValueError):
        return None
    n = len(got["rows"])
    if vectors.shape != (n, dim) or got["codes"].shape[1:] != (n,):
        return None
    return vectors, np.asarray(got["mean"]), got["codes"], got["rows"]


def cache_problem(
    directory: Path, version: int, generation: int, dim: int
) -> tuple[Path, str] | None:
    """(file, what is wrong) when the cache of a table version + generation number is there but
    does not read (`casper doctor`, `casper index --rebuild`); None when it reads or was never
    built. A search that finds it unreadable builds it again; this only says so. Reads the first
    and last vector, so a file cut short is found even when its header was rewritten."""
    paths = _cache_paths(directory, version, generation)
    if not any(p.exists() for p in paths.values()):
        return None
    arrays: dict[str, NDArray[np.generic]] = {}
    for key, path in paths.items():
        if not path.exists():
            return path, "missing beside the other files of its cache"
        cannot = unusable(path)
        if cannot is not None:
            return path, cannot
        try:
            if key == "vectors":
                vectors = VectorFile(path, dim)
                if len(vectors):
                    vectors.take(np.asarray([0, len(vectors) - 1]))
            else:
                arrays[key] = np.load(path, mmap_mode="r")
        except (OSError, ValueError, IndexError) as exc:
            return path, _npy_problem(exc)
    n = len(arrays["rows"])
    shapes = {
        "vectors": vectors.shape == (n, dim),
        "codes": arrays["codes"].shape[1:] == (n,),
        "keys": arrays["keys"].shape == (n,),
        "mean": arrays["mean"].shape == (dim,),
    }
    for key, fits in shapes.items():
        if not fits:
            return paths[key], "its shape does not match the rest of the cache"
    return None


def _npy_problem(exc: BaseException) -> str:
    text = str(exc)
    if "shorter than" in text or "mmap length" in text or "EOF" in text:
        return "cut short"
    if isinstance(exc, ValueError):
        return "not a .npy file of this cache"
    return text or type(exc).__name__


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
    fetched, blocks = fetch([keys[int(i)] for i in need])
    count = int((src >= 0).sum()) + fetched
    merged = _merged(src, prev[1] if prev else None, need, blocks, dim)
    try:
        with private_files():
            _write_cache(paths, merged, count, dim, key_arr)
        for old in _superseded(directory, (generation, version)):
            old.unlink(missing_ok=True)
        for stale in directory.glob("*.npy.*.tmp"):  # left by a builder that was killed
            if time.time() - _mtime(stale) > STALE_TMP_S:
                stale.unlink(missing_ok=True)
    except OSError as exc:
        raise OSError(f"could not write the vector cache: {type(exc).__name__}") from exc
    loaded = load_vectors(directory, version, generation, dim)
    assert loaded is not None
    return loaded


def drop_caches(directory: Path) -> int:
    """Delete every vector cache in `directory`, whatever its generation, and half-written
    ones: after people are kept out none may keep a copy of their vectors or hashes. A reader
    still on one keeps what it opened (unlinked files stay readable to it); the next search
    builds the cache of its generation again. Returns how many files went."""
    gone = 0
    for path in [*directory.glob("*-*-*.npy"), *directory.glob("*.npy.*.tmp")]:
        if path.name.split("-", 1)[0] in CACHE_KEYS:
            path.unlink(missing_ok=True)
            gone += 1
    return gone


def _superseded(directory: Path, ours: tuple[int, int]) -> list[Path]:
    """Cache files older than ours (by generation, then table version), except the newest of
    them: a reader (another thread of the service, another process) may be building or opening
    the one just before ours, and deleting it under that reader failed its search. Newer caches
    are never ours to delete (a slower builder of an older generation finishes after them)."""
    older: dict[tuple[int, int], list[Path]] = {}
    for path in directory.glob("*-*-*.npy"):
        key, _, rest = path.stem.partition("-")
        version, _, generation = rest.partition("-")
        if key in CACHE_KEYS and version.isdigit() and generation.isdigit():
            stamp = (int(generation), int(version))
            if stamp < ours:
                older.setdefault(stamp, []).append(path)
    stale = sorted(older)[:-1]  # the newest older cache stays for a reader still on it
    return [path for stamp in stale for path in older[stamp]]


def _previous(directory: Path, skip: Path, dim: int) -> tuple[NDArray, VectorFile] | None:
    """(keys, rows) of the newest complete cache in `directory` other than `skip`."""
    for keys_path in sorted(directory.glob("keys-*.npy"), key=_mtime, reverse=True):
        if keys_path == skip:
            continue
        vectors = keys_path.with_name("vectors" + keys_path.name[len("keys") :])
        try:
            keys = np.load(keys_path)
            rows = VectorFile(vectors, dim)
        except (OSError, ValueError):
            continue
        if len(rows) == len(keys):
            return keys, rows
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _merged(
    src: NDArray[np.int64],
    prev: VectorFile | None,
    need: NDArray[np.int64],
    fetched: Blocks,
    dim: int,
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
        rows = np.concatenate([prev[seg[have]], new_rows])
        order = np.argsort(pos, kind="stable")
        yield pos[order], rows[order]
    for _ in stream:  # let the fetch finish its cleanup
        pass


def _write_cache(
    paths: dict[str, Path], blocks: Blocks, count: int, dim: int, keys: NDArray
) -> None:
    # one temporary name per builder: two processes (a search and `casper index`) may build the
    # same table version at once; with a shared name one truncated and renamed the other's file
    unique = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp = {k: p.with_name(f"{p.name}.{unique}.tmp") for k, p in paths.items()}
    try:
        _write_tmp(tmp, blocks, count, dim, keys)
    except BaseException:
        for path in tmp.values():
            path.unlink(missing_ok=True)
        raise
    for key, path in paths.items():
        os.replace(tmp[key], path)


def _write_tmp(tmp: dict[str, Path], blocks: Blocks, count: int, dim: int, keys: NDArray) -> None:
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
            codes[:, lo : lo + m] = pack(block.astype(np.float32) > mean)
    arrays: dict[str, np.ndarray] = {"mean": mean, "codes": codes, "rows": rows, "keys": keys[rows]}
    for key, arr in arrays.items():
        with tmp[key].open("wb") as fh:
            np.save(fh, arr)
