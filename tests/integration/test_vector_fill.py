"""Searchable first, semantic later, resumable: the lexical legs answer before any vector exists,
vectors are filled in batch by batch, a killed fill keeps its batches and the next run embeds
only what is missing, ending in the same index as a clean build."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from casper.index.chunk_index import ChunkIndex, vector_status_at
from casper.indexer.chunk_update import EMBED_BATCH, ensure_vectors, update_index, update_lexical
from casper.indexer.chunking import ChunkOptions
from casper.indexer.pipeline import Indexer
from casper.search.retriever import Retriever
from casper.store.db import Store
from tests.fakes_search import HashEmbedder

UTC = ZoneInfo("UTC")
ROOT = Path(__file__).resolve().parents[2]


def _open(index_dir: Path) -> ChunkIndex:
    return ChunkIndex.open(
        index_dir, embedder_name="hash-64", dim=64, checksum="hash", chunker_version="t"
    )


def _lexical_only(tmp_path: Path, n_messages: int) -> tuple[Store, ChunkIndex]:
    """A store and an index whose chunks are written but not embedded."""
    from ingest.synthetic.bulk import build_bulk_chat_db

    tmp_path.mkdir(parents=True, exist_ok=True)
    db = tmp_path / "chat.db"
    build_bulk_chat_db(db, n_messages=n_messages, n_people=6)
    store = Store.open(tmp_path / "home" / "casper.sqlite")
    index = _open(tmp_path / "home" / "index")
    Indexer(store, db, None, UTC).run()
    update_lexical(store, index, dirty=store.dirty_chats(), options=ChunkOptions(3, 1))
    return store, index


class CountingEmbedder(HashEmbedder):
    """HashEmbedder that remembers which texts it embedded."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed_documents(self, texts, on_progress=None):  # noqa: ANN001, ANN201
        self.texts.extend(texts)
        return super().embed_documents(texts, on_progress)


def test_lexical_legs_answer_before_vectors_and_say_how_much_is_semantic(tmp_path: Path) -> None:
    store, index = _lexical_only(tmp_path, 2_000)
    total = index.count()
    assert total > 1_000
    assert index.vectors.count() == 0
    assert vector_status_at(index.dir) == (0, total)
    word = index.scan(["text"], None)["text"][0].as_py().split()[-1]
    retriever = Retriever(index, HashEmbedder(64), None, store=store)
    lexical = retriever.search(word, mode="bm25", rerank=False)
    assert lexical.hits and lexical.notices == ()  # searchable without vectors, no vector leg
    assert retriever.hits(word, mode="vector", rerank=False) == []
    hybrid = retriever.search(word, rerank=False)
    assert hybrid.hits  # hybrid falls back to what exists
    assert [n.text for n in hybrid.notices] == [
        "semantic index 0 % built; lexical results only for the rest"
    ]
    assert retriever.search(word, rerank=False).notices == hybrid.notices  # every search says it

    embedder = CountingEmbedder()
    fill = ensure_vectors(index, embedder)
    assert (fill.embedded, fill.done, fill.total, fill.resumed_from) == (total, total, total, 0)
    assert vector_status_at(index.dir) == (total, total)
    fresh = Retriever(index, embedder, None, store=store)
    complete = fresh.search(word, mode="vector", rerank=False)
    assert complete.hits and complete.notices == ()
    assert retriever.search(word, rerank=False).notices == ()  # the same index, filled in
    # nothing missing: a second fill embeds nothing
    assert ensure_vectors(index, embedder).embedded == 0
    assert len(embedder.texts) == total


