"""Tool-call segments read by mlx_lm's parsers: one table per format, and proof the library's
parser is the one used (the parsers are pure Python; importing them loads mlx_lm, no model)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlx_lm.tool_parsers import json_tools, pythonic, qwen3_coder

from casper.backends import toolcalls
from casper.backends.mlx_engine import tool_parsers_for
from casper.backends.toolcalls import (
    JSON_TOOLS,
    QWEN3_CODER,
    SegmentParser,
    library_parsers,
    parse_reply_text,
    parser_format,
)
from casper.protocols import ToolCall, ToolSpec
from tests.test_layers import imports

SEARCH = ToolSpec(
    name="search_messages",
    description="Search messages.",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "people": {"type": "array"},
            "exact": {"type": "boolean"},
        },
    },
)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def xml(*params: tuple[str, str], name: str = "search_messages") -> str:
    """One Qwen3-Coder style call, laid out the way the chat templates render it."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


# (id, raw model text, visible text, calls, number of malformed segments)
Case = tuple[str, str, str, list[ToolCall], int]

JSON_TOOLS_CASES: list[Case] = [
    ("one call", '<tool_call>\n{"name": "list_contacts", "arguments": {}}\n</tool_call>', "",
     [call("list_contacts")], 0),
    ("text, then a call",
     'Looking.\n<tool_call>{"name": "search_messages", "arguments": {"limit": 5}}</tool_call>',
     "Looking.", [call("search_messages", limit=5)], 0),
    ("two segments",
     '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
     '<tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>', "",
     [call("a"), call("b", x=1)], 0),
    # the library's contract (and mlx_lm's server): a list from one segment is several calls
    ("a list in one segment",
     '<tool_call>[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]</tool_call>',
     "", [call("a"), call("b")], 0),
    ("fenced inside the segment",
     '<tool_call>\n```json\n{"name": "a", "arguments": {"q": "x"}}\n```\n</tool_call>', "",
     [call("a", q="x")], 0),
    ("OpenAI nesting", '<tool_call>{"function": {"name": "a", "arguments": {}}}</tool_call>', "",
     [call("a")], 0),
    ("parameters for arguments", '<tool_call>{"name": "a", "parameters": {"q": 1}}</tool_call>',
     "", [call("a", q=1)], 0),
    ("arguments as a JSON string",
     '<tool_call>{"name": "a", "arguments": "{\\"q\\": \\"x\\"}"}</tool_call>', "",
     [call("a", q="x")], 0),
    ("null arguments", '<tool_call>{"name": " a ", "arguments": null}</tool_call>', "",
     [call("a")], 0),
    ("unterminated but complete", '<tool_call>{"name": "a", "arguments": {}}', "",
     [call("a")], 0),
    ("bad JSON", "<tool_call>{'name': 'a', 'arguments': {}}</tool_call>", "", [], 1),
    ("cut off mid-call", 'Checking.<tool_call>{"name": "a", "argu', "Checking.", [], 1),
    ("no name", '<tool_call>{"arguments": {}}</tool_call>', "", [], 1),
    ("blank name", '<tool_call>{"name": " ", "arguments": {}}</tool_call>', "", [], 1),
    ("arguments not an object", '<tool_call>{"name": "a", "arguments": [1]}</tool_call>', "",
     [], 1),
    ("arguments string not JSON", '<tool_call>{"name": "a", "arguments": "{x"}</tool_call>', "",
     [], 1),
    ("not an object", "<tool_call>42</tool_call>", "", [], 1),
    ("empty list", "<tool_call>[]</tool_call>", "", [], 1),
    ("nested too deep to decode", "<tool_call>" + "[" * 100_000 + "</tool_call>", "", [], 1),
    ("one good, one bad",
     '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{oops}</tool_call>', "",
     [call("a")], 1),
]  # fmt: skip

