"""`casper index` as one use-case (casper.indexer.run.run_index): it gets the store, the source,
the index's place and an embedder supply, and returns what it did; and the one generation it
publishes, which every long-lived reader follows.

Real store, LanceDB and side file; the hash embedder stands in for the model.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from casper.app import runtime
from casper.app.runtime import Runtime
from casper.config import Config, load_config
from casper.index.files import GENERATION, read_generation
from casper.indexer.pipeline import Progress
from casper.indexer.run import EmbedderSupply, IndexRunReport, run_index
from casper.protocols import Embedder
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.bulk import append_messages
from ingest.synthetic.demo import DemoCorpus
from tests.fakes_search import HashEmbedder
from tests.helpers import child_env, index_args, index_json, run_child, use_fake_embedder

# `casper ARGS...` in a fresh interpreter; reports whether LanceDB was imported and how many
# embedders were built (the hash embedder stands in for every one)
NOOP_CHILD = """
import json, sys
import casper.backends.factory as factory
from tests.fakes_search import HashEmbedder
built = []
factory.make_embedder = lambda cfg: built.append(1) or HashEmbedder(64)
from casper.cli import app
sys.argv = ["casper", *json.loads(sys.argv[1])]
try:
    app()
except SystemExit as exc:
    code = exc.code or 0
