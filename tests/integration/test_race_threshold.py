"""A bulk run (BULK_CHUNKS or more to embed) races the engines; a phone-sized first index and a
handful of new messages keep the default engine (measured: there the race cannot pay)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from casper.app import runtime
from casper.config import load_config
from casper.indexer import run as index_run
from casper.protocols import Embedder
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.bulk import append_messages
from tests.fakes_search import HashEmbedder
from tests.helpers import use_fake_embedder


def test_a_phone_sized_first_index_keeps_the_default_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = build_demo_corpus(tmp_path / "src", scale=0.25)
    src = corpus.chat_db.parent
    use_fake_embedder(monkeypatch, HashEmbedder(64))
    cfg = load_config(tmp_path / "home", chat_db=src / "chat.db", contacts=src / "AddressBook")
    asked: list[int] = []

    def bulk(default: Callable[[], Embedder], check: Callable, said: Callable) -> Embedder:
        asked.append(1)
        return default()

    first = _run(cfg, bulk)
    assert first.vectors is not None and 300 <= first.vectors.embedded < 2_000
    assert asked == []  # below BULK_CHUNKS: no second engine loaded, no race


def test_a_bulk_run_races_the_engines_and_a_few_new_ones_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_run, "BULK_CHUNKS", 300)  # a quarter demo counts as bulk here
    corpus = build_demo_corpus(tmp_path / "src", scale=0.25)
    src = corpus.chat_db.parent
    default = HashEmbedder(64)
    use_fake_embedder(monkeypatch, default)
    cfg = load_config(tmp_path / "home", chat_db=src / "chat.db", contacts=src / "AddressBook")
    asked: list[int] = []

    def bulk(
        default: Callable[[], Embedder], check: Callable[[Embedder], None], said: Callable
    ) -> Embedder:
        asked.append(1)
        return default()

    first = _run(cfg, bulk)
    assert first.vectors is not None and 300 <= first.vectors.embedded < 2_000
    assert asked == [1]
    append_messages(src / "chat.db", 5)
    second = _run(cfg, bulk)
    assert second.vectors is not None and 0 < second.vectors.embedded < 50
    assert asked == [1]


def _run(cfg, bulk):  # noqa: ANN001, ANN202
    store = runtime.open_store(cfg, must_exist=False)
    try:
        return index_run.run_index(
            store, runtime.index_source(cfg), runtime.index_place(cfg),
            runtime.index_embedder(cfg), options=runtime.chunk_options(cfg), bulk=bulk,
        )  # fmt: skip
    finally:
        store.close()


def test_the_suites_fake_models_never_meet_a_real_bulk_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every index the suite builds replaces `make_embedder` with a fake: then no bulk engine
    is offered, whatever the threshold (a real one would load torch beside the fake)."""
    cfg = load_config(tmp_path / "home")
    assert runtime.bulk_embedder(cfg) is not None  # the product's own factory: raced
    use_fake_embedder(monkeypatch)
    assert runtime.bulk_embedder(cfg) is None
