"""`casper index` says what it is doing, stage by stage, on stderr: plain lines when stderr is
not a terminal (logs, CI), nothing but the JSON document with --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.backends.embedder import MINILM_DIM, MINILM_SHA256
from casper.backends.placement import Placement
from casper.cli import app
from ingest.synthetic import build_demo_corpus
from tests.fakes_search import HashEmbedder

runner = CliRunner()


@pytest.fixture(scope="module")
def demo_src(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return build_demo_corpus(tmp_path_factory.mktemp("demo") / "src")


@pytest.fixture
def index_args(demo_src, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # noqa: ANN001
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    return ["index", "--home", str(tmp_path / "home"), "--chat-db", str(demo_src.chat_db),
            "--contacts", str(demo_src.contacts)]  # fmt: skip


def test_index_off_a_terminal_prints_every_stage_in_order(index_args: list[str]) -> None:
    result = runner.invoke(app, index_args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("casper index: ")]
    starts = [line.removesuffix(" …") for line in lines if line.endswith(" …")]
    assert starts == [
        f"casper index: {stage}"
        for stage in ("reading chat.db", "computing stats", "loading embedder", "chunking chats",
                      "writing index", "indexing text", "embedding chunks")
    ]  # fmt: skip
    chunked = next(line for line in lines if line.startswith("casper index: chunking chats: done"))
    assert chunked.split("done, ")[1].split(" messages")[0].replace(",", "").isdigit()
    assert any(line.startswith("casper index: embedding chunks: done, ") for line in lines)


def test_index_json_off_a_terminal_prints_only_the_document(index_args: list[str]) -> None:
    result = runner.invoke(app, [*index_args, "--json"])
    assert result.exit_code == 0, result.output
    assert "casper index:" not in result.stderr
    assert json.loads(result.stdout)["chunks_total"] > 0


def _torch_in(home: Path) -> None:
    """The home's embedder on torch (whose class the tests stand in for), not onnxruntime."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('embed_backend = "torch"\nembed_device = "cpu"\n')


class _BundledStandIn(HashEmbedder):
    """What the real factory builds for the bundled MiniLM, without torch: same identity."""

    def __init__(
        self, model: str, batch_size: int = 64, *, dim: int = MINILM_DIM, **_where: object
    ) -> None:
        super().__init__(dim)
        self.name, self.checksum = model, MINILM_SHA256


def test_the_bundled_model_loads_after_the_lexical_step(
    demo_src, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    import casper.backends.embedder as embedder_module
    from casper.index.chunk_index import vector_status_at

    home = tmp_path / "home"
    seen: list[object] = []

    def build(model: str, batch_size: int = 64, **_where: object) -> _BundledStandIn:
        seen.append(vector_status_at(home / "index.lance"))  # the lexical index, if written
        return _BundledStandIn(model, batch_size)

    # the real factory, so the bundled model's known identity is used (torch's class, stood in)
    monkeypatch.setattr(embedder_module, "SentenceTransformerEmbedder", build)
    _torch_in(home)
    args = ["index", "--home", str(home), "--chat-db", str(demo_src.chat_db),
            "--contacts", str(demo_src.contacts)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    done_before_load, total = seen[0]
    assert done_before_load == 0 and total > 0  # searchable lexically before the model loaded
    starts = [line for line in result.stderr.splitlines() if line.endswith(" …")]
    assert starts.index("casper index: indexing text …") < starts.index(
        "casper index: loading embedder …"
    )
    assert (
        json.loads(runner.invoke(app, ["doctor", "--json", "--home", str(home)]).stdout)["counts"][
            "vectors_done"
        ]
        == total
    )


def test_a_bundled_model_that_is_not_what_it_claims_is_refused(
    demo_src, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    import casper.backends.embedder as embedder_module

    wrong = lambda model, batch_size=64, **_: _BundledStandIn(model, batch_size, dim=64)  # noqa: E731
    monkeypatch.setattr(embedder_module, "SentenceTransformerEmbedder", wrong)
    home = tmp_path / "home"
    _torch_in(home)
    args = ["index", "--home", str(home), "--chat-db", str(demo_src.chat_db), "--no-contacts"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert "different settings" in result.stderr and "dim" in result.stderr


class _OnOnnx(HashEmbedder):
    """A fast stand-in that says where it runs, as the real embedders do."""

    placement = Placement("onnxruntime", "cpu", 2)


def test_the_embed_stage_says_where_and_how_fast(
    demo_src, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: _OnOnnx(64))
    args = ["index", "--home", str(tmp_path / "home"), "--chat-db", str(demo_src.chat_db),
            "--contacts", str(demo_src.contacts)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert "casper index: embedding chunks (CPU · onnxruntime) …" in lines
    done = [line for line in lines if "embedding chunks (CPU · onnxruntime): done, " in line]
    assert done and done[0].endswith(" chunks/s")
    summary = next(line for line in lines if line.strip().startswith("in "))
    assert " chunks/s, CPU · onnxruntime)" in summary

    again = runner.invoke(app, ["index", "--home", str(tmp_path / "home2"), *args[3:], "--json"])
    doc = json.loads(again.stdout)
    assert doc["embedder"] == {"backend": "onnxruntime", "device": "cpu", "threads": 2,
                               "notice": None}  # fmt: skip
    assert doc["vectors_new"] == doc["chunks_total"] > 0
    assert doc["embed_chunks_per_s"] > 0
