"""OpenAIEngine against scripted servers on loopback: what a server can do wrong (garbage, a
reply cut off, silence, refusing `tools`, redirecting) becomes one clear ModelServerFailed, tool
calls come back natively or from the text, and the request goes to that host and nowhere else.
The same engine against the real mlx_lm.server: tests/slow/test_model_server.py."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler

import pytest

from casper.agent.tools import SPECS
from casper.backends.openai_engine import NO_KEY, OpenAIEngine
from casper.errors import ModelServerFailed
from casper.protocols import ChatMessage, ToolCall
from tests.model_servers import (
    LOOPBACK,
    Seen,
    chunk,
    free_port,
    scripted_server,
    send_json,
    send_sse,
    usage_chunk,
)

pytestmark = pytest.mark.allow_hosts(LOOPBACK)

QUESTION = (ChatMessage("system", "You answer."), ChatMessage("user", "when is thanksgiving?"))
CALL = {"name": "search_messages", "arguments": {"query": "thanksgiving"}}


def engine(url: str, **options: object) -> OpenAIEngine:
    return OpenAIEngine(url, options.pop("model", "m"), **options)  # type: ignore[arg-type]


def test_a_streamed_answer_arrives_token_by_token_with_usage_and_timings() -> None:
    def reply(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        events = []
        for word in ("Thanksgiving ", "is ", "at ", "Sam's [#2441]."):
            events.append(chunk(word))
        send_sse(handler, [*events, chunk(finish="stop"), usage_chunk(120, 4)])

    pieces: list[str] = []
    with scripted_server(reply) as server:
        got = engine(server.base_url).chat(QUESTION, (), on_token=pieces.append)
    assert "".join(pieces) == got.text == "Thanksgiving is at Sam's [#2441]."
    assert (got.prompt_tokens, got.completion_tokens, got.finish_reason) == (120, 4, "stop")
    assert got.prompt_s > 0 and got.generation_s >= 0
    sent = server.posts()[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["model"] == "m" and "tools" not in sent.body


def test_native_tool_calls_streamed_in_pieces_are_put_together() -> None:
    arguments = json.dumps(CALL["arguments"])
    pieces = [
        chunk(tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                           "function": {"name": "search_messages", "arguments": ""}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": arguments[:9]}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": arguments[9:]}}]),
        chunk(tool_calls=[{"index": 1, "id": "call_2", "type": "function",
                           "function": {"name": "list_contacts", "arguments": "{not json"}}]),
        chunk(finish="tool_calls"),
    ]  # fmt: skip
    with scripted_server(lambda h, s: send_sse(h, pieces)) as server:
        eng = engine(server.base_url)
        got = eng.chat(QUESTION, SPECS)
    assert got.tool_calls == (ToolCall("search_messages", CALL["arguments"], "call_1"),)
    assert len(got.malformed) == 1 and "list_contacts" in got.malformed[0]  # a guard's business
    assert eng.native_tools is True
    sent = server.posts()[0].body
    assert [t["function"]["name"] for t in sent["tools"]] == [s.name for s in SPECS]


def test_tool_turns_go_back_with_ids_and_string_arguments() -> None:
    with scripted_server(lambda h, s: send_sse(h, [chunk("ok", finish="stop")])) as server:
        conversation = (
            *QUESTION,
            ChatMessage("assistant", "", (ToolCall("search_messages", {"query": "pie"}, "c9"),)),
            ChatMessage("tool", "[#2443] Sam: pumpkin pie", name="search_messages"),
        )
        engine(server.base_url).chat(conversation, SPECS)
    messages = server.posts()[0].body["messages"]
    call = messages[2]["tool_calls"][0]
    function = {"name": "search_messages", "arguments": '{"query": "pie"}'}
    assert call == {"id": "c9", "type": "function", "function": function}
    assert messages[3] == {"role": "tool", "content": "[#2443] Sam: pumpkin pie",
                           "tool_call_id": "c9", "name": "search_messages"}  # fmt: skip


def test_a_server_that_refuses_tools_gets_them_as_text_and_its_text_calls_are_read() -> None:
    """Many servers (llama-server without --jinja, older builds) answer 400 to `tools`: the
    engine describes them in the system prompt, as MlxEngine does for a template without
    tools, and reads `<tool_call>` out of the reply; it asks natively only once."""

    def reply(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        if "tools" in seen.body:
            send_json(handler, 400, {"error": {"message": "tools param requires --jinja"}})
        else:
            rest = json.dumps(CALL) + "\n</tool_call>"
            send_sse(handler, [chunk("Let me look.\n<tool_call>\n"), chunk(rest, finish="stop")])

    shown: list[str] = []
    with scripted_server(reply) as server:
        eng = engine(server.base_url)
        first = eng.chat(QUESTION, SPECS, on_token=shown.append)
        second = eng.chat(QUESTION, SPECS)
    assert first.tool_calls == second.tool_calls == (ToolCall(**CALL),)
    assert first.text == "Let me look." and "".join(shown).strip() == "Let me look."  # no call
    assert eng.native_tools is False
    sent = [s.body for s in server.posts()]
    assert ["tools" in b for b in sent] == [True, False, False]
    system = sent[1]["messages"][0]["content"]
    assert system.startswith("You answer.") and "- search_messages: " in system


@pytest.mark.parametrize(
    ("events", "said"),
    [
        (["{this is not json"], "not a chat completion"),
        ([json.dumps(["a", "list"])], "not a chat completion"),
    ],
)
def test_garbage_in_the_stream_is_one_clear_error(events: list[str], said: str) -> None:
    with (
        scripted_server(lambda h, s: send_sse(h, events)) as server,
        pytest.raises(ModelServerFailed, match=said) as info,
    ):
        engine(server.base_url).chat(QUESTION, ())
    assert server.base_url in info.value.message


def test_a_page_that_is_not_a_stream_is_one_clear_error() -> None:
    def page(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        body = b"<html><body>Welcome to my router</body></html>"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with scripted_server(page) as server, pytest.raises(ModelServerFailed) as info:
        engine(server.base_url).chat(QUESTION, ())
    assert "sent no chat completion" in info.value.message and "/v1" in (info.value.hint or "")


def test_a_reply_cut_off_mid_stream_is_one_clear_error() -> None:
    def cut(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", "100000")  # promises more than it sends
        handler.end_headers()
        handler.wfile.write(f"data: {json.dumps(chunk('Thanks'))}\n\n".encode())
        handler.wfile.flush()
        handler.close_connection = True

    shown: list[str] = []
    with scripted_server(cut) as server, pytest.raises(ModelServerFailed) as info:
        engine(server.base_url).chat(QUESTION, (), on_token=shown.append)
    assert shown == ["Thanks"]  # what arrived was shown; then the error, not a half answer
    assert "broke off" in info.value.message


def test_a_stream_that_just_stops_is_not_taken_for_a_short_answer() -> None:
    """A server speaking HTTP/1.0 (mlx_lm.server) ends a stream by closing the connection: one
    killed mid-reply looks like a reply that ended. Without a finish reason it did not."""
    events = [chunk("Thanksgiving is "), chunk("at")]
    with (
        scripted_server(lambda h, s: send_sse(h, events, done=False)) as server,
        pytest.raises(ModelServerFailed, match="broke off mid-reply"),
    ):
        engine(server.base_url).chat(QUESTION, ())


def test_a_silent_server_times_out_with_the_setting_to_raise() -> None:
    def silent(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        time.sleep(3)

    with scripted_server(silent) as server:
        started = time.perf_counter()
        with pytest.raises(ModelServerFailed) as info:
            engine(server.base_url, timeout_s=0.5).chat(QUESTION, ())
        waited = time.perf_counter() - started
    assert "said nothing for 0.5 s" in info.value.message
    assert "llm_timeout_s" in (info.value.hint or "")
    assert waited < 2.5  # the timeout, not the server, ended it


def test_nothing_listening_is_said_as_such() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ModelServerFailed) as info:
        engine(url).chat(QUESTION, ())
    assert info.value.message == f"cannot connect to the model server at {url}"
    assert "start the server" in (info.value.hint or "")


@pytest.mark.parametrize(("status", "hint"), [(404, "/v1"), (401, "llm_api_key_env"), (500, None)])
def test_http_errors_name_the_status(status: int, hint: str | None) -> None:
    with (
        scripted_server(lambda h, s: send_json(h, status, {"error": "nope"})) as server,
        pytest.raises(ModelServerFailed, match=f"answered HTTP {status}") as info,
    ):
        engine(server.base_url).chat(QUESTION, ())
    if hint:
        assert hint in (info.value.hint or "")


def test_a_redirect_is_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A redirect would resend the question and the messages to wherever it points."""
    with scripted_server(lambda h, s: send_sse(h, [chunk("hi", finish="stop")])) as elsewhere:

        def redirect(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
            handler.send_response(307)
            handler.send_header("Location", f"{elsewhere.base_url}/chat/completions")
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        with (
            scripted_server(redirect) as server,
            pytest.raises(ModelServerFailed, match="HTTP 307"),
        ):
            engine(server.base_url).chat(QUESTION, ())
    assert elsewhere.seen == []


def test_proxies_from_the_environment_are_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    with scripted_server(lambda h, s: send_json(h, 502, {})) as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with scripted_server(lambda h, s: send_sse(h, [chunk("hi", finish="stop")])) as server:
            assert engine(server.base_url).chat(QUESTION, ()).text == "hi"
    assert proxy.seen == [] and len(server.posts()) == 1


def test_the_key_comes_from_the_named_variable_never_from_openai_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-meant-for-another-service")
    with scripted_server(lambda h, s: send_sse(h, [chunk("hi", finish="stop")])) as server:
        engine(server.base_url).chat(QUESTION, ())
        engine(server.base_url, api_key="local-secret").chat(QUESTION, ())
    sent = [s.headers.get("authorization") for s in server.posts()]
    assert sent == [f"Bearer {NO_KEY}", "Bearer local-secret"]


def test_with_no_model_named_the_servers_only_model_is_used() -> None:
    def reply(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        if seen.method == "GET":
            send_json(handler, 200, {"object": "list", "data": [{"id": "qwen3:4b",
                                                                  "object": "model"}]})  # fmt: skip
        else:
            send_sse(handler, [chunk("hi", finish="stop")])

    with scripted_server(reply) as server:
        eng = engine(server.base_url, model=None)
        eng.chat(QUESTION, ())
        eng.chat(QUESTION, ())
    assert eng.name == "qwen3:4b"
    assert [s.body["model"] for s in server.posts()] == ["qwen3:4b", "qwen3:4b"]
    assert [s.path for s in server.seen if s.method == "GET"] == ["/v1/models"]  # asked once


def test_with_no_model_named_several_on_the_server_must_be_chosen() -> None:
    listed = {"object": "list", "data": [{"id": "qwen3:4b", "object": "model"},
                                         {"id": "llama3.2", "object": "model"}]}  # fmt: skip
    with (
        scripted_server(lambda h, s: send_json(h, 200, listed)) as server,
        pytest.raises(ModelServerFailed, match="llama3.2, qwen3:4b") as info,
    ):
        engine(server.base_url, model=None).chat(QUESTION, ())
    assert "--model" in (info.value.hint or "") and server.posts() == []


def test_check_says_whether_the_server_answers_without_sending_message_text() -> None:
    listed = {"object": "list", "data": [{"id": "default_model", "object": "model"}]}
    with scripted_server(lambda h, s: send_json(h, 200, listed)) as server:
        assert engine(server.base_url).check() == "answers, serving default_model"
    assert [s.method for s in server.seen] == ["GET"]
    with scripted_server(lambda h, s: send_json(h, 500, {})) as server:
        assert "answers" in engine(server.base_url).check()
    with pytest.raises(ModelServerFailed, match="cannot connect"):
        engine(f"http://127.0.0.1:{free_port()}/v1").check()
