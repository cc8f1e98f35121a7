"""`casper index` says what it is doing, stage by stage, on stderr: plain lines when stderr is
not a terminal (logs, CI), nothing but the JSON document with --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

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
                      "writing index", "building text index", "embedding chunks")
    ]  # fmt: skip
    chunked = next(line for line in lines if line.startswith("casper index: chunking chats: done"))
    assert chunked.split("done, ")[1].split(" messages")[0].replace(",", "").isdigit()
    assert any(line.startswith("casper index: embedding chunks: done, ") for line in lines)


def test_index_json_off_a_terminal_prints_only_the_document(index_args: list[str]) -> None:
    result = runner.invoke(app, [*index_args, "--json"])
    assert result.exit_code == 0, result.output
    assert "casper index:" not in result.stderr
    assert json.loads(result.stdout)["chunks_total"] > 0
