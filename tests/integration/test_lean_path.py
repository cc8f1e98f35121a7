"""The in-process cold path stays lean (issue 8 item 3, issue 12 item 10).

`casper search --mode bm25` runs in a fresh interpreter (CASPER_SERVICE=0) against a real index
built with the fake embedder; the child reports which heavy libraries it imported. A reranker
that can't be loaded is said in one line, once, remembered in the data dir, and shown by doctor.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic import build_demo_corpus
from tests.fakes_search import HashEmbedder

REPO = Path(__file__).resolve().parents[2]
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


def _index(home: Path, src, monkeypatch: pytest.MonkeyPatch, rerank_model: str) -> None:  # noqa: ANN001
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    home.mkdir(parents=True)
    (home / "config.toml").write_text(f'rerank_model = "{rerank_model}"\n')
    result = CliRunner().invoke(
        app,
        ["index", "--home", str(home), "--chat-db", str(src.chat_db),
         "--contacts", str(src.contacts), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def _child(home: Path, *args: str) -> tuple[int, str, list[str], list[str]]:
    """(exit code, stdout, stderr lines without the report, heavy modules imported)."""
    env = {
        **os.environ,
        "CASPER_HOME": str(home),
        "CASPER_SERVICE": "0",
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": "80",  # a narrow terminal: the notice must still be one line
    }
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(list(args))],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    lines = proc.stderr.splitlines()
    report = [ln for ln in lines if ln.startswith("HEAVY=")]
    assert report, proc.stderr
    rest = [ln for ln in lines if not ln.startswith("HEAVY=") and not ln.startswith("WARNING")]
    return proc.returncode, proc.stdout, rest, json.loads(report[-1][len("HEAVY=") :])


def test_bm25_search_imports_no_model_library_and_says_a_missing_reranker_once(
    demo_src,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "no-such-reranker"
    _index(home, demo_src, monkeypatch, str(missing))

    code, out, err, heavy = _child(home, "search", "--mode", "bm25", "sushi", "--json")
    assert code == 0, err
    assert json.loads(out)["hits"], "bm25 finds the planted sushi messages"
    assert heavy == []
    assert len(err) == 1 and err[0].startswith("rerank off:") and str(missing) in err[0]
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
    demo_src,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    from casper.backends import factory
    from casper.backends.optional import load_reranker
    from casper.config import load_config

    home = tmp_path / "home"
    model = tmp_path / "reranker-later"
    _index(home, demo_src, monkeypatch, str(model))
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
    demo_src,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    home = tmp_path / "home"
    _index(home, demo_src, monkeypatch, "cross-encoder/ms-marco-MiniLM-L6-v2")
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))  # no model cache at all
    code, _, err, _ = _child(home, "search", "--mode", "bm25", "sushi", "--json")
    assert code == 0 and len(err) == 1 and err[0].startswith("rerank off:"), err
    code, _, err, heavy = _child(home, "search", "--mode", "bm25", "sushi", "--json")
    assert (code, err, heavy) == (0, [], [])


def test_a_bm25_retriever_loads_the_embedder_only_for_a_vector_and_checks_it(
    demo_src,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    from casper.backends import factory
    from casper.config import load_config
    from casper.errors import IndexMismatch
    from casper.runtime import make_retriever
    from casper.store.db import Store

    home = tmp_path / "home"
    _index(home, demo_src, monkeypatch, str(tmp_path / "no-reranker"))
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
    assert retriever.search("sushi", mode="bm25") and built == []
    assert retriever.search("sushi", mode="hybrid") and built == [64]  # loaded on demand, once
    assert retriever.search("sushi", mode="vector") and built == [64]

    monkeypatch.setattr(factory, "make_embedder", make(32))  # not the model the index has
    other = make_retriever(cfg, store, mode="bm25")
    assert other.search("sushi", mode="bm25")
    with pytest.raises(IndexMismatch):
        other.search("sushi", mode="vector")
    store.close()
