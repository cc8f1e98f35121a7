"""What `casper mcp` says to a line it cannot take (casper.cli.mcp_wire.screen) and to tool
arguments that break the tool's schema (casper.agent.schema_check): an error with a reason,
to the request's id when it can be read, never silence."""

from __future__ import annotations

import json

import pytest

from casper.agent.schema_check import problem
from casper.agent.tools import SPECS
from casper.cli.mcp_wire import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, screen

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":%s}}'


@pytest.mark.parametrize(
    ("raw", "code", "ident", "says"),
    [
        (b"this is not json", PARSE_ERROR, None, "not JSON"),
        (b'{"jsonrpc":"2.0","id":1,', PARSE_ERROR, None, "not JSON"),
        (b'{"id": NaN}', PARSE_ERROR, None, "not JSON"),
        (CALL % b'{"query":"\xff\xfe x"}', PARSE_ERROR, 7, "not UTF-8 text (0xff at byte"),
        (CALL % b'{"query":"\\ud800 x"}', INVALID_PARAMS, 7, "params.arguments.query holds a"),
        (CALL % b'{"\\udfff":"x"}', INVALID_PARAMS, 7, "lone surrogate"),
        (b'{"jsonrpc":"2.0","id":"a\\ud800","method":"ping"}', INVALID_REQUEST, None, "id holds"),
        (b"[1, 2, 3]", INVALID_REQUEST, None, "no batches"),
        (b"42", INVALID_REQUEST, None, "a JSON object"),
    ],
)
def test_a_line_it_cannot_take_gets_an_error_reply(
    raw: bytes, code: int, ident: object, says: str
) -> None:
    reply = screen(raw + b"\n")
    assert isinstance(reply, dict), reply
    assert reply["jsonrpc"] == "2.0" and reply["id"] == ident and reply["error"]["code"] == code
    assert says in reply["error"]["message"]
    json.dumps(reply, ensure_ascii=False).encode("utf-8")  # the reply itself is clean UTF-8


def test_a_message_the_sdk_refuses_is_answered_with_its_reason() -> None:
    def sdk(text: str) -> object:
        raise ValueError("1 validation error for JSONRPCMessage\nmore")

    reply = screen(b'{"jsonrpc":"2.0","id":3}', sdk)
    assert isinstance(reply, dict) and reply["id"] == 3
    assert reply["error"]["code"] == INVALID_REQUEST
    assert reply["error"]["message"].endswith("(1 validation error for JSONRPCMessage)")


def test_good_lines_pass_unchanged_and_blank_lines_are_skipped() -> None:
    good = CALL % b'{"query":"caf\xc3\xa9 \\ud83c\\udf63"}'  # a surrogate pair is one emoji
    assert screen(good + b"\r\n") == good.decode()
    assert screen(b"  \n") is None


SEARCH = next(s for s in SPECS if s.name == "search_messages").parameters
VOLUME = next(s for s in SPECS if s.name == "get_message_volume_by_period").parameters


@pytest.mark.parametrize(
    ("schema", "arguments", "says"),
    [
        (SEARCH, {"query": 12345}, "query must be a string, not 12345"),
        (SEARCH, {"query": "x", "limit": "7"}, "limit must be a whole number, not '7'"),
        (SEARCH, {"query": "x", "limit": float("inf")}, "limit must be a whole number, not inf"),
        (SEARCH, {"query": "x", "limit": 2.5}, "limit must be a whole number, not 2.5"),
        (SEARCH, {"query": "x", "limit": True}, "limit must be a whole number, not True"),
        (SEARCH, {"query": "x", "colour": "red"}, "unknown colour (it takes query, person"),
        (SEARCH, {"limit": 3}, "query is required"),
        (SEARCH, ["x"], "arguments must be an object"),
        (VOLUME, {"start_date": "a", "end_date": "b", "period": "hour"}, "period must be one of"),
    ],
)
def test_tool_arguments_are_held_to_the_schema(schema: dict, arguments: object, says: str) -> None:
    assert problem(schema, arguments) == says or says in (problem(schema, arguments) or "")


def test_arguments_that_fit_the_schema_pass() -> None:
    assert problem(SEARCH, {"query": "x", "limit": 7, "person": None}) is None
    assert problem(SEARCH, {"query": "x", "limit": 7.0}) is None  # the same JSON number
    assert problem(VOLUME, {"start_date": "2024-01-01", "end_date": "2024-12-31"}) is None
