"""A first index's chunking spread over worker processes (casper.indexer.chunk_workers) writes
the very rows a single process writes, in the same order; a later run with a few new messages
chunks in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.app import runtime
from casper.config import load_config
from casper.indexer import chunk_workers
from casper.indexer import run as index_run
from ingest.synthetic.bulk import append_messages, build_bulk_chat_db
from tests.helpers import use_fake_embedder


def _index(home: Path, chat_db: Path) -> list[tuple]:
    cfg = load_config(home, chat_db=chat_db, contacts=None)
    store = runtime.open_store(cfg, must_exist=False)
    try:
        index_run.run_index(
            store, runtime.index_source(cfg), runtime.index_place(cfg),
            runtime.index_embedder(cfg), options=runtime.chunk_options(cfg),
        )  # fmt: skip
    finally:
        store.close()
    import lancedb

    table = lancedb.connect(cfg.index_dir).open_table("chunks").to_arrow()
    cols = ("id", "chat_id", "text", "embed_text", "content_hash", "dates", "cjk", "rowids")
    return list(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def test_workers_write_the_rows_one_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_db = tmp_path / "chat.db"
    build_bulk_chat_db(chat_db, n_messages=4000, n_people=8)
    use_fake_embedder(monkeypatch)
    alone = _index(tmp_path / "alone", chat_db)
    used: list[int] = []
    real = chunk_workers.chunk_group

    monkeypatch.setattr(chunk_workers, "MIN_MESSAGES", 1)
    monkeypatch.setattr(chunk_workers, "workers", lambda: 2)
    pool = chunk_workers.Pool.chunk

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        for got in pool(self, *args, **kwargs):
            used.append(got[0].num_rows)
            yield got

    monkeypatch.setattr(chunk_workers.Pool, "chunk", counted)
    spread = _index(tmp_path / "spread", chat_db)
    assert real is chunk_workers.chunk_group
    assert len(used) > 1 and sum(used) == len(spread)  # the workers wrote every row
    assert spread == alone and len(alone) > 500

    append_messages(chat_db, 5)  # a later run: a few new messages, chunked here
    used.clear()
    _index(tmp_path / "spread", chat_db)
    assert used == []
