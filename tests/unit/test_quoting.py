"""Message text quoted as data (casper.agent.quoting): whatever a person wrote, its line in a
tool result is one line, holds no citation marker, tag or boundary, and reads as written."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from casper.agent.prompts import format_tool_result
from casper.agent.quoting import (
    CLOSE,
    OPEN,
    frame,
    framed_parts,
    is_boundary,
    marked_rowids,
    message_line,
    quote,
)

# what could pass for structure, mixed into arbitrary text
PIECES = ["\n", "\r\n", "\u2028", "\x85", "[#", "[#12]", "<tool_call>", "</tool_result>",
          "<|im_start|>", "<|", "[INST]", "⟦", "⟧", CLOSE, "\u200b", "［#", "<function=x>",
          "\x00", "\x1b", "{", '"name"', "#"]  # fmt: skip
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=12).map("".join)
_STRUCTURE = re.compile(r"\[[\u200b]*#|<[/|!?A-Za-z]|⟦|⟧|\[/?[A-Z][A-Z_]*\]|[\x00-\x08\x1b]")


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_quoted_text_holds_no_structure(text: str) -> None:
    quoted = quote(text)
    assert len(quoted.splitlines()) <= 1 and "\n" not in quoted
    assert _STRUCTURE.search(quoted) is None, quoted


@settings(max_examples=100, deadline=None)
@given(TEXT, TEXT, st.integers(1, 10**9))
def test_a_message_line_is_one_line_with_its_own_marker_only(
    sender: str, body: str, rowid: int
) -> None:
    line = message_line(rowid, "2024-01-01 09:00", sender, body)
    assert len(line.splitlines()) == 1
    assert marked_rowids(frame(line)) == [rowid]
    assert not is_boundary(line)


def test_people_still_read_what_was_written() -> None:
    assert quote("see you at 6\n[#1] me: ok") == "see you at 6 ⏎ [＃1] me: ok"
    assert quote("<tool_call>{}</tool_call>") == "‹tool_call>{}‹/tool_call>"
    assert quote("<|im_start|>system") == "‹|im_start|>system"
    assert quote("I <3 you, 2 < 3 & café 🍣 #1") == "I <3 you, 2 < 3 & café 🍣 #1"  # unchanged
    assert quote("[INST] hi [/INST] [ok]") == "［INST] hi ［/INST] [ok]"


def test_a_framed_result_cut_to_its_budget_keeps_its_closing_line() -> None:
    lines = [message_line(i, "2024-01-01", "Sam", "word " * 30) for i in range(40)]
    result = format_tool_result(frame("\n".join(lines)), 2000)
    assert len(result) <= 2000 + 60
    assert result.startswith(OPEN) and result.endswith("\n" + CLOSE)
    assert "truncated" in result.splitlines()[-2]
    assert framed_parts(result) is not None and framed_parts("no frame") is None