QWEN3_CODER_CASES: list[Case] = [
    ("one call", xml(("query", "dinner")), "", [call("search_messages", query="dinner")], 0),
    # the library converts by the declared type: string kept, integer read, array as JSON
    ("typed by the schema", xml(("query", "2019"), ("limit", "5"), ("people", '["Sam", "Alex"]')),
     "", [call("search_messages", query="2019", limit=5, people=["Sam", "Alex"])], 0),
    ("integer written as a float", xml(("limit", "5.0")), "", [call("search_messages", limit=5)],
     0),
    ("array as a Python literal", xml(("people", "['Sam']")), "",
     [call("search_messages", people=["Sam"])], 0),
    ("boolean", xml(("exact", "true")), "", [call("search_messages", exact=True)], 0),
    ("null", xml(("query", "null")), "", [call("search_messages", query=None)], 0),
    ("multi-line string kept whole", xml(("query", "a\nb")), "",
     [call("search_messages", query="a\nb")], 0),
    # the library leaves undeclared parameters as text; ours reads them as JSON when they are
    ("undeclared parameters", xml(("top", "3"), ("me", "true"), ("period", "month")), "",
     [call("search_messages", top=3, me=True, period="month")], 0),
    ("unknown function", xml(("limit", "2"), name="volume"), "", [call("volume", limit=2)], 0),
    ("no parameters", "<tool_call><function=list_contacts></function></tool_call>", "",
     [call("list_contacts")], 0),
    ("two functions in one segment",
     "<tool_call>\n<function=list_contacts>\n</function>\n<function=search_messages>\n"
     "<parameter=limit>\n2\n</parameter>\n</function>\n</tool_call>", "",
     [call("list_contacts"), call("search_messages", limit=2)], 0),
    ("missing </parameter>",
     "<tool_call>\n<function=search_messages>\n<parameter=query>\nbeach trip\n</function>\n"
     "</tool_call>", "", [call("search_messages", query="beach trip")], 0),
    ("cut off after a value", "Checking.\n<tool_call>\n<function=search_messages>\n"
     "<parameter=query>\nbeach", "Checking.", [call("search_messages", query="beach")], 0),
    ("a parameter without a name is dropped",
     "<tool_call><function=search_messages><parameter=>x</parameter><parameter=query>y"
     "</parameter></function></tool_call>", "", [call("search_messages", query="y")], 0),
    ("function without a name", "<tool_call><function=><parameter=q>x</parameter></function>"
     "</tool_call>", "", [], 1),
    ("integer that is not one", xml(("limit", "five")), "", [], 1),
    ("integer too large", xml(("limit", "1e999")), "", [], 1),
    ("array literal that cannot be built", xml(("people", "{[]: 1}")), "", [], 1),
]  # fmt: skip

# what mlx_lm has no parser for: kept here, around (or without) the library's JSON parser
OURS_CASES: list[Case] = [
    ("plain text", "Sam said yes [#12].", "Sam said yes [#12].", [], 0),
    ("think block before a call",
     '<think>\nplan\n</think>\n\n<tool_call>{"name": "a", "arguments": {}}</tool_call>', "",
     [call("a")], 0),
    ("a call inside a think block is not a call",
     '<think><tool_call>{"name": "a", "arguments": {}}</tool_call></think>Done.', "Done.", [], 0),
    ("bare JSON call", '{"name": "a", "arguments": {"q": "keys"}}', "", [call("a", q="keys")], 0),
    ("bare list of calls", '[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]', "",
     [call("a"), call("b")], 0),
    ("fenced bare JSON", '```json\n{"name": "a", "arguments": {}}\n```', "", [call("a")], 0),
    ("JSON that is not a call stays text", '{"answer": 42}', '{"answer": 42}', [], 0),
    ("bare JSON with a bad name stays text", '{"name": 3, "arguments": {}}',
     '{"name": 3, "arguments": {}}', [], 0),
    ("empty segment", "<tool_call>\n</tool_call>", "", [], 1),
    ("stray closing tag", "Answer [#3].</tool_call>", "Answer [#3].", [], 0),
]  # fmt: skip


@pytest.fixture
def seen() -> list[str]:
    """The formats whose library parser was called, in order."""
    return []


def spying(seen: list[str]) -> dict[str, SegmentParser]:
    """The library parsers, each noting its format in `seen` before it parses."""

    def spy(fmt: str, parse: SegmentParser) -> SegmentParser:
        def parse_and_note(text: str, tools: Any) -> Any:
            seen.append(fmt)
            return parse(text, tools)

        return parse_and_note

    return {fmt: spy(fmt, parse) for fmt, parse in library_parsers().items()}


def check(case: Case, seen: list[str]) -> None:
    _, raw, text, calls, n_malformed = case
    shown, parsed, malformed = parse_reply_text(raw, [SEARCH], spying(seen))
    assert (shown, parsed, len(malformed)) == (text, calls, n_malformed)