report = {"lancedb": "lancedb" in sys.modules, "built": len(built), "exit": code}
print("REPORT=" + json.dumps(report), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> DemoCorpus:
    return build_demo_corpus(tmp_path_factory.mktemp("run") / "src", scale=0.3)


def _child_noop(home: Path, source: Path) -> dict:
    proc = run_child(NOOP_CHILD, index_args(home, source, "--json"), child_env())
    report = json.loads(proc.stderr.split("REPORT=")[-1])
    assert report["exit"] == 0, proc.stderr
    assert json.loads(proc.stdout)["noop"] is True
    return report


@pytest.mark.parametrize("how", ["--rebuild", "another path"])
def test_a_noop_run_after_a_run_that_embedded_nothing_stays_cheap(
    corpus: DemoCorpus, how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose chunks all have vectors already (a rebuild with the same model, the same
    history read from a copy) still records the vector status of the version it published, so
    the next no-op run answers from it: no LanceDB import, no model."""
    src = tmp_path / "src"
    shutil.copytree(corpus.chat_db.parent, src)
    home = tmp_path / "home"
    use_fake_embedder(monkeypatch)
    first = index_json(home, src)
    if how == "--rebuild":
        again = index_json(home, src, "--rebuild")
    else:
        copy = tmp_path / "copy"
        shutil.copytree(src, copy)
        again, src = index_json(home, copy), copy
    assert again["noop"] is False and again["chunks_total"] == first["chunks_total"]
    assert again["vectors_done"] == again["vectors_total"] == first["vectors_total"]
    assert _child_noop(home, src) == {"lancedb": False, "built": 0, "exit": 0}


def _count_supply(cfg: Config, built: list[Embedder]) -> EmbedderSupply:
    real = runtime.index_embedder(cfg)

    def supply(progress: Progress) -> Embedder:
        built.append(real(progress))
        return built[-1]

    return supply


def _run(cfg: Config, built: list[Embedder], said: list[str]) -> IndexRunReport:
    store = runtime.open_store(cfg, must_exist=False)
    try:
        return run_index(
            store, runtime.index_source(cfg), runtime.index_place(cfg), _count_supply(cfg, built),
            options=runtime.chunk_options(cfg), announce=said.append,
        )  # fmt: skip
    finally:
        store.close()


def test_the_run_returns_what_it_did_and_builds_an_embedder_only_when_it_needs_one(
    corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    shutil.copytree(corpus.chat_db.parent, src)
    use_fake_embedder(monkeypatch)
    cfg = load_config(tmp_path / "home", chat_db=src / "chat.db", contacts=src / "AddressBook")
    built: list[Embedder] = []
    said: list[str] = []

    first = _run(cfg, built, said)
    assert not first.ingest.noop and first.embedder is built[0]
    assert first.vectors is not None
    assert first.vectors.embedded == first.vectors.total == first.ingest.chunks_total > 0
    assert (first.generation.run, first.generation.version) == (1, first.generation.version)
    assert first.generation == read_generation(cfg.index_dir)

    noop = _run(cfg, built, said)
    assert noop.ingest.noop and noop.embedder is None and len(built) == 1  # no model
    assert noop.generation == first.generation  # nothing published
    assert noop.ingest.chunks_total == first.ingest.chunks_total
    assert (noop.vectors.done, noop.vectors.total) == (first.vectors.done, first.vectors.total)  # type: ignore[union-attr]

    append_messages(src / "chat.db", 200)
    more = _run(cfg, built, said)
    assert not more.ingest.noop and len(built) == 2
    assert more.generation.run == 2 and more.generation.number > first.generation.number
    assert more.vectors is not None and more.vectors.embedded > 0
    assert more.vectors.done == more.vectors.total == more.ingest.chunks_total
    assert said == []  # new chunks of this run are not "resuming" anything


def test_one_generation_record_and_the_readers_that_follow_it(
    corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`index.lance/generation.json` is the only generation: no counter in the data dir or in
    the side file. A long-lived Runtime reopens its data when a new run is published, and keeps
    it when a fill only added vectors (its index re-points the matrix by itself)."""
    src = tmp_path / "src"
    shutil.copytree(corpus.chat_db.parent, src)
    home = tmp_path / "home"
    use_fake_embedder(monkeypatch)
    index_json(home, src)
    cfg = load_config(home)
    assert not (home / "index.generation").exists()
    with sqlite3.connect(cfg.index_dir / "vectors.sqlite") as conn:
        assert [k for (k,) in conn.execute("SELECT k FROM meta")] == ["status"]
    record = json.loads((cfg.index_dir / GENERATION).read_text())
    assert set(record) == {"generation", "version", "run", "published"}

    rt = Runtime(cfg)
    retriever = rt.retriever()
    assert retriever.hits("pumpkin pie") and not rt.refresh()
    more_vectors = runtime.open_index(cfg, HashEmbedder(64)).publish_vectors()
    assert more_vectors.run == rt.generation.run and more_vectors.number > rt.generation.number
    assert not rt.refresh() and rt.retriever() is retriever  # the index follows by itself
    assert rt.generation == more_vectors
    assert retriever.hits("pumpkin pie")
    assert retriever.index.generation == more_vectors  # it followed

    append_messages(src / "chat.db", 50)
    index_json(home, src)
    assert rt.refresh() and rt.retriever() is not retriever  # a new run: store and index anew
    assert rt.generation.run == more_vectors.run + 1


def test_a_replaced_index_numbers_on_from_the_one_it_replaces(
    corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another model makes `--rebuild` start a new directory; its generations go on from the old
    one's, so a reader holding the old one never sees a number it already had."""
    home = tmp_path / "home"
    use_fake_embedder(monkeypatch)
    index_json(home, corpus)
    before = read_generation(home / "index.lance")
    use_fake_embedder(monkeypatch, HashEmbedder(32))  # another model: the index starts afresh
    index_json(home, corpus, "--rebuild")
    after = read_generation(home / "index.lance")
    manifest = json.loads((home / "index.lance" / "manifest.json").read_text())
    assert manifest["dim"] == 32
    assert after.number > before.number and after.run > before.run


def test_a_chat_session_without_the_service_follows_a_new_run(
    corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`casper chat --no-service` keeps one Runtime for the whole session: like the service, it
    reopens the data when a `casper index` run published since the last question."""
    from casper.cli.transport import Session
    from ingest.synthetic import ChatDbWriter

    src = tmp_path / "src"
    shutil.copytree(corpus.chat_db.parent, src)
    home = tmp_path / "home"
    use_fake_embedder(monkeypatch)
    index_json(home, src)
    session = Session(load_config(home), no_service=True)
    ask = {"query": "quokka zeppelin", "mode": "bm25", "rerank": False}
    assert session.execute("search", ask)["hits"] == []
    with ChatDbWriter(src / "chat.db") as w:
        chat = w.conn.execute("SELECT MIN(ROWID) FROM chat").fetchone()[0]
        last = w.conn.execute("SELECT MAX(date) FROM message").fetchone()[0] / 1e9
        w.add_message(chat, "the quokka zeppelin lands at noon", from_me=True,
                      ts=978307200 + last + 60)  # fmt: skip
    index_json(home, src)
    hits = session.execute("search", ask)["hits"]
    assert any("quokka zeppelin" in m["text"] for h in hits for m in h["messages"])
    assert session.runtime is not None and session.runtime.loads["store"] == 2  # reopened once


def test_an_index_an_earlier_version_built_is_rebuilt_by_casper_index_keeping_its_vectors(
    corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new table layout (index schema 3: the `dates` column) must not leave an upgraded
    install with an index search cannot open, nor cost it a re-embedding of the history: a
    plain `casper index` rebuilds the table and keeps every vector (keyed by the text)."""
    from casper.errors import IndexMismatch
    from casper.index.files import MANIFEST, SCHEMA_VERSION

    src = tmp_path / "src"
    shutil.copytree(corpus.chat_db.parent, src)
    use_fake_embedder(monkeypatch)
    cfg = load_config(tmp_path / "home", chat_db=src / "chat.db", contacts=src / "AddressBook")
    built: list[Embedder] = []
    said: list[str] = []
    first = _run(cfg, built, said)
    # what an earlier version left: a table without the `dates` column, schema 2
    runtime.open_index(cfg, HashEmbedder(64)).table.drop_columns(["dates"])
    manifest = json.loads((cfg.index_dir / MANIFEST).read_text())
    (cfg.index_dir / MANIFEST).write_text(json.dumps({**manifest, "schema": 2}))

    with pytest.raises(IndexMismatch) as caught:
        runtime.open_index(cfg, HashEmbedder(64))
    assert "earlier version" in caught.value.message
    assert caught.value.hint is not None and "`casper index`" in caught.value.hint
    assert "--rebuild" not in caught.value.hint

    again = _run(cfg, built, said)  # nothing new in chat.db: the index is rebuilt all the same
    assert said == ["rebuilding the search index for this version of Casper (vectors are kept)"]
    assert not again.ingest.noop and again.ingest.chunks_total == first.ingest.chunks_total
    assert again.vectors is not None and again.vectors.embedded == 0  # every vector kept
    assert again.vectors.done == again.vectors.total == first.vectors.total  # type: ignore[union-attr]
    assert again.generation.number > first.generation.number
    assert json.loads((cfg.index_dir / MANIFEST).read_text())["schema"] == SCHEMA_VERSION
    index = runtime.open_index(cfg, HashEmbedder(64))
    dated = [r for r in index.scan(["id", "dates"]).to_pylist() if r["dates"]]
    assert dated  # the demo corpus mentions dates ("tomorrow", "next week"...)
    term = dated[0]["dates"].split()[0]
    assert dated[0]["id"] in {cid for cid, _ in index.dates_search([term], 50)}
    assert _run(cfg, built, said).ingest.noop  # and the next run has nothing to do
