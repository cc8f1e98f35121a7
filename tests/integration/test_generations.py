"""Readers and the writer agree: a process that opened the index moves to the
generation a `casper index` in another process published — atomically, without errors.

Real LanceDB and SQLite, two processes: this test process is the long-lived reader (as the
service is), a child runs `casper index` with the fake embedder.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from casper.app.runtime import open_index
from casper.config import load_config
from casper.search.retriever import Retriever
from casper.store.db import Store
from ingest.synthetic import ChatDbWriter, build_demo_corpus
from tests.fakes_search import HashEmbedder, OverlapReranker
from tests.helpers import (
    CLI_WITH_HASH_EMBEDDER,
    child_env,
    index_args,
    index_json,
    run_child,
    use_fake_embedder,
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return build_demo_corpus(tmp_path_factory.mktemp("gen") / "src", scale=0.3)


def _sam_chat(w: ChatDbWriter) -> tuple[int, int]:
    chat = w.conn.execute("SELECT ROWID FROM chat WHERE guid LIKE '%+14155550132'").fetchone()[0]
    handle = w.conn.execute("SELECT ROWID FROM handle WHERE id='+14155550132'").fetchone()[0]
    return chat, handle


def _ids(hits: list) -> tuple[str, ...]:  # noqa: ANN001
    return tuple(sorted(h.chunk_id for h in hits))


def index_in_a_child_while(
    read: Callable[[], tuple[str, ...]], home: Path, src: Path, *extra: str
) -> tuple[dict, list[tuple[str, ...]]]:
    """`casper index --json` in another process (the writer) while a thread here calls `read`
    in a loop (the reader); (the writer's report, what each read returned). Both must succeed."""
    seen: list[tuple[str, ...]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def read_until_stopped() -> None:
        while not stop.is_set():
            try:
                seen.append(read())
            except BaseException as exc:  # noqa: BLE001 - any error fails the test below
                errors.append(exc)
                return

    thread = threading.Thread(target=read_until_stopped)
    thread.start()
    try:
        args = index_args(home, src, "--json", *extra)
        writer = run_child(CLI_WITH_HASH_EMBEDDER, args, child_env())
    finally:
        stop.set()
        thread.join(timeout=60)
    assert writer.returncode == 0, writer.stderr
    assert not errors, errors
    return json.loads(writer.stdout), seen


def test_a_reader_moves_to_the_new_generation_without_errors(
    template,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    src = tmp_path / "src"
    shutil.copytree(template.chat_db.parent, src)
    with ChatDbWriter(src / "chat.db") as w:
        chat, handle = _sam_chat(w)
        last = w.conn.execute("SELECT MAX(date) FROM message").fetchone()[0] / 1e9
        victim, _ = w.add_message(chat, "the zeppelin tickets are in the drawer", from_me=False,
                                  handle=handle, ts=978307200 + last + 86400)  # fmt: skip
    home = tmp_path / "home"
    use_fake_embedder(monkeypatch)
    index_json(home, src)

    # the reader: opened once, kept for the whole test (as the service keeps it)
    cfg = load_config(home)
    store = Store.open(cfg.store_path)
    index = open_index(cfg, HashEmbedder(64))
    reader = Retriever(index, HashEmbedder(64), OverlapReranker(), store=store)
    probe = "zeppelin quokka"
    old = _ids(reader.hits(probe, mode="bm25"))
    assert old and reader.hits("zeppelin", mode="hybrid")  # matrix loaded, rerank ran
    before = index.generation

    with ChatDbWriter(src / "chat.db") as w:
        w.hard_delete(victim)
        w.add_message(chat, "look at this quokka photo", from_me=False, handle=handle,
                      ts=978307200 + last + 2 * 86400)  # fmt: skip

    def read() -> tuple[str, ...]:
        seen = _ids(reader.hits(probe, mode="bm25"))
        reader.hits("sushi", mode="hybrid")  # vector leg + rerank (index.get)
        return seen

    written, seen = index_in_a_child_while(read, home, src)
    assert written["chunks_new"] > 0

    new = _ids(reader.hits(probe, mode="bm25"))
    assert index.generation.number > before.number and index.generation.run > before.run
    assert new and new != old
    # never a half-written index: each search saw the old generation or the new one
    assert set(seen) <= {old, new}, set(seen) - {old, new}
    assert reader.hits("zeppelin", mode="bm25") == []
    assert reader.hits("quokka", mode="bm25")
    # the in-memory matrix serves no deleted chunk, and rerank reads the new version
    fresh = open_index(cfg, HashEmbedder(64))
    live = set(fresh.scan(["id"])["id"].to_pylist())
    for mode in ("vector", "hybrid"):
        hits = reader.hits("zeppelin tickets drawer", mode=mode, k=50)
        assert hits and {h.chunk_id for h in hits} <= live
    assert not any(m.rowid == victim for h in hits for m in h.messages)
    store.close()


def test_a_reader_survives_a_full_rebuild_of_the_index(
    template,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    home = tmp_path / "home"
    src = template.chat_db.parent
    use_fake_embedder(monkeypatch)
    index_json(home, src)
    cfg = load_config(home)
    store = Store.open(cfg.store_path)
    reader = Retriever(open_index(cfg, HashEmbedder(64)), HashEmbedder(64), store=store)
    hits = _ids(reader.hits("sushi", mode="bm25"))
    assert hits
    _, seen = index_in_a_child_while(
        lambda: _ids(reader.hits("sushi", mode="bm25")), home, src, "--rebuild"
    )
    assert set(seen) == {hits}  # the same history, never a half-rebuilt index
    assert _ids(reader.hits("sushi", mode="bm25")) == hits  # same data, rebuilt files
    assert reader.hits("sushi", mode="hybrid")
    store.close()