def test_a_partial_semantic_index_searches_the_embedded_part(tmp_path: Path) -> None:
    store, index = _lexical_only(tmp_path, 1_500)
    rows = index.scan(["content_hash", "embed_text", "id"])
    half = rows.num_rows // 2
    keys, texts = rows["content_hash"].to_pylist()[:half], rows["embed_text"].to_pylist()[:half]
    embedder = HashEmbedder(64)
    index.vectors.put(keys, embedder.embed_documents(texts))
    matrix = index.matrix()
    assert matrix.coverage == (half, rows.num_rows)
    embedded_ids = set(rows["id"].to_pylist()[:half])
    hits = index.vector_search(embedder.embed_query(texts[3]), 20)
    assert hits and {cid for cid, _ in hits} <= embedded_ids
    assert hits[0][0] == rows["id"][3].as_py()
    share = int(100 * half / rows.num_rows)
    retriever = Retriever(index, embedder, None, store=store)
    assert [n.text for n in retriever.search("anything", rerank=False).notices] == [
        f"semantic index {share} % built; lexical results only for the rest"
    ]


FILL_SCRIPT = """
import sys, time
from pathlib import Path
from casper.indexer.chunk_update import ensure_vectors
from casper.index.chunk_index import ChunkIndex
from tests.fakes_search import HashEmbedder

class Slow(HashEmbedder):
    def embed_documents(self, texts, on_progress=None):
        time.sleep(0.05)
        return super().embed_documents(texts, on_progress)

index = ChunkIndex.open(Path(sys.argv[1]), embedder_name="hash-64", dim=64, checksum="hash",
                        chunker_version="t")
# progress is reported after each batch is committed
ensure_vectors(index, Slow(64), lambda done, total: print("batch", done, flush=True))
print("done", flush=True)
"""


def _vectors_by_key(index: ChunkIndex) -> dict[str, bytes]:
    return dict(index.vectors.conn.execute("SELECT key, v FROM vec").fetchall())


