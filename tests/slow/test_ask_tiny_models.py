"""`casper ask` / `casper search` end to end through the REAL adapters on tiny self-built models.

The tiny Qwen has random weights, so its text is gibberish: these tests check the plumbing
(load, tools rendered, loop terminates, JSON shape), not answer quality.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic import build_tiny_corpus
from tests.helpers import index_home, use_fake_embedder

pytestmark = pytest.mark.slow
runner = CliRunner()


@pytest.fixture
def tiny_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_fake_embedder(monkeypatch)
    home = tmp_path / "home"
    index_home(home, build_tiny_corpus(tmp_path / "src"))
    return home


def test_ask_runs_the_real_mlx_engine_and_terminates(tiny_home: Path, tiny_qwen_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "ask",
            "when is thanksgiving?",
            "--home",
            str(tiny_home),
            "--model",
            str(tiny_qwen_path),
            "--max-iterations",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["model"] == str(tiny_qwen_path)
    assert 1 <= data["iterations"] <= 2
    assert data["tokens"]["prompt"] > 0 and data["tokens"]["completion"] > 0
    assert "model_unavailable" not in data["guards"]
    assert isinstance(data["citations"], list) and data["answer"]


def test_search_uses_the_real_cross_encoder(tiny_home: Path, tiny_cross_encoder_path: Path) -> None:
    (tiny_home / "config.toml").write_text(f'rerank_model = "{tiny_cross_encoder_path}"\n')
    result = runner.invoke(app, ["search", "thanksgiving", "--home", str(tiny_home), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["filters"]["rerank"] is True and data["hits"]
    assert "rerank off" not in result.stderr
