"""Switching the source chat.db never mixes two histories.

Two different chat.dbs indexed into one home: the store resets and the chunk index drops every
chunk of the first history; a database that fails mid-read leaves the previous store intact.
Real SQLite + LanceDB; the embedder is the test fake.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import casper.indexer.pipeline as pipeline
from casper.cli import app
from casper.store.db import Store
from ingest.errors import ChatDbCorrupt
from ingest.synthetic import ChatDbWriter, build_demo_corpus
from tests.fakes_search import HashEmbedder, OverlapReranker

runner = CliRunner()


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(first history with a word only it has, a second, different history)."""
    base = tmp_path_factory.mktemp("switch")
    first = build_demo_corpus(base / "first", scale=0.2).chat_db.parent
    with ChatDbWriter(first / "chat.db") as w:
        # a chat the second history doesn't have (its chat ids stop earlier)
        handle = w.add_handle("+14155550100")
        chat = w.add_chat([handle], display_name="Airship club")
        w.add_message(chat, "the zeppelin tickets are in the drawer", from_me=False,
                      handle=handle, ts=1_700_000_000.0)  # fmt: skip
    second = build_demo_corpus(base / "second", seed=11, scale=0.1).chat_db.parent
    return first, second


@pytest.fixture(autouse=True)
def _fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    monkeypatch.setattr(factory, "make_reranker", lambda cfg: (OverlapReranker(), None))


def _index(home: Path, src: Path) -> dict:
    result = runner.invoke(app, ["index", "--home", str(home), "--chat-db", str(src / "chat.db"),
                                 "--contacts", str(src / "AddressBook"), "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _search(home: Path, query: str, mode: str = "bm25") -> list[dict]:
    result = runner.invoke(app, ["search", query, "--mode", mode, "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["hits"]


def test_a_second_chat_db_replaces_the_first_history_in_store_and_index(
    sources: tuple[Path, Path], tmp_path: Path
) -> None:
    first, second = sources
    home = tmp_path / "home"
    _index(home, first)
    assert _search(home, "zeppelin")
    report = _index(home, second)
    assert _search(home, "zeppelin") == []
    hybrid = _search(home, "zeppelin tickets drawer", mode="hybrid")
    assert not any("zeppelin" in m["text"] for h in hybrid for m in h["messages"])
    store = Store.open(home / "casper.sqlite")
    names = {c.name for c in store.chats()}
    manifest = json.loads((home / "index.lance" / "manifest.json").read_text())
    assert manifest["source"]["chat_db"] == str((second / "chat.db").resolve())
    assert manifest["source"]["store_id"] == store.get_meta("store_id")
    store.close()
    # only the second history's chunks are left: as many as a fresh index of it has
    assert _index(tmp_path / "fresh", second)["chunks_total"] == report["chunks_total"]
    assert {h["chat"] for h in hybrid} <= names


def test_a_database_failing_mid_read_leaves_the_previous_store_intact(
    sources: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = sources
    home = tmp_path / "home"
    before = _index(home, first)
    real_pages = pipeline.iter_pages

    def failing_pages(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        pages = real_pages(*args, **kwargs)
        yield next(pages)
        raise ChatDbCorrupt("database disk image is malformed")

    monkeypatch.setattr(pipeline, "iter_pages", failing_pages)
    failed = runner.invoke(app, ["index", "--home", str(home), "--chat-db",
                                 str(second / "chat.db"), "--json"])  # fmt: skip
    assert failed.exit_code == 1 and "error:" in failed.output
    store = Store.open(home / "casper.sqlite")
    kept = store.message_count() - store.message_count(kind="system")
    assert kept == before["messages_total"]
    assert store.get_meta("source") == str((first / "chat.db").resolve())
    store.close()
    assert _search(home, "zeppelin")  # the index still matches the store it came from
