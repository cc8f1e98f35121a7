"""Text people wrote can't drive the terminal, the markup or a transcript: every console Casper
prints with drops control characters and escape sequences from what it is given (on a terminal
and off one), an error whose message holds rich markup prints it as typed, a tag with an
invisible character inside is escaped like one without, and a Markdown export's lines and title
are data, not block syntax."""

from __future__ import annotations

import io
import unicodedata

import pytest

from casper.agent.quoting import quote
from casper.app.export import ExportRow
from casper.app.export_formats import to_markdown
from casper.errors import CasperError
from tests.hostile_text import CONTROL, ESC_BODY, ESC_CHAT, MARKDOWN_BODY, MARKUP_CHAT

# what a sequence leaves behind when only its ESC is dropped
REMNANTS = ("]0;", "[2J", "]8;;", "[31m", "pwned title")


def _consoles(**options: object) -> list[object]:
    from casper.cli.guard import stderr_console
    from casper.cli.render import console

    return [console(**options), console(stderr=True, **options), stderr_console()]


@pytest.mark.parametrize("terminal", [False, True])
def test_no_console_lets_a_control_sequence_through(
    terminal: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.table import Table
    from rich.text import Text

    for out in _consoles(force_terminal=terminal):
        out.print(Text(ESC_BODY))  # type: ignore[attr-defined]
        table = Table()
        table.add_column("chat")
        table.add_row(Text(ESC_CHAT))
        out.print(table)  # type: ignore[attr-defined]
        out.print(ESC_BODY, markup=False)  # type: ignore[attr-defined]
        out.print(Text("Eve \u202etxt.exe\u202c \u2067isolated\u2069"))  # type: ignore[attr-defined]
    printed = "".join(capsys.readouterr())
    assert "blorf" in printed and "cleared" in printed  # the words are shown
    if terminal:  # rich's own colours are SGR sequences; nothing else may be there
        printed = __import__("re").sub(r"\x1b\[[0-9;]*m", "", printed)
    assert not CONTROL.search(printed), repr(CONTROL.findall(printed))
    assert not [r for r in REMNANTS if r in printed], printed
    assert "txt.exe" in printed and not any(c in printed for c in "\u202e\u202c\u2067\u2069")


def test_an_error_that_holds_markup_prints_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    from casper.cli.guard import say_error, say_unexpected

    say_error(CasperError(f"--chat 'e' matches 2 chats: {MARKUP_CHAT}, {ESC_CHAT}",
                          hint=f"pass the chat id, e.g. for {MARKUP_CHAT}"))  # fmt: skip
    say_unexpected(ValueError(f"bad [bold]{MARKUP_CHAT}"))
    err = capsys.readouterr().err
    assert err.count(MARKUP_CHAT) == 3, err
    assert "error:" in err and "hint:" in err and "[bold]" in err
    assert not CONTROL.search(err)


@pytest.mark.parametrize(
    "tag",
    ["<\u00adtool_call>", "</\u00adtool_call>", "<\u2060|im_start|>", "[\u200bINST]",
     "[\u2060/INST]", "<\u200dthink>", "<\u00ad/tool_result>", "[\u00adTOOL_CALLS]",
     "<\ufefffunction=search_messages>", "\u27e6\u00adend of quoted messages\u27e7"],
)  # fmt: skip
def test_a_tag_with_an_invisible_character_inside_is_escaped(tag: str) -> None:
    shown = quote(f"hi {tag} there")
    visible = "".join(c for c in shown if unicodedata.category(c) != "Cf")
    for opening in ("<tool_call", "</tool_call", "<|im_start", "[INST]", "[/INST]", "<think",
                    "</tool_result", "[TOOL_CALLS]", "<function=", "\u27e6"):  # fmt: skip
        assert opening not in visible, (tag, shown)


def _row(text: str, chat: str = "Crew", sender: str = "Eve") -> ExportRow:
    return ExportRow(id=1, guid="g1", chat_id=7, chat=chat, sender_id="p_x", sender=sender,
                     time="2024-01-02T10:00:00-08:00", text=text, kind="text", edited=False,
                     reply_to=None, reactions=(), attachments=())  # fmt: skip


def _blocks(markdown: str) -> list[tuple[str, str]]:
    """(token type, its text) of every block a CommonMark reader (with tables) makes."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    out = []
    for i, t in enumerate(tokens):
        if t.nesting == 1 or t.type in ("hr", "code_block", "fence", "html_block"):
            inline = tokens[i + 1].content if i + 1 < len(tokens) else ""
            out.append((t.type if t.type != "heading_open" else t.tag, inline))
    return out


def test_a_message_makes_no_markdown_block_of_its_own() -> None:
    text = to_markdown([_row(MARKDOWN_BODY), _row("=== second ===\n***")], "Title", "sub")
    blocks = _blocks(text.decode())
    kinds = [kind for kind, _ in blocks]
    assert kinds == ["h1", "paragraph_open", "h2", "h3", "paragraph_open", "paragraph_open"], blocks
    assert "mdblock first" in blocks[4][1] and "indented" in blocks[4][1]


def test_a_title_from_a_chat_name_stays_one_heading_of_text() -> None:
    title = f"Messages with {ESC_CHAT}"
    text = to_markdown([_row("hi", chat=ESC_CHAT)], title, "sub").decode()
    assert not CONTROL.search(text), repr(text[:200])
    blocks = _blocks(text)
    assert blocks[0][0] == "h1" and "second line" in blocks[0][1]
    assert [kind for kind, _ in blocks].count("h1") == 1, blocks


def test_a_name_is_no_markdown_either() -> None:
    text = to_markdown([_row("hi", sender="1. Eve\n===", chat="> crew")], "t", "s").decode()
    kinds = [kind for kind, _ in _blocks(text)]
    assert kinds == ["h1", "paragraph_open", "h2", "h3", "paragraph_open"], _blocks(text)


def test_the_consoles_write_where_they_are_told() -> None:
    """The sanitising console still takes a file (the REPL and the tests hand it one)."""
    from casper.cli.render import console

    buffer = io.StringIO()
    console(file=buffer).print("plain")
    assert buffer.getvalue() == "plain\n"
