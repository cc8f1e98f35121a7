"""What the model and an MCP client are shown of the five tools, and how their arguments are
read, exactly: the JSON Schemas byte for byte (key order included: it is what `tools/list` and
the chat template send), and every kind of argument a small model writes — numbers as strings,
`1e309`, booleans, lists, `#` before an id, empty strings — read to the same values or refused
with the same words (tests/golden/tool_arguments.txt)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from datetime import UTC
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from casper.agent import tools
from casper.agent.schema_check import problem
from casper.agent.tool_args import ArgError, Arguments, read
from casper.agent.tools import SPECS, Toolbox
from casper.protocols import JSONValue, ToolCall
from tests.first_hour import check_golden

EXAMPLES = int(os.environ.get("CASPER_FUZZ_EXAMPLES", "400"))
DATE = {"type": "string", "description": "YYYY-MM-DD (inclusive)"}
# the tools as they were written out by hand, one JSON Schema literal each
EXPECTED: list[tuple[str, str, dict[str, Any]]] = [
    (
        "search_messages",
        "Search the user's text messages by meaning and keywords. Returns matching conversation "
        "snippets with message ids [#id], dates and senders.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for, in plain words"},
                "person": {
                    "type": "string",
                    "description": "only chats with this contact (name or id)",
                },
                "start_date": DATE,
                "end_date": DATE,
                "limit": {"type": "integer", "description": "max results (1-10)", "default": 5},
            },
            "required": ["query"],
        },
    ),
    (
        "list_contacts",
        "List the user's contacts with message counts, optionally filtered by name.",
        {
            "type": "object",
            "properties": {
                "name_like": {"type": "string", "description": "part of a name"},
                "limit": {"type": "integer", "default": 20},
            },
            "required": [],
        },
    ),
    (
        "get_contact_stats",
        "Message statistics with one contact: counts sent/received, first/last message, active "
        "days, reply times, who starts conversations, top emoji, busiest hours.",
        {
            "type": "object",
            "properties": {
                "person": {"type": "string", "description": "contact name or id"},
                "start_date": DATE,
                "end_date": DATE,
            },
            "required": ["person"],
        },
    ),
    (
        "get_conversation_context",
        "Show the messages around one message id, to read the whole exchange.",
        {
            "type": "object",
            "properties": {
                "message_id": {
                    "type": ["integer", "string"],
                    "description": "a message id like 1234",
                },
                "before": {"type": "integer", "default": 5},
                "after": {"type": "integer", "default": 5},
            },
            "required": ["message_id"],
        },
    ),
    (
        "get_message_volume_by_period",
        "Count messages per day/week/month/year and rank contacts by how much the user texted "
        "them. Use for 'who did I talk to most', 'how often', 'when did we talk most'. Without "
        "dates: the whole history.",
        {
            "type": "object",
            "properties": {
                "start_date": DATE,
                "end_date": DATE,
                "person": {"type": "string", "description": "only this contact"},
                "period": {
                    "type": "string",
                    "enum": ["day", "week", "month", "year"],
                    "default": "month",
                },
                "top_n": {"type": "integer", "default": 5},
            },
            "required": [],
        },
    ),
]


def test_the_specs_are_the_hand_written_ones_byte_for_byte() -> None:
    expected = [
        {"type": "function", "function": {"name": n, "description": d, "parameters": p}}
        for n, d, p in EXPECTED
    ]
    # json.dumps keeps key order: the bytes a chat template or `tools/list` sends
    assert json.dumps([s.to_openai() for s in SPECS]) == json.dumps(expected)
    assert [json.dumps(dict(s.parameters)) for s in SPECS] == [json.dumps(p) for *_, p in EXPECTED]


def parse(name: str, arguments: Arguments) -> str:
    """The tool's reading of `arguments`: the values it runs with, or its error."""
    try:
        args: object = read(tools.TOOLS[name].args, arguments)
    except ArgError as exc:
        return f"error: {exc}"
    return json.dumps(dataclasses.asdict(args))  # type: ignore[call-overload]


