"""The in-process cold path stays lean: no model library imported for a lexical search.

`casper search --mode bm25` runs in a fresh interpreter (CASPER_SERVICE=0) against a real index
built with the fake embedder; the child reports which heavy libraries it imported. A reranker
that can't be loaded is said in one line, once, remembered in the data dir, and shown by doctor.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic import build_demo_corpus
from tests.fakes_search import HashEmbedder
from tests.helpers import child_env, index_home, run_child, use_fake_embedder

HEAVY = ("torch", "sentence_transformers", "transformers", "mlx", "mlx_lm")
CHILD = """
import json, sys
from casper.cli import app
sys.argv = ["casper", *json.loads(sys.argv[1])]
code = 0
try:
    app()
except SystemExit as exc:
    code = exc.code or 0
heavy = [m for m in __MODULES__ if m in sys.modules]
print("HEAVY=" + json.dumps(heavy), file=sys.stderr)
sys.exit(code)
""".replace("__MODULES__", repr(HEAVY))


@pytest.fixture(scope="module")
def demo_src(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return build_demo_corpus(tmp_path_factory.mktemp("lean") / "src", scale=0.3)


@pytest.fixture
def indexed_with(demo_src, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN001, ANN201
    """`indexed_with(rerank_model)`: a home indexed with the fake embedder whose config names
    that reranker (a missing one, a hub id, a folder that appears later)."""

    def index(rerank_model: str) -> Path:
        home = tmp_path / "home"
        use_fake_embedder(monkeypatch)
        home.mkdir(parents=True)
        (home / "config.toml").write_text(f'rerank_model = "{rerank_model}"\n')
        index_home(home, demo_src, "--json")
        return home

    return index


def _child(home: Path, *args: str) -> tuple[int, str, list[str], list[str]]:
    """(exit code, stdout, stderr lines without the report, heavy modules imported)."""
    # a narrow terminal (COLUMNS): the notice must still be one line
    env = child_env(CASPER_HOME=str(home), HF_HUB_OFFLINE="1", COLUMNS="80")
    proc = run_child(CHILD, list(args), env)
    lines = proc.stderr.splitlines()
    report = [ln for ln in lines if ln.startswith("HEAVY=")]
    assert report, proc.stderr
    rest = [ln for ln in lines if not ln.startswith("HEAVY=") and not ln.startswith("WARNING")]
    return proc.returncode, proc.stdout, rest, json.loads(report[-1][len("HEAVY=") :])


def test_bm25_search_imports_no_model_library_and_says_a_missing_reranker_once(
    indexed_with,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    missing = tmp_path / "no-such-reranker"
    home = indexed_with(str(missing))

    code, out, err, heavy = _child(home, "search", "--mode", "bm25", "sushi", "--json")
    assert code == 0, err
    assert json.loads(out)["hits"], "bm25 finds the planted sushi messages"
    assert heavy == []
    assert len(err) == 1 and err[0].startswith("notice: rerank off:") and str(missing) in err[0]
    state = home / "notices.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert json.loads(state.read_text())["reranker"]["model"] == str(missing)

    code, out, err, heavy = _child(home, "search", "--mode", "bm25", "sushi", "--json")
    assert (code, err, heavy) == (0, [], [])
    assert json.loads(out)["hits"]

    doctor = CliRunner().invoke(app, ["doctor", "--home", str(home), "--json"])
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "reranker")
    assert check["status"] == "warn" and str(missing) in check["detail"] and check["hint"]


def test_a_reranker_that_appears_is_tried_again(
    indexed_with,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    from casper.app.optional_models import load_reranker
    from casper.backends import factory
    from casper.config import load_config

    model = tmp_path / "reranker-later"
    home = indexed_with(str(model))
    cfg = load_config(home)
    said: list[str] = []
    assert load_reranker(cfg, said.append) is None and len(said) == 1
    assert load_reranker(cfg, said.append) is None and len(said) == 1  # known: not retried
    model.mkdir()  # e.g. `casper pull` put it there
    tried: list[str] = []

    def fake_make_reranker(c):  # noqa: ANN001, ANN202
        tried.append(c.rerank_model)
        return "R", None

    monkeypatch.setattr(factory, "make_reranker", fake_make_reranker)
    assert load_reranker(cfg, said.append) == "R" and tried == [str(model)]
    assert "reranker" not in json.loads((home / "notices.json").read_text())


@pytest.mark.slow
def test_a_hub_reranker_missing_offline_is_one_line_without_library_noise(
    indexed_with,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    home = indexed_with("cross-encoder/ms-marco-MiniLM-L6-v2")
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))  # no model cache at all
    code, _, err, _ = _child(home, "search", "--mode", "bm25", "sushi", "--json")
    assert code == 0 and len(err) == 1 and err[0].startswith("notice: rerank off:"), err
    code, _, err, heavy = _child(home, "search", "--mode", "bm25", "sushi", "--json")
    assert (code, err, heavy) == (0, [], [])


def test_a_bm25_retriever_loads_the_embedder_only_for_a_vector_and_checks_it(
    indexed_with,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    from casper.app.runtime import make_retriever
    from casper.backends import factory
    from casper.config import load_config
    from casper.errors import IndexMismatch
    from casper.store.db import Store

    home = indexed_with(str(tmp_path / "no-reranker"))
    built: list[int] = []

    def make(dim: int):  # noqa: ANN202
        def build(cfg):  # noqa: ANN001, ANN202
            built.append(dim)
            return HashEmbedder(dim)

        return build

    cfg = load_config(home)
    store = Store.open(cfg.store_path)
    monkeypatch.setattr(factory, "make_embedder", make(64))
    retriever = make_retriever(cfg, store, mode="bm25")
    assert retriever.hits("sushi", mode="bm25") and built == []
    assert retriever.hits("sushi", mode="hybrid") and built == [64]  # loaded on demand, once
    assert retriever.hits("sushi", mode="vector") and built == [64]

    monkeypatch.setattr(factory, "make_embedder", make(32))  # not the model the index has
    other = make_retriever(cfg, store, mode="bm25")
    assert other.hits("sushi", mode="bm25")
    with pytest.raises(IndexMismatch):
        other.search("sushi", mode="vector")
    store.close()
