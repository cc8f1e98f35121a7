"""Tool-call slicing and think-stripping on Qwen-style strings (table-driven, no model)."""

from __future__ import annotations

from typing import Any

import pytest

from casper.backends.toolcalls import parse_reply_text, reply_from_text, strip_thinking
from casper.protocols import ToolCall, ToolSpec

SEARCH = ToolSpec(
    name="search_messages",
    description="Search messages.",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "person": {"type": "string"},
        },
        "required": ["query"],
    },
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello", "Hello"),
        ("<think>plan the search</think>\n\nThe answer.", "The answer."),
        ("<think>\n\n</think>\n\nQwen3 empty think block", "Qwen3 empty think block"),
        ("reasoning started in the prompt</think>\nVisible", "Visible"),
        ("<think>cut off while still thinking", ""),
        ("Before <think>a</think> middle <think>b</think> after", "Before  middle  after"),
        ("  spaced  ", "spaced"),
    ],
)
def test_strip_thinking(raw: str, expected: str) -> None:
    assert strip_thinking(raw) == expected


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


PARSE_CASES: list[tuple[str, str, str, list[ToolCall], int]] = [
    ("plain text", "Sam said yes [#12].", "Sam said yes [#12].", [], 0),
    (
        "qwen2.5 json",
        '<tool_call>\n{"name": "search_messages", "arguments": {"query": "thanksgiving"}}\n'
        "</tool_call>",
        "",
        [call("search_messages", query="thanksgiving")],
        0,
    ),
    (
        "arguments as a JSON string",
        '<tool_call>{"name": "search_messages", "arguments": "{\\"query\\": \\"dinner\\"}"}'
        "</tool_call>",
        "",
        [call("search_messages", query="dinner")],
        0,
    ),
    (
        "several calls in one reply",
        '<tool_call>\n{"name": "list_contacts", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_contact_stats", "arguments": {"person": "Sam"}}\n</tool_call>',
        "",
        [call("list_contacts"), call("get_contact_stats", person="Sam")],
        0,
    ),
    (
        "call after text",
        "I'll look that up.\n<tool_call>\n"
        '{"name": "search_messages", "arguments": {"query": "dentist", "limit": 5}}\n</tool_call>',
        "I'll look that up.",
        [call("search_messages", query="dentist", limit=5)],
        0,
    ),
    (
        "think block then call",
        "<think>\nThe user wants Sam's stats.\n</think>\n\n<tool_call>\n"
        '{"name": "get_contact_stats", "arguments": {"person": "Sam"}}\n</tool_call>',
        "",
        [call("get_contact_stats", person="Sam")],
        0,
    ),
    (
        "unicode arguments",
        '<tool_call>{"name": "search_messages", "arguments": {"query": "寿司 🍣 café"}}'
        "</tool_call>",
        "",
        [call("search_messages", query="寿司 🍣 café")],
        0,
    ),
    (
        "qwen3.5 xml form",
        "<tool_call>\n<function=search_messages>\n<parameter=query>\nthanksgiving\n</parameter>\n"
        "</function>\n</tool_call>",
        "",
        [call("search_messages", query="thanksgiving")],
        0,
    ),
    (
        "xml with coerced int and kept string",
        "<tool_call>\n<function=search_messages>\n<parameter=query>\n2019\n</parameter>\n"
        "<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>",
        "",
        [call("search_messages", query="2019", limit=5)],
        0,
    ),
    (
        "xml with unknown params coerced from JSON",
        "<tool_call>\n<function=get_message_volume_by_period>\n<parameter=period>\nmonth\n"
        "</parameter>\n<parameter=top>\n3\n</parameter>\n<parameter=me>\ntrue\n</parameter>\n"
        '<parameter=people>\n["Sam", "Alex"]\n</parameter>\n</function>\n</tool_call>',
        "",
        [
            call(
                "get_message_volume_by_period",
                period="month",
                top=3,
                me=True,
                people=["Sam", "Alex"],
            )
        ],
        0,
    ),
    (
        "xml, two functions, missing </parameter>",
        "Checking.\n<tool_call>\n<function=list_contacts>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=search_messages>\n<parameter=query>\nbeach trip\n"
        "</function>\n</tool_call>",
        "Checking.",
        [call("list_contacts"), call("search_messages", query="beach trip")],
        0,
    ),
    (
        "bare json object",
        '{"name": "search_messages", "arguments": {"query": "keys"}}',
        "",
        [call("search_messages", query="keys")],
        0,
    ),
    (
        "fenced bare json",
        '```json\n{"name": "list_contacts", "arguments": {}}\n```',
        "",
        [call("list_contacts")],
        0,
    ),
    (
        "json that is not a call stays text",
        '{"answer": 42}',
        '{"answer": 42}',
        [],
        0,
    ),
    (
        "bad json is malformed",
        '<tool_call>\n{"name": "search_messages", "arguments": {\'query\': \'x\'}}\n</tool_call>',
        "",
        [],
        1,
    ),
    (
        "unterminated and incomplete",
        'Let me check.\n<tool_call>\n{"name": "search_messages", "arguments": {"query": "be',
        "Let me check.",
        [],
        1,
    ),
    (
        "unterminated but complete JSON is accepted",
        '<tool_call>\n{"name": "list_contacts", "arguments": {}}',
        "",
        [call("list_contacts")],
        0,
    ),
    (
        "no name is malformed",
        '<tool_call>{"arguments": {"query": "x"}}</tool_call>',
        "",
        [],
        1,
    ),
    (
        "empty segment is malformed",
        "<tool_call>\n</tool_call>",
        "",
        [],
        1,
    ),
    (
        "one good call and one bad",
        '<tool_call>{"name": "list_contacts", "arguments": {}}</tool_call>'
        "<tool_call>{oops}</tool_call>",
        "",
        [call("list_contacts")],
        1,
    ),
    (
        "arguments not an object",
        '<tool_call>{"name": "list_contacts", "arguments": [1, 2]}</tool_call>',
        "",
        [],
        1,
    ),
    (
        "stray closing tag removed",
        "Answer [#3].</tool_call>",
        "Answer [#3].",
        [],
        0,
    ),
]


