"""A bulk run (casper.indexer.run.BULK_CHUNKS chunks or more to embed) embeds with the engine the
bulk supply gives it on the first batch; a small run keeps the run's own engine and asks
nothing; what the engine says of its choice is said, and `index --json` says which engine
embedded and why."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from casper.app import runtime
from casper.app.documents import index_json
from casper.backends.placement import Placement
from casper.config import load_config
from casper.dates.zones import local_tz
from casper.indexer import run as index_run
from casper.protocols import Embedder
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.bulk import append_messages
from tests.fakes_search import HashEmbedder
from tests.helpers import use_fake_embedder

WHY = "torch: 1.6× onnxruntime on this machine's probe"


class _Engine(HashEmbedder):
    """The hash embedder, placed as the bulk engine would be."""

    placement = Placement("torch", "cpu", 2, why=WHY)


def test_a_bulk_run_embeds_with_the_picked_engine_and_a_small_run_keeps_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = build_demo_corpus(tmp_path / "src", scale=0.2)
    src = corpus.chat_db.parent
    default = HashEmbedder(64)
    use_fake_embedder(monkeypatch, default)
    monkeypatch.setattr(index_run, "BULK_CHUNKS", 50)  # the small demo counts as bulk
    cfg = load_config(tmp_path / "home", chat_db=src / "chat.db", contacts=src / "AddressBook")
    engine, samples, said = _Engine(64), [], []

    def bulk(
        build: Callable[[], Embedder], check: Callable[[Embedder], None], said: Callable
    ) -> Embedder:
        samples.append(1)
        assert build() is default  # the run's own engine is there to race with
        check(engine)  # the same model as the index's
        said(WHY)
        return engine

    first = _run(cfg, bulk, said)
    assert first.vectors is not None and first.vectors.embedded > 50
    assert sum(engine.calls) == first.vectors.embedded and default.calls == []
    assert len(samples) == 1
    assert f"embedding with {WHY}" in said
    doc = index_json(first, local_tz(cfg.timezone))
    assert doc["embedder"] is not None and doc["embedder"]["why"] == WHY
    assert doc["embedder"]["backend"] == "torch"

    append_messages(src / "chat.db", 5)  # a handful of new chunks: not bulk
    second = _run(cfg, bulk, said)
    assert second.vectors is not None and 0 < second.vectors.embedded < 50
    assert len(samples) == 1 and sum(default.calls) == second.vectors.embedded


def test_the_engine_picked_gives_the_vectors_the_run_would_have(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = build_demo_corpus(tmp_path / "src", scale=0.2)
    src = corpus.chat_db.parent
    use_fake_embedder(monkeypatch)
    monkeypatch.setattr(index_run, "BULK_CHUNKS", 50)
    homes = {}
    for name, bulk in (("plain", None), ("bulk", lambda b, c, s: _Engine(64))):
        home = tmp_path / name
        shutil.copytree(src, tmp_path / f"src-{name}")
        cfg = load_config(home, chat_db=tmp_path / f"src-{name}" / "chat.db",
                          contacts=tmp_path / f"src-{name}" / "AddressBook")  # fmt: skip
        _run(cfg, bulk, [])
        homes[name] = cfg
    plain, bulked = (_vectors(homes[n]) for n in ("plain", "bulk"))
    assert plain.keys() == bulked.keys() and plain
    assert all(np.allclose(plain[k], bulked[k]) for k in plain)


def _run(cfg, bulk, said):  # noqa: ANN001, ANN202
    store = runtime.open_store(cfg, must_exist=False)
    try:
        return index_run.run_index(
            store, runtime.index_source(cfg), runtime.index_place(cfg),
            runtime.index_embedder(cfg), options=runtime.chunk_options(cfg),
            announce=said.append, bulk=bulk,
        )  # fmt: skip
    finally:
        store.close()


def _vectors(cfg) -> dict[str, np.ndarray]:  # noqa: ANN001
    import sqlite3

    conn = sqlite3.connect(cfg.index_dir / "vectors.sqlite")
    try:
        rows = conn.execute("SELECT key, v FROM vec").fetchall()
    finally:
        conn.close()
    return {str(r[0]): np.frombuffer(r[1], np.float16) for r in rows}
