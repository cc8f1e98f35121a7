"""OpenAIEngine and `casper ask --base-url` against the real `mlx_lm.server` (a local
OpenAI-compatible server, installed with mlx-lm) serving tiny self-built models on loopback:
streaming and usage, native tool calls parsed by the server, the whole agent with citations,
a server killed mid-answer, a server that stops answering, and `casper doctor`.

The random tiny Qwen writes gibberish; the tool-calling one (tests.models) answers every
prompt with one search_messages call, so the server's own tool-call parsing is exercised.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.agent.tools import SPECS
from casper.backends.openai_engine import OpenAIEngine
from casper.cli import app
from casper.errors import ModelServerFailed
from casper.protocols import ChatMessage
from tests.helpers import use_fake_search_models
from tests.model_servers import LOOPBACK, MlxServer, mlx_server
from tests.models import build_tool_calling_qwen3

pytestmark = [pytest.mark.slow, pytest.mark.allow_hosts(LOOPBACK)]
runner = CliRunner()

QUESTION = (
    ChatMessage("system", "You answer questions about the user's messages."),
    ChatMessage("user", "When did Sam and I plan Thanksgiving?"),
)
THANKSGIVING = {"name": "search_messages", "arguments": {"query": "thanksgiving"}}


@pytest.fixture(scope="module")
def gibberish(
    tiny_qwen_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MlxServer]:
    """mlx_lm.server with the random tiny Qwen (it writes until max_tokens)."""
    log = tmp_path_factory.mktemp("mlx-server") / "server.log"
    with mlx_server(tiny_qwen_path, log) as server:
        yield server


@pytest.fixture(scope="module")
def caller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlxServer]:
    """mlx_lm.server with a tiny Qwen that always calls search_messages("thanksgiving")."""
    root = tmp_path_factory.mktemp("tool-caller")
    model = build_tool_calling_qwen3(root / "model", THANKSGIVING)
    with mlx_server(model, root / "server.log") as server:
        yield server


def test_a_reply_streams_with_usage_and_the_server_answers_as_default_model(
    gibberish: MlxServer,
) -> None:
    pieces: list[str] = []
    engine = OpenAIEngine(gibberish.base_url, "default_model", max_new_tokens=16)
    before = gibberish.completions_served()
    reply = engine.chat(QUESTION, (), on_token=pieces.append)
    assert len(pieces) > 1 and "".join(pieces).strip() == reply.text != ""
    assert reply.prompt_tokens > 20 and reply.completion_tokens == 16
    assert reply.finish_reason == "length"
    assert reply.prompt_s > 0 and reply.generation_s > 0
    assert gibberish.completions_served() == before + 1  # in the server's own log


def test_the_servers_tool_calls_come_back_as_calls(caller: MlxServer) -> None:
    engine = OpenAIEngine(caller.base_url, "default_model", max_new_tokens=16)
    shown: list[str] = []
    reply = engine.chat(QUESTION, SPECS, on_token=shown.append)
    assert [(c.name, dict(c.arguments)) for c in reply.tool_calls] == [
        ("search_messages", {"query": "thanksgiving"})
    ]
    assert reply.tool_calls[0].id  # the server's id, sent back with the result
    assert engine.native_tools is True and reply.finish_reason == "tool_calls"
    assert shown == [] and reply.text == ""  # a call is not an answer to show
    # the result goes back in the server's shape, and the server renders it
    after = (
        *QUESTION,
        ChatMessage("assistant", "", reply.tool_calls),
        ChatMessage("tool", "[#2441] me: thanksgiving at my place?", name="search_messages"),
    )
    assert engine.chat(after, SPECS).tool_calls[0].name == "search_messages"


def _ask(home: Path, server: MlxServer, *extra: str) -> tuple[dict, str]:
    result = runner.invoke(
        app,
        ["ask", "when did Sam and I plan Thanksgiving?", "--base-url", server.base_url,
         "--model", "default_model", "--json", "--home", str(home), *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_ask_through_the_server_answers_with_the_thanksgiving_messages(
    caller: MlxServer, demo_home: Path
) -> None:
    """The whole agent through the real server: its tool call runs, the answer cites the
    Thanksgiving messages, and the server's log shows each completion it served."""
    before = caller.completions_served()
    doc, _ = _ask(demo_home, caller)
    assert doc["model"] == "default_model" and doc["llm_server"] == caller.base_url
    called = {"name": "search_messages", "arguments": {"query": "thanksgiving"}, "ok": True,
              "prefetch": False}  # fmt: skip
    assert called in doc["tool_calls"]  # the model's own call, beside the prefetch search
    # this model answers every prompt with a tool call: the answer is the loop's own summary
    # of what its searches found, said as such (not "cited", which only a model's reply earns)
    assert doc["citations"] and doc["grounding"] == "fallback"
    assert all("thanksgiving" in c["text"].lower() for c in doc["citations"][:1])
    assert "model_unavailable" not in doc["guards"]
    served = caller.completions_served() - before
    assert served == doc["iterations"] + 1  # the loop's calls and the synthesis pass
    usage = doc["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["first_token_s"] > 0 and usage["tokens_per_s"] > 0


def test_a_server_killed_mid_answer_is_said_and_search_answers(
    tiny_qwen_path: Path, tmp_path: Path
) -> None:
    with mlx_server(tiny_qwen_path, tmp_path / "server.log", max_tokens=4000) as server:
        engine = OpenAIEngine(server.base_url, "default_model", max_new_tokens=4000)
        shown: list[str] = []

        def kill_on_first_token(text: str) -> None:
            if not shown:
                os.kill(server.proc.pid, signal.SIGKILL)
            shown.append(text)

        with pytest.raises(ModelServerFailed) as info:
            engine.chat(QUESTION, (), on_token=kill_on_first_token)
    assert shown and "broke off" in info.value.message
    assert server.base_url in info.value.message


def test_a_server_that_stops_answering_times_out(tiny_qwen_path: Path, tmp_path: Path) -> None:
    with mlx_server(tiny_qwen_path, tmp_path / "server.log") as server:
        os.kill(server.proc.pid, signal.SIGSTOP)  # it accepts connections, and says nothing
        engine = OpenAIEngine(server.base_url, "default_model", timeout_s=2.0)
        with pytest.raises(ModelServerFailed) as info:
            engine.chat(QUESTION, ())
    assert info.value.message.endswith("said nothing for 2 s")


def test_ask_says_when_the_server_is_gone_and_answers_from_search(
    demo_home: Path, tmp_path: Path, tiny_qwen_path: Path
) -> None:
    with mlx_server(tiny_qwen_path, tmp_path / "server.log") as server:
        pass  # started and stopped: nothing listens on its port now
    doc, stderr = _ask(demo_home, server)
    assert "answering from search alone: cannot connect to the model server" in stderr
    assert doc["guards"] == [] and doc["notices"] == ["model_unavailable"] and doc["citations"]


def test_doctor_shows_the_server_and_whether_it_answers(
    gibberish: MlxServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'llm_base_url = "{gibberish.base_url}"\nllm_model = "default_model"\n'
    )
    result = runner.invoke(app, ["doctor", "--json", "--home", str(home)])
    check = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "language model")
    assert check["status"] == "ok"
    assert check["detail"].startswith(f"default_model from the OpenAI-compatible server at "
                                      f"{gibberish.base_url}: answers")  # fmt: skip


@pytest.fixture
def demo_home(
    demo_corpus,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> Path:
    """The demo corpus indexed with the fake embedder and reranker (the engine stays real)."""
    from tests.helpers import index_home

    home = tmp_path / "home"
    use_fake_search_models(monkeypatch)
    index_home(home, demo_corpus, "--json")
    return home


@pytest.fixture(scope="module")
def demo_corpus(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    from ingest.synthetic import build_demo_corpus

    return build_demo_corpus(tmp_path_factory.mktemp("demo") / "src")
