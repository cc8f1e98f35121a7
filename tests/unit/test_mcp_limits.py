"""`casper mcp` against requests a client should not send: an `id` JSON-RPC does not allow (an
object, an array, a fraction, a bool, null) gets `-32600` to id null rather than silence, and a
string past the documented cap (a 20 MB `query`) gets `-32602` at once, before any search."""

from __future__ import annotations

import json
import time

import pytest

from casper.cli.mcp_wire import INVALID_PARAMS, INVALID_REQUEST, screen


def _validate(text: str) -> object:
    import mcp_types as types

    return types.jsonrpc_message_adapter.validate_json(text, by_name=False)


@pytest.mark.parametrize("ident", ['{"a":1}', "[1]", "1.5", "1.0", "true", "false", "null"])
@pytest.mark.parametrize("method", ["tools/list", "tools/call", "ping"])
def test_an_id_json_rpc_does_not_allow_gets_invalid_request(ident: str, method: str) -> None:
    raw = f'{{"jsonrpc":"2.0","id":{ident},"method":"{method}","params":{{}}}}'.encode()
    reply = screen(raw, _validate)
    assert isinstance(reply, dict), f"passed on as {reply!r}: the SDK reads it as a notification"
    assert reply["id"] is None and reply["error"]["code"] == INVALID_REQUEST
    assert "id" in reply["error"]["message"]


@pytest.mark.parametrize("ident", ["7", '"seven"', "0", "-3", "12345678901234567890"])
def test_an_id_it_allows_passes(ident: str) -> None:
    raw = f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/list"}}'.encode()
    assert isinstance(screen(raw, _validate), str)


def test_a_notification_without_an_id_still_passes() -> None:
    raw = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert isinstance(screen(raw, _validate), str)


def _call(ident: int, arguments: dict[str, object]) -> bytes:
    params = {"name": "search_messages", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                       "params": params}).encode()  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"query": "x" * 2_001}, "params.arguments.query"),
        ({"query": "x", "person": "p" * 5_000}, "params.arguments.person"),
        ({"query": "x", "start_date": "2" * 3_000}, "params.arguments.start_date"),
    ],
)
def test_a_string_past_the_cap_gets_invalid_params_at_once(
    arguments: dict[str, object], where: str
) -> None:
    started = time.perf_counter()
    reply = screen(_call(9, arguments), _validate)
    took = time.perf_counter() - started
    assert isinstance(reply, dict), "passed on to the search"
    assert reply["id"] == 9 and reply["error"]["code"] == INVALID_PARAMS
    assert where in reply["error"]["message"] and "2,000" in reply["error"]["message"]
    assert took < 2.0


def test_a_string_at_the_cap_passes() -> None:
    assert isinstance(screen(_call(9, {"query": "x" * 2_000}), _validate), str)


def test_the_cap_is_in_the_schema_a_client_is_shown() -> None:
    from casper.agent.tool_args import client_schema
    from casper.cli.mcp import tool_specs

    for spec in tool_specs():
        for name, prop in client_schema(spec.parameters)["properties"].items():
            if prop.get("type") == "string" and "enum" not in prop:
                assert prop.get("maxLength") == 2_000, (spec.name, name, prop)


@pytest.mark.parametrize(
    "order",
    [("jsonrpc", "id", "method", "params"), ("method", "params", "jsonrpc", "id")],
    ids=["python-sdk", "typescript-sdk"],
)
def test_a_line_past_the_line_cap_is_answered_on_its_request(order: tuple[str, ...]) -> None:
    # a 20 MB query: refused unparsed, and to id 9, so the client is not left waiting
    message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "search_messages",
                          "arguments": {"query": "divorce lawyer " * 1_400_000}}}  # fmt: skip
    raw = json.dumps({key: message[key] for key in order}).encode()
    started = time.perf_counter()
    reply = screen(raw, _validate)
    assert isinstance(reply, dict) and reply["id"] == 9, reply
    assert reply["error"]["code"] == INVALID_REQUEST and "bytes" in reply["error"]["message"]
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    "raw",
    [
        b'{"method":"x","params":{"a":1,"id":5}}',  # an id nested in params
        b'{"method":"x","params":{"q":"a,\\"id\\":5}"}}',  # inside a string
        b'{"method":"x","params":[{"id":5}]}',
    ],
)
def test_an_id_that_is_not_the_request_s_is_not_taken_for_it(raw: bytes) -> None:
    from casper.cli.mcp_wire import MAX_LINE_BYTES

    line = raw[:-1] + b" " * MAX_LINE_BYTES + raw[-1:]
    reply = screen(line)
    assert isinstance(reply, dict) and reply["id"] is None, reply