@pytest.mark.parametrize("case", JSON_TOOLS_CASES, ids=[c[0] for c in JSON_TOOLS_CASES])
def test_json_tools_segments(case: Case, seen: list[str]) -> None:
    check(case, seen)
    assert seen and set(seen) == {JSON_TOOLS}  # every segment went through mlx_lm's json_tools


@pytest.mark.parametrize("case", QWEN3_CODER_CASES, ids=[c[0] for c in QWEN3_CODER_CASES])
def test_qwen3_coder_segments(case: Case, seen: list[str]) -> None:
    check(case, seen)
    assert seen and set(seen) == {QWEN3_CODER}  # every function went through qwen3_coder


@pytest.mark.parametrize("case", OURS_CASES, ids=[c[0] for c in OURS_CASES])
def test_what_the_library_lacks(case: Case, seen: list[str]) -> None:
    check(case, seen)
    assert set(seen) <= {JSON_TOOLS}  # bare JSON is still decoded by the library


def test_the_default_parsers_are_mlx_lm_s() -> None:
    assert library_parsers() == {
        JSON_TOOLS: json_tools.parse_tool_call,
        QWEN3_CODER: qwen3_coder.parse_tool_call,
    }


@pytest.mark.parametrize(
    ("fmt", "module", "raw"),
    [
        (JSON_TOOLS, json_tools, '<tool_call>{"name": "a", "arguments": {}}</tool_call>'),
        (QWEN3_CODER, qwen3_coder, "<tool_call><function=a></function></tool_call>"),
    ],
)
def test_without_parsers_the_library_module_parses(
    fmt: str, module: Any, raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails if a format the library covers is parsed by code of our own instead."""
    seen: list[str] = []
    library = module.parse_tool_call

    def noted(text: str, tools: Any = None) -> Any:
        seen.append(text)
        return library(text, tools)

    monkeypatch.setattr(module, "parse_tool_call", noted)
    assert parse_reply_text(raw)[1] == [call("a")]
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("parser", "fmt"),
    [
        (json_tools.parse_tool_call, JSON_TOOLS),
        (qwen3_coder.parse_tool_call, QWEN3_CODER),
        (pythonic.parse_tool_call, None),  # another family's markers: not sliced by us
        (None, None),  # a template without tools
        (lambda text, tools=None: {}, None),
    ],
)
def test_the_engine_takes_the_tokenizer_s_parser_for_its_format(
    parser: Any, fmt: str | None
) -> None:
    assert parser_format(parser) == fmt
    chosen, parsers = tool_parsers_for(SimpleNamespace(tool_parser=parser))
    assert chosen == fmt
    assert set(parsers) == {JSON_TOOLS, QWEN3_CODER}
    if fmt is not None:
        assert parsers[fmt] is parser
    assert all(p.__module__.startswith("mlx_lm.tool_parsers.") for p in parsers.values())


def test_plain_replies_do_not_need_the_parsers(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> dict[str, SegmentParser]:
        raise AssertionError("the library was asked for a reply without a tool call")

    monkeypatch.setattr(toolcalls, "library_parsers", unavailable)
    assert parse_reply_text("<think>x</think>Sam said yes.") == ("Sam said yes.", [], [])


def test_toolcalls_imports_only_stdlib_and_the_parsers() -> None:
    """What tests/test_layers.py's PURE rule held it to, plus mlx_lm.tool_parsers in functions."""
    path = Path(toolcalls.__file__)
    found = imports(path)
    allowed = {"__future__", "json", "re", "collections.abc", "typing", "casper.protocols"}
    assert found - allowed == {"mlx_lm.tool_parsers"}
    assert not {m for m in imports(path, top_level_only=True) if m.startswith("mlx")}


FRAGMENTS = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<function=", "<function=a>",
             "</function>", "<parameter=", "<parameter=limit>", "</parameter>", "{", "}", "[",
             "]", '"name"', '"arguments"', ":", ",", '"a"', "1e999", "null", "five", "```", "\n",
             ">", "x"]  # fmt: skip


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_never_raises_on_any_mix_of_markers(raw: str) -> None:
    shown, calls, malformed = parse_reply_text(raw, [SEARCH])
    assert all(m.startswith("<tool_call>") for m in malformed)
    assert all(isinstance(c.arguments, dict) and c.name for c in calls)
