"""Two builders of the same cache version at once (a search process and `casper index`).

The second build runs to completion while the first is in the middle of writing its rows: with
one shared temporary name the second truncated and renamed the first's file, and the first then
failed with "could not write the vector cache: FileNotFoundError" (seen in a loaded full run).
"""

from __future__ import annotations

import os
import time

import numpy as np

from casper.index import vector_cache
from casper.index.vector_cache import build_vectors, load_vectors

DIM = 8


def _rows(n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float16)


def _fetch_from(rows: np.ndarray, keys: list[str], during=None):
    index = {k: i for i, k in enumerate(keys)}

    def fetch(wanted):
        def blocks():
            at = np.arange(len(wanted), dtype=np.int64)
            picked = rows[[index[k] for k in wanted]]
            half = len(wanted) // 2
            yield at[:half], picked[:half]
            if during is not None:
                during()  # the other builder, while this one's row file is open
            yield at[half:], picked[half:]

        return len(wanted), blocks()

    return fetch


def test_a_second_builder_of_the_same_version_does_not_break_the_first(tmp_path) -> None:
    keys = [f"k{i:03d}" for i in range(40)]
    rows = _rows(len(keys))

    def other_builder() -> None:
        build_vectors(tmp_path, 3, 1, DIM, keys, _fetch_from(rows, keys))

    first = build_vectors(tmp_path, 3, 1, DIM, keys, _fetch_from(rows, keys, other_builder))
    again = load_vectors(tmp_path, 3, 1, DIM)
    assert again is not None
    for cached in (first, again):
        vectors, _mean, _codes, table_rows = cached
        np.testing.assert_array_equal(table_rows, np.arange(len(keys)))
        np.testing.assert_array_equal(vectors.take(np.arange(len(keys))), rows)
    assert not list(tmp_path.glob("*.tmp"))


def test_a_failed_build_leaves_no_temporary_files_and_old_ones_are_swept(tmp_path) -> None:
    keys = [f"k{i:03d}" for i in range(10)]
    stale = tmp_path / "vectors-1-1.npy.999-deadbeef.tmp"
    stale.write_bytes(b"half written by a killed builder")
    old = time.time() - vector_cache.STALE_TMP_S - 60
    os.utime(stale, (old, old))

    def broken(wanted):
        def blocks():
            yield np.arange(2, dtype=np.int64), _rows(2)
            raise OSError("disk full")

        return len(wanted), blocks()

    try:
        build_vectors(tmp_path, 1, 1, DIM, keys, broken)
    except OSError as exc:
        assert "could not write the vector cache" in str(exc)
    else:
        raise AssertionError("a failed write must raise")
    assert [p.name for p in tmp_path.glob("*.tmp")] == [stale.name]  # ours removed

    build_vectors(tmp_path, 1, 1, DIM, keys, _fetch_from(_rows(len(keys)), keys))
    assert not list(tmp_path.glob("*.tmp"))  # the killed builder's file is swept


def test_a_newer_generations_builder_leaves_the_one_just_before_it(tmp_path) -> None:
    """The service's auto-index publishes while a search thread builds the previous generation's
    cache: the newer build used to delete that cache before its builder opened it (an
    AssertionError inside the service). A build keeps the cache just before its own and every
    newer one; only older ones go."""
    keys = [f"k{i:03d}" for i in range(40)]
    rows = _rows(len(keys))

    def newer_builder() -> None:
        build_vectors(tmp_path, 9, 3, DIM, keys, _fetch_from(rows, keys))

    build_vectors(tmp_path, 5, 1, DIM, keys, _fetch_from(rows, keys))  # an old generation
    during = build_vectors(tmp_path, 7, 2, DIM, keys, _fetch_from(rows, keys, newer_builder))
    assert during is not None and load_vectors(tmp_path, 7, 2, DIM) is not None
    assert load_vectors(tmp_path, 9, 3, DIM) is not None  # newer: never the older build's
    build_vectors(tmp_path, 11, 4, DIM, keys, _fetch_from(rows, keys))
    assert not list(tmp_path.glob("*-5-1.npy")) and not list(tmp_path.glob("*-7-2.npy"))
    assert load_vectors(tmp_path, 9, 3, DIM) is not None  # the one just before 11-4 stays