@pytest.mark.slow
def test_kill_9_during_embedding_keeps_batches_and_resume_embeds_only_the_rest(
    tmp_path: Path,
) -> None:
    store, index = _lexical_only(tmp_path / "a", 6_000)
    total = index.count()
    rng = random.Random(11)
    kept = 0
    for _attempt in range(3):  # kill at random points, several times in a row
        proc = subprocess.Popen(
            [sys.executable, "-c", FILL_SCRIPT, str(index.dir)],
            stdout=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        wait_for = rng.randint(1, 3)
        for _ in range(wait_for):
            line = proc.stdout.readline().split()
            assert line and line[0] == "batch", line
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        now = index.vectors.count()
        assert now >= kept + wait_for * EMBED_BATCH  # every reported batch survived the kill
        assert now < total
        kept = now
    done, seen_total = vector_status_at(index.dir)
    assert seen_total == total and done >= kept
    keys = set(index.scan(["content_hash"])["content_hash"].to_pylist())
    missing = keys - set(_vectors_by_key(index))
    embedder = CountingEmbedder()
    fill = ensure_vectors(index, embedder)
    assert fill.resumed_from >= kept
    assert fill.embedded == len(missing) == len(embedder.texts)  # only what was missing
    assert len(set(embedder.texts)) == len(embedder.texts)
    assert (fill.done, fill.total) == (total, total)

    # the same corpus built in one go gives the same index
    clean_store, clean = _lexical_only(tmp_path / "b", 6_000)
    ensure_vectors(clean, HashEmbedder(64))
    assert _vectors_by_key(clean) == _vectors_by_key(index)
    got, want = index.matrix(), clean.matrix()
    assert sorted(got.ids) == sorted(want.ids)
    order = np.argsort(got.ids)
    again = np.argsort(want.ids)
    np.testing.assert_array_equal(np.asarray(got.vectors)[order], np.asarray(want.vectors)[again])
    store.close()
    clean_store.close()


def test_a_fill_publishes_as_it_goes_and_readers_follow_without_reopening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While vectors are filled in, the writer publishes them as new generations of the same
    table version (at most every PUBLISH_EVERY_S; every batch here): a reader in another
    process searches what is embedded so far, re-pointing its matrix, never reopening."""
    import casper.indexer.chunk_update as chunk_update

    _store, index = _lexical_only(tmp_path, 2_000)
    monkeypatch.setattr(chunk_update, "PUBLISH_EVERY_S", 0.0)
    reader = _open(index.dir)
    table, run = reader.table, reader.generation.run
    seen: list[tuple[int, int]] = []

    class Watched(HashEmbedder):
        def embed_documents(self, texts, on_progress=None):  # noqa: ANN001, ANN201
            reader.refresh_if_stale()  # what every search starts with
            seen.append(reader.matrix().coverage)
            return super().embed_documents(texts, on_progress)

    fill = ensure_vectors(index, Watched(64))
    assert len(seen) > 2 and seen[0] == (0, fill.total)
    assert any(0 < done < total for done, total in seen)  # it grew while the fill ran
    assert reader.refresh_if_stale() and reader.matrix().coverage == (fill.total, fill.total)
    assert reader.table is table and reader.generation.run == run  # re-pointed, not reopened
    _store.close()


def test_update_index_still_builds_everything_in_one_call(tmp_path: Path) -> None:
    from ingest.synthetic.bulk import build_bulk_chat_db

    db = tmp_path / "chat.db"
    build_bulk_chat_db(db, n_messages=800, n_people=4)
    store = Store.open(tmp_path / "casper.sqlite")
    Indexer(store, db, None, UTC).run()
    index = _open(tmp_path / "index")
    update = update_index(
        store, index, HashEmbedder(64), dirty={c.id: True for c in store.chats()},
        options=ChunkOptions(3, 1),
    )  # fmt: skip
    assert update.vectors_done == update.vectors_total == update.chunks_total > 0
    assert update.embedded == update.chunks_total


def test_an_incremental_rebuild_reuses_the_previous_cache_and_matches_the_side_file(
    tmp_path: Path,
) -> None:
    import dataclasses

    store, index = _lexical_only(tmp_path, 1_500)
    embedder = HashEmbedder(64)
    ensure_vectors(index, embedder)
    old = index.matrix()
    assert list(index.dir.glob("keys-*.npy"))
    chunks = index.get(old.ids[:30])
    index.delete_ids([c.id for c in chunks[:10]])
    changed = [
        dataclasses.replace(c, embed_text=c.embed_text + " 2", content_hash=c.content_hash + "x")
        for c in chunks[10:20]
    ]
    index.upsert(changed)
    index.optimize(warm=False)
    fetched: list[int] = []
    gather = index.vectors.gather

    def counting_gather(keys):  # noqa: ANN001, ANN202
        fetched.append(len(keys))
        return gather(keys)

    index.vectors.gather = counting_gather  # type: ignore[method-assign]
    fill = ensure_vectors(index, CountingEmbedder())
    assert fill.embedded == 10 and fill.done == fill.total == old.coverage[1] - 10
    assert fetched == [10]  # only the changed chunks come from the side file; the rest is reused
    matrix = index.matrix()
    by_key = _vectors_by_key(index)
    hashes = dict(zip(*index.scan(["id", "content_hash"]).to_pydict().values(), strict=True))
    assert sorted(matrix.ids) == sorted(hashes)
    assert len(matrix.vec_rows) == len(hashes)
    for i, table_row in enumerate(matrix.vec_rows):
        want = np.frombuffer(by_key[hashes[matrix.ids[table_row]]], dtype=np.float16)
        np.testing.assert_array_equal(np.asarray(matrix.vectors[i]), want)
    store.close()


def test_a_lexical_search_never_builds_or_maps_the_vector_cache(tmp_path: Path) -> None:
    store, index = _lexical_only(tmp_path, 800)
    ensure_vectors(index, HashEmbedder(64))
    for cache in index.dir.glob("*.npy"):
        cache.unlink()
    reader = _open(index.dir)
    word = reader.scan(["text"])["text"][0].as_py().split()[-1]
    retriever = Retriever(reader, HashEmbedder(64), None, store=store)
    assert retriever.hits(word, mode="bm25", rerank=False)
    assert not reader.matrix().loaded and not list(index.dir.glob("*.npy"))
    assert retriever.hits(word, mode="vector", rerank=False)  # the first vector search builds it
    assert reader.matrix().loaded and list(index.dir.glob("vectors-*.npy"))
    store.close()
