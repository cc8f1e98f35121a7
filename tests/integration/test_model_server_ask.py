"""`casper ask` with a model server, wherever it runs: the server's URL reaches the engine
(in process and through the service), a remote one allowed by the config is said on every
answer, and a server that fails mid-answer leaves the answer to search, said once per answer.
The engine is scripted here (no network); the real server: tests/slow/test_model_server.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from casper.config import Config
from casper.errors import CasperError, ModelServerFailed
from casper.protocols import ChatMessage, Reply, ToolSpec
from casper.service import client
from tests.service_helpers import fake_factory, status
from tests.service_server import SearchThenAnswerEngine

runner = CliRunner()
QUESTION = "when did Sam and I plan Thanksgiving?"


def _engines(monkeypatch: pytest.MonkeyPatch, make: Callable[[Config], object]) -> list[Config]:
    """Fake search models, and `make` as the engine factory; returns the configs it got."""
    import casper.backends.factory as factory

    fake_factory(monkeypatch)
    built: list[Config] = []

    def engine(cfg: Config) -> object:
        built.append(cfg)
        return make(cfg)

    monkeypatch.setattr(factory, "make_engine", engine)
    return built


def _ask(home: Path, *extra: str) -> tuple[dict, str]:
    result = runner.invoke(app, ["ask", QUESTION, "--json", "--home", str(home), *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_a_remote_server_allowed_in_the_config_is_said_on_every_answer(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _engines(monkeypatch, lambda cfg: SearchThenAnswerEngine())
    with (home / "config.toml").open("a") as config:
        config.write('llm_base_url = "https://llm.example.com/v1/"\nallow_remote_llm = true\n')
    notice = "sent to llm.example.com (not this machine; allow_remote_llm = true)"
    for _ in range(2):  # every answer, not once per data dir
        doc, stderr = _ask(home)
        assert notice in stderr
        assert doc["llm_server"] == "https://llm.example.com/v1" and doc["citations"]
    assert {cfg.llm_base_url for cfg in built} == {"https://llm.example.com/v1"}


def test_a_local_server_is_not_announced(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = _engines(monkeypatch, lambda cfg: SearchThenAnswerEngine())
    doc, stderr = _ask(home, "--base-url", "http://localhost:8080/v1", "--model", "qwen3:4b")
    assert "not this machine" not in stderr and doc["llm_server"] == "http://localhost:8080/v1"
    assert (built[0].llm_base_url, built[0].llm_model) == ("http://localhost:8080/v1", "qwen3:4b")
    _, stderr = _ask(home, "--no-llm", "--base-url", "http://203.0.113.7/v1")
    assert "refusing" not in stderr  # no model asked for: no server to judge


class FailingEngine:
    """Searches once, then the server goes away in the middle of the next reply."""

    name = "default_model"

    def __init__(self) -> None:
        self.inner = SearchThenAnswerEngine()
        self.calls = 0

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        self.calls += 1
        if self.calls > 1:
            if on_token is not None:
                on_token("Thanks")
            raise ModelServerFailed(
                "the model server at http://127.0.0.1:8080/v1 broke off mid-reply (…)"
            )
        return self.inner.chat(messages, tools, on_token)


def test_a_server_failing_mid_answer_leaves_the_answer_to_search(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _engines(monkeypatch, lambda cfg: FailingEngine())
    for _ in range(2):  # said with each answer it happens to
        doc, stderr = _ask(home, "--base-url", "http://127.0.0.1:8080/v1")
        assert "answering from search alone: the model server at http://127.0.0.1:8080/v1 " \
            "broke off mid-reply" in stderr  # fmt: skip
        assert "hint: check that the server runs" in stderr
        assert (
            doc["guards"] == [] and doc["notices"] == ["model_unavailable"] and doc["model"] is None
        )
        assert not doc["answer"].startswith("Thanks")  # the broken-off reply is not the answer
        assert any("thanksgiving" in c["text"].lower() for c in doc["citations"])


def test_the_server_url_reaches_the_service_and_is_checked_there(
    home: Path,
    services,  # noqa: ANN001
) -> None:
    services.start(home)  # its engine is SearchThenAnswerEngine whatever the config
    url = "http://127.0.0.1:9/v1"
    doc = client.call(home, "ask", {"question": QUESTION, "base_url": url, "model": "m"})
    assert doc["llm_server"] == url and doc["citations"]
    assert status(home)["loaded"]["engines"] == [f"m at {url}"]
    events: list[dict] = []
    with pytest.raises(CasperError) as info:
        client.call(
            home, "ask", {"question": QUESTION, "base_url": "http://192.0.2.1/v1"},
            on_event=events.append,
        )  # fmt: skip
    assert "would leave this machine" in info.value.message
    assert "allow_remote_llm = true" in (info.value.hint or "")
    assert not any(e["event"] == "tool" for e in events)  # refused before any work


def test_chat_sends_every_turn_to_the_server_it_was_given(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _engines(monkeypatch, lambda cfg: SearchThenAnswerEngine())
    turns = "when did Sam and I plan Thanksgiving?\nwho is bringing pie?\n/quit\n"
    result = runner.invoke(
        app,
        ["chat", "--base-url", "http://127.0.0.1:8080/v1", "--model", "qwen3:4b", "--home",
         str(home)],
        input=turns,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # one engine for the session (built once, used for both turns)
    assert [(c.llm_base_url, c.llm_model) for c in built] == [
        ("http://127.0.0.1:8080/v1", "qwen3:4b")
    ]
    assert result.stdout.count("Here is what your messages say") == 2