@pytest.mark.parametrize(
    ("raw", "text", "calls", "n_malformed"),
    [case[1:] for case in PARSE_CASES],
    ids=[case[0] for case in PARSE_CASES],
)
def test_parse_reply_text(raw: str, text: str, calls: list[ToolCall], n_malformed: int) -> None:
    shown, parsed, malformed = parse_reply_text(raw, [SEARCH])
    assert shown == text
    assert parsed == calls
    assert len(malformed) == n_malformed
    assert all(m.startswith("<tool_call>") for m in malformed)


def test_xml_without_specs_coerces_numbers() -> None:
    raw = (
        "<tool_call><function=search_messages><parameter=query>2019</parameter>"
        "</function></tool_call>"
    )
    _, calls, _ = parse_reply_text(raw)
    assert calls == [call("search_messages", query=2019)]


def test_malformed_keeps_raw_segment() -> None:
    raw = 'x <tool_call>{"name": "a", "arguments": {</tool_call> y'
    shown, calls, malformed = parse_reply_text(raw)
    assert (shown, calls) == ("x  y", [])
    assert malformed == ['<tool_call>{"name": "a", "arguments": {</tool_call>']


def test_reply_from_text_carries_counts() -> None:
    reply = reply_from_text(
        '<tool_call>{"name": "list_contacts", "arguments": {}}</tool_call>',
        finish_reason="stop",
        prompt_tokens=10,
        completion_tokens=4,
    )
    assert reply.tool_calls == (call("list_contacts"),)
    assert (reply.text, reply.malformed, reply.prompt_tokens, reply.completion_tokens) == (
        "",
        (),
        10,
        4,
    )


@pytest.mark.parametrize(
    "raw",
    ["<tool_call>", "</tool_call>", "<tool_call><function=>", "<think>", "{", "[]", "```", ""],
)
def test_never_raises(raw: str) -> None:
    parse_reply_text(raw)
