"""Only a generation waits for a generation: in `casper serve` a refused or failing
model server, or an answer from search alone, returns at once while another answer waits on a
slow server; a server's reply is capped (`llm_max_tokens`) and its first token has its own,
longer limit (`llm_first_token_timeout_s`). Fake model servers: stdlib HTTP on loopback."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from casper.backends.openai_engine import OpenAIEngine
from casper.errors import ModelServerFailed
from casper.protocols import ChatMessage
from casper.service import client
from tests.model_servers import Seen, chunk, free_port, scripted_server, send_json, send_sse

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])
QUESTION = "when did Sam and I plan Thanksgiving?"
ASKED = (ChatMessage("system", "You answer."), ChatMessage("user", "when is thanksgiving?"))
SLOW_S = 6.0


@pytest.mark.slow  # a service and a 6 s generation: ~20 s
def test_a_refusal_and_search_alone_do_not_wait_behind_a_slow_server(
    home: Path,
    services,  # noqa: ANN001
) -> None:
    services.start(home, "--fakes", "embedder,reranker")  # the real engine factory
    generating = threading.Event()

    def slow(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        if seen.method == "GET":
            send_json(handler, 200, {"object": "list", "data": [{"id": "m"}]})
            return
        generating.set()
        time.sleep(SLOW_S)
        send_sse(handler, [chunk("Nothing about that."), chunk(finish="stop")])

    with scripted_server(slow) as server:
        waiting: dict = {}
        ask = {"question": QUESTION, "base_url": server.base_url, "model": "m"}
        first = threading.Thread(target=lambda: waiting.update(client.call(home, "ask", ask)))
        first.start()
        assert generating.wait(30)  # the slow server is generating
        refused = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
        for args in (
            {"question": QUESTION, "base_url": refused, "model": "m"},
            {"question": QUESTION, "no_llm": True},
        ):
            started = time.perf_counter()
            doc = client.call(home, "ask", args)
            took = time.perf_counter() - started
            assert took < 1.0, (args, took)
            assert doc["citations"] and doc["model"] is None
        first.join(60)
    assert waiting and waiting["llm_server"] == server.base_url


def test_a_server_that_ignores_max_tokens_is_cut_at_the_cap() -> None:
    pieces = [chunk(f"w{i} ") for i in range(200)] + [chunk(finish="stop")]
    with scripted_server(lambda h, s: send_sse(h, pieces)) as server:
        reply = OpenAIEngine(server.base_url, "m", max_new_tokens=20).chat(ASKED, ())
        asked = server.posts()[0].body
    assert asked["max_tokens"] == 20
    assert len(reply.text.split()) <= 21 and reply.finish_reason == "length"


def test_the_first_token_has_its_own_limit_named_in_the_hint() -> None:
    def thinking(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        time.sleep(1.5)  # reading the prompt: longer than the silence allowed between tokens

    with scripted_server(thinking) as server:
        slow_start = OpenAIEngine(server.base_url, "m", timeout_s=0.3, first_token_timeout_s=0.6)
        with pytest.raises(ModelServerFailed) as info:
            slow_start.chat(ASKED, ())
    assert "sent no first token in 0.6 s" in info.value.message
    assert "llm_first_token_timeout_s" in (info.value.hint or "")


def test_the_config_reaches_the_server_engine(tmp_path: Path) -> None:
    from casper.backends.factory import make_server_engine
    from casper.config import load_config

    (tmp_path / "config.toml").write_text("llm_max_tokens = 99\nllm_first_token_timeout_s = 77\n")
    engine = make_server_engine(load_config(tmp_path), "http://127.0.0.1:8080/v1")
    assert isinstance(engine, OpenAIEngine)
    assert engine.max_new_tokens == 99 and engine.first_token_timeout_s == 77