# what models write: numbers as strings, too large for a float, booleans, lists, ids with `#`
VALUES: list[JSONValue] = [
    None, "", " ", "7", "07", "7.5", "-3", "1e309", "abc", "#", "#12", "##12", "12#",
    "month", "year", "hour", "MONTH", 0, 7, -5, 7.9, 7.0, 10**30, 1e309, float("-inf"),
    float("nan"), True, False, [], ["x"], {}, {"a": 1},
]  # fmt: skip
BAD: list[JSONValue] = [None, "", ["x"], "hour", "lots"]  # two wrong at once: which one is said
# the required ones filled (the tools read dates later, when they run)
FILLED = {"query": "q", "person": "p", "message_id": "12", "start_date": "s", "end_date": "e"}


def cases() -> list[tuple[str, dict[str, JSONValue]]]:
    out: list[tuple[str, dict[str, JSONValue]]] = []
    for name, _, schema in EXPECTED:
        fields = list(schema["properties"])
        required: dict[str, JSONValue] = {f: FILLED[f] for f in schema["required"]}
        out += [(name, {}), (name, required), (name, {**required, "unknown": 1})]
        out += [(name, {k: v for k, v in required.items() if k != f}) for f in required]
        out += [(name, {**required, f: v}) for f in fields for v in VALUES]
        for (f1, f2), (v1, v2) in itertools.product(
            itertools.combinations(fields, 2), itertools.product(BAD, BAD)
        ):
            out.append((name, {**required, f1: v1, f2: v2}))
    return out


def test_arguments_are_read_as_they_always_were() -> None:
    lines = [f"{name} {args!r} -> {parse(name, args)}" for name, args in cases()]
    assert len(lines) > 1000
    check_golden("tool_arguments", "\n".join(lines))


def test_what_the_toolbox_says_of_a_call_it_cannot_run() -> None:
    tools = Toolbox(None, lambda q, **o: [], UTC)  # type: ignore[arg-type]  # never reached
    names = ", ".join(n for n, *_ in EXPECTED)
    assert tools.call(ToolCall("delete_everything", {})).text == (
        f"error: unknown tool 'delete_everything'; tools: {names}"
    )
    assert tools.call(ToolCall("list_contacts", ["x"])).text == (  # type: ignore[arg-type]
        "error: arguments must be a JSON object"
    )
    assert tools.call(ToolCall("search_messages", {"query": ""})).text == (
        "error: bad arguments for search_messages: query is required"
    )
    assert tools.call(ToolCall("get_message_volume_by_period", {"period": "x"})).text == (
        "error: bad arguments for get_message_volume_by_period: period must be day, week, month "
        "or year"
    )
    assert [s.name for s in tools.specs] == [n for n, *_ in EXPECTED]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=3,
)


@st.composite
def calls(draw: st.DrawFn) -> tuple[tools.Tool, dict[str, JSONValue]]:
    """A tool and arguments for it: each declared one left out, plausible, or any JSON."""
    tool = draw(st.sampled_from(list(tools.TOOLS.values())))
    arguments: dict[str, JSONValue] = {}
    schema: dict[str, Any] = dict(tool.spec.parameters)
    for name, prop in schema["properties"].items():
        plausible = st.sampled_from(prop.get("enum") or ["", "#7", "2024-01-01", "x"])
        if prop["type"] == "integer":
            whole = st.floats(allow_nan=False, allow_infinity=False).map(lambda f: float(int(f)))
            plausible = st.integers() | whole  # 7.0 is the JSON number 7
        value = draw(st.none() | plausible | JSON | st.just("MISSING"))
        if value != "MISSING":
            arguments[name] = value
    return tool, arguments


@settings(max_examples=EXAMPLES, deadline=None)
@given(calls())
def test_what_the_schema_lets_a_client_send_the_tool_reads(
    call: tuple[tools.Tool, dict[str, JSONValue]],
) -> None:
    """An MCP client is held to the schema (casper.agent.schema_check), the model only to the
    declaration's reading: every call the schema accepts is one the tool reads, except a
    required argument sent as an empty string, which the tool refuses in its own words."""
    tool, arguments = call
    if problem(tool.spec.parameters, arguments) is not None:
        return
    try:
        read(tool.args, arguments)
    except ArgError as exc:
        required: list[str] = tool.spec.parameters["required"]  # type: ignore[assignment]
        assert [arguments.get(n) for n in required].count("") >= 1, exc
        assert str(exc).endswith("required")
