"""Prompt texts: system prompt values, truncation, tools-as-text fallback, hints and nudges."""

from __future__ import annotations

from datetime import date

import pytest

from casper.agent import prompts
from casper.backends.toolcalls import parse_reply_text, tools_as_text
from casper.protocols import ToolSpec

SPECS = (
    ToolSpec(
        name="search_messages",
        description="Search the user's messages by meaning and keywords.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "order": {"type": "string", "enum": ["relevance", "recent"]},
            },
            "required": ["query"],
        },
    ),
    ToolSpec(name="list_contacts", description="List people.", parameters={"type": "object"}),
)


def test_system_prompt_states_date_zone_and_rules() -> None:
    text = prompts.system_prompt(date(2026, 11, 22), "Europe/London")
    assert "Sunday 2026-11-22" in text
    assert "Europe/London" in text
    assert "[#1234]" in text
    assert "could not find" in text
    assert len(text.split()) < 90  # small models: keep it short


def test_system_prompt_appends_tools_text() -> None:
    tools = tools_as_text(SPECS)
    text = prompts.system_prompt(date(2026, 1, 1), "UTC", tools)
    assert text.endswith(tools)
    assert "Thursday 2026-01-01" in text


def test_tools_as_text_describes_tools_and_format() -> None:
    text = tools_as_text(SPECS)
    assert "<tool_call>" in text and "</tool_call>" in text
    assert "- search_messages: Search the user's messages" in text
    assert "query (string, required) what to look for" in text
    assert 'order ("relevance"|"recent")' in text
    assert "- list_contacts: List people." in text


def test_tools_text_example_is_parseable_once_filled() -> None:
    example = '<tool_call>\n{"name": "list_contacts", "arguments": {}}\n</tool_call>'
    assert parse_reply_text(example)[1][0].name == "list_contacts"


@pytest.mark.parametrize(
    ("text", "max_chars", "kept", "truncated"),
    [
        ("short", 100, "short", False),
        ("x" * 100, 100, "x" * 100, False),
        ("line one\nline two\nline three", 20, "line one\nline two", True),
        ("a" * 50, 10, "a" * 10, True),
    ],
)
def test_format_tool_result(text: str, max_chars: int, kept: str, truncated: bool) -> None:
    out = prompts.format_tool_result(text, max_chars)
    assert out.startswith(kept)
    assert ("truncated" in out) is truncated
    if truncated:
        body = out.rsplit("\n", 1)[0]
        assert len(body) <= max_chars
        assert f"{len(text) - len(body)} more characters" in out


def test_user_message_and_hints() -> None:
    assert prompts.user_message(" hi ") == "hi"
    assert prompts.format_hints(["", "  "]) == ""
    msg = prompts.user_message("When?", ["dates: 2025", " ranking "])
    assert msg == "When?\n\nNotes:\n- dates: 2025\n- ranking"


def test_nudges() -> None:
    assert "call the tool now" in prompts.NUDGE_NARRATED
    assert "empty" in prompts.NUDGE_EMPTY
    nudge = prompts.nudge_malformed(["<tool_call>{bad json" + "x" * 500])
    assert "<tool_call>{bad json" in nudge
    assert len(nudge) < 400
    assert prompts.cite_tag(42) == "[#42]"
