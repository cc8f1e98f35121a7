"""The vector search's memory-lean pieces give the same answers as the plain computations:
sign-bit stages, rows read from the cache file, chunk meta held in columns."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from casper.index.chunk_meta import ChunkIds, ChunkMeta
from casper.index.sign_bits import FAR, hamming, nearest, pack, sign_codes, sign_scores
from casper.index.vector_file import VectorFile
from casper.index.vectors import EXACT_MAX, VectorMatrix

DIM = 100  # not a multiple of 64: the padding bits must not count


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _meta(n: int, rng: np.random.Generator) -> pa.Table:
    chats = rng.integers(0, 40, n)
    names = [None if c == 3 else f"chat {c}" for c in chats]
    participants = [None if c == 5 else ["me", f"p{c % 6}"] for c in chats]
    return pa.table({
        "id": [f"{c}:{i}:{i + 2}:3x1" for i, c in enumerate(chats)],
        "chat_id": chats.astype(np.int64), "chat_name": names,
        "participants": pa.array(participants, pa.list_(pa.string())),
        "person_ids": pa.array([[f"p{c % 6}"] for c in chats], pa.list_(pa.string())),
        "start": rng.random(n) * 1e9, "end": rng.random(n) * 1e9,
        "rowids": pa.array([[i, i + 1, i + 2] for i in range(n)], pa.list_(pa.int64())),
    })  # fmt: skip


def test_hamming_counts_differing_sign_bits() -> None:
    rng = np.random.default_rng(1)
    vecs = _unit(rng.standard_normal((1000, DIM)))
    mean, codes = sign_codes(vecs)
    q = _unit(rng.standard_normal((1, DIM)))[0]
    qcode = pack((q - mean)[None, :] > 0)[:, 0]
    want = ((vecs > mean) != (q > mean)).sum(axis=1)
    np.testing.assert_array_equal(hamming(codes, qcode), want)
    mask = rng.random(1000) < 0.3
    got = hamming(codes, qcode, mask)
    np.testing.assert_array_equal(got[mask], want[mask])
    assert (got[~mask] == FAR).all()


@pytest.mark.parametrize("depth", [1, 17, 500, 999, 1000, 5000])
def test_nearest_is_the_stable_smallest_by_distance(depth: int) -> None:
    dist = np.random.default_rng(depth).integers(0, 40, 1000).astype(np.uint16)  # many ties
    want = np.sort(np.argsort(dist, kind="stable")[:depth])
    np.testing.assert_array_equal(nearest(dist, depth), want)


def test_sign_scores_are_the_dot_product_with_the_signs() -> None:
    rng = np.random.default_rng(2)
    vecs = _unit(rng.standard_normal((300, DIM)))
    mean, codes = sign_codes(vecs)
    q = rng.standard_normal(DIM).astype(np.float32)
    rows = np.sort(rng.choice(300, 120, replace=False))
    signs = np.where(vecs[rows] > mean, 1.0, -1.0)
    np.testing.assert_allclose(sign_scores(codes, rows, q), signs @ q, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("preadv", [True, False], ids=["preadv", "pread"])
def test_vector_file_reads_the_rows_asked_for_even_after_the_file_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preadv: bool
) -> None:
    import casper.index.vector_file as vector_file

    if preadv and not hasattr(os, "preadv"):
        pytest.skip("this Python has no os.preadv")
    monkeypatch.setattr(vector_file, "_PREADV", preadv)
    rows = np.random.default_rng(3).standard_normal((500, DIM)).astype(np.float16)
    path = tmp_path / "vectors-1-1.npy"
    np.save(path, rows)
    reader = VectorFile(path, DIM)
    picks = np.array([0, 1, 2, 3, 9, 11, 250, 251, 499])  # runs, near gaps, far gaps
    np.testing.assert_array_equal(reader.take(picks), rows[picks])
    np.testing.assert_array_equal(reader[np.array([7, 3, 7])], rows[[7, 3, 7]])
    np.testing.assert_array_equal(reader[10:20], rows[10:20])
    np.testing.assert_array_equal(np.asarray(reader), rows)
    path.unlink()  # a writer publishing a newer cache deletes this one
    np.testing.assert_array_equal(reader.take(picks), rows[picks])
    with pytest.raises(IndexError):
        reader.take(np.array([5, 2]))
    with pytest.raises(ValueError):
        np.save(tmp_path / "bad.npy", rows.astype(np.float32))
        VectorFile(tmp_path / "bad.npy", DIM)


def test_chunk_ids_map_rows_and_ids_both_ways() -> None:
    ids = ["9:1:2:3x1", "10:5:9:3x1", "1:1:1:8x4", "10:5:9:3x1b", "ünï:1"]
    index = ChunkIds(pa.array(ids))
    assert list(index) == ids and len(index) == 5 and index[4] == ids[4]
    assert index.at(np.array([3, 0])) == [ids[3], ids[0]]
    got = index.rows_of(["1:1:1:8x4", "nope", "ünï:1", "10:5:9:3x1", "~" * 40])
    assert got.tolist() == [2, -1, 4, 1, -1]


def _old_meta(table: pa.Table, ids: list[str]) -> dict[str, ChunkMeta]:
    """What the matrix returned when it kept every column as an Arrow table (before)."""
    positions = {cid: i for i, cid in enumerate(table["id"].to_pylist())}
    rows = [(cid, positions[cid]) for cid in ids if cid in positions]
    picked = table.take([r for _, r in rows]).to_pylist()
    return {
        cid: ChunkMeta(
            cid,
            int(row["chat_id"]),
            row["chat_name"] or "",
            tuple(row["participants"] or ()),
            float(row["start"]),
            float(row["end"]),
            tuple(row["rowids"] or ()),
        )  # fmt: skip
        for (cid, _), row in zip(rows, picked, strict=True)
    }


def test_small_corpus_search_and_meta_are_exact_and_unchanged() -> None:
    rng = np.random.default_rng(4)
    n = 3_000  # below EXACT_MAX: every row scored exactly, as before
    assert n <= EXACT_MAX
    vecs = _unit(rng.standard_normal((n, DIM)))
    table = _meta(n, rng)
    matrix = VectorMatrix.build(table, vecs.astype(np.float16), version=0)
    ids = table["id"].to_pylist()
    for q in _unit(rng.standard_normal((10, DIM))):
        scores = vecs.astype(np.float16).astype(np.float32) @ q
        want = [ids[i] for i in np.argsort(-scores, kind="stable")[:20]]
        got = matrix.search(q, 20)
        assert [cid for cid, _ in got] == want
        mask = matrix.mask(None)
        assert mask is None
    asked = [ids[i] for i in rng.integers(0, n, 30)] + ["missing"]
    assert matrix.meta(asked) == _old_meta(table, asked)
    assert matrix.rowids_of(asked[:3]) == {
        c: m.rowids for c, m in _old_meta(table, asked[:3]).items()
    }


def test_the_matrix_keeps_no_python_object_per_chunk() -> None:
    rng = np.random.default_rng(5)
    n = 40_000
    table = _meta(n, rng)
    vecs = _unit(rng.standard_normal((n, 8))).astype(np.float16)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        matrix = VectorMatrix.build(table, vecs, version=0)
        matrix.meta([f"{0}:{i}" for i in range(5)])
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    held = grown - vecs.nbytes  # numpy buffers count: codes, ids, filters (~70 B a chunk)
    # a list of id strings alone was ~75 B a chunk, plus the id -> row dict ~100 B
    assert held / n < 110, held / n
    assert len(matrix) == n
