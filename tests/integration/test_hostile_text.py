"""The trust boundary against text written to get past it (tests/hostile_text.py), on the tiny
demo with it planted: no command prints a control character of a message, a name or a file name
(show, search, the citation table, chats, contacts, stats, errors, the chat REPL); an error
naming a chat in rich markup prints it as typed; a Markdown export of a chat named with escapes
has one clean title. Under `redacted` every tool masks what people type however they type it,
and only that: the tools' own headers, ids, dates and counts stay. An MCP result's citations
are quoted like its text; `words_not_found` is computed within the call's filters; a model on
another machine reads no phone number in its prompt. Real store and index; fake models."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import casper.backends.factory as factory
from casper.app import handlers
from casper.app.runtime import Runtime
from casper.cli import app
from casper.config import load_config
from tests.fakes import ScriptedEngine
from tests.helpers import use_fake_search_models
from tests.hostile_text import (
    CONTROL,
    ESC_BODY,
    MARKUP_CHAT,
    SECRETS,
    STRANGER,
    build_hostile_home,
    secret_digits,
)

runner = CliRunner()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        return build_hostile_home(tmp_path_factory.mktemp("hostile"))


def _one(home: Path, sql: str, *args: object) -> Any:
    conn = sqlite3.connect(f"file:{home / 'casper.sqlite'}?mode=ro", uri=True)
    try:
        row = conn.execute(sql, args).fetchone()
    finally:
        conn.close()
    assert row is not None, sql
    return row[0]


def _printed(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "--home", str(home)], input=stdin)
    return result.exit_code, result.stdout + result.stderr


# ---- the terminal ------------------------------------------------------------------------------
COMMANDS = {
    "search a body": ["search", "blorf"],
    "search an attachment": ["search", "attached"],
    "show a body": ["show", "{esc_body}"],
    "show an attachment": ["show", "{attachment}"],
    "chats": ["chats"],
    "contacts": ["contacts"],
    "stats of a card": ["stats", "Eve"],
    "stats of a chat": ["stats", "--chat", "{esc_chat}"],
    "the citation table": ["ask", "blorf", "--no-llm"],
    "an error listing chats": ["search", "grumble", "--chat", "e"],
}


@pytest.mark.parametrize("case", COMMANDS)
def test_no_command_prints_a_control_character(
    home: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    ids = {
        "esc_body": _one(home, "SELECT rowid FROM messages WHERE text LIKE 'blorf %cleared%'"),
        "attachment": _one(home, "SELECT rowid FROM messages WHERE text LIKE '%blorf attached%'"),
        "esc_chat": _one(home, "SELECT id FROM chats WHERE name LIKE 'Esc%'"),
    }
    args = [a.format(**{k: str(v) for k, v in ids.items()}) for a in COMMANDS[case]]
    code, printed = _printed(home, *args)
    assert "Traceback" not in printed and "MarkupError" not in printed, printed[-2000:]
    assert not CONTROL.search(printed), (case, code, [m for m in CONTROL.findall(printed)])


def test_an_error_naming_a_chat_in_markup_prints_it_as_typed(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    code, printed = _printed(home, "search", "grumble", "--chat", "e")
    assert code == 1 and printed.lstrip().startswith("error:"), printed[-2000:]
    assert MARKUP_CHAT in printed and "hint:" in printed
    assert len(printed.splitlines()) < 12  # the error and its hint, no traceback


def test_the_chat_repl_prints_no_control_character(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    code, printed = _printed(home, "chat", "--no-llm", stdin="blorf\n/sources\n")
    assert code == 0 and "Sources" in printed, printed[-2000:]
    assert "blorf" in printed and not CONTROL.search(printed), CONTROL.findall(printed)


def test_a_markdown_export_of_a_chat_named_with_escapes(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.test_terminal_text import _blocks

    use_fake_search_models(monkeypatch)
    chat = _one(home, "SELECT id FROM chats WHERE name LIKE 'Esc%'")
    out = tmp_path / "crew.md"
    code, printed = _printed(home, "export", "--chat", str(chat), "--format", "md", "-o", str(out))
    assert code == 0, printed
    text = out.read_text()
    assert not CONTROL.search(text), repr(text[:300])
    assert [kind for kind, _ in _blocks(text)].count("h1") == 1


# ---- redaction ---------------------------------------------------------------------------------
def _tool(home: Path, privacy: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return handlers.run(Runtime(load_config(home, privacy=privacy)), "tool",
                        {"name": name, "arguments": arguments})  # fmt: skip


def _shown(doc: dict[str, Any]) -> str:
    return doc["text"] + "\n" + json.dumps(doc["citations"], ensure_ascii=False)


@pytest.mark.parametrize(("label", "written", "kind"), SECRETS, ids=[s[0] for s in SECRETS])
def test_redacted_masks_every_written_form_in_every_tool(
    home: Path, label: str, written: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    found = _tool(home, "full", "search_messages", {"query": label, "limit": 1})
    rowid = next(c["rowid"] for c in found["citations"] if label in c["text"])
    for name, arguments in (
        ("search_messages", {"query": label, "limit": 3}),
        ("get_conversation_context", {"message_id": str(rowid), "before": 1, "after": 1}),
    ):
        shown = _shown(_tool(home, "redacted", name, arguments))
        assert label in shown and written not in shown, (name, shown[:600])
        if kind in ("link", "address"):
            assert written.split("/")[0] not in shown
        else:
            assert secret_digits(written) not in secret_digits(shown), (name, shown[:600])


_MESSAGE_LINE = re.compile(r"^\[#(\d+)\] (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) ")
_HEADER = re.compile(r" \((\d{4}-\d{2}-\d{2})\):$")
_COUNT = re.compile(r"(?<![\w-])(\d+)(?=,|$| sent| received)")


def _structure(text: str) -> list[tuple[str, ...]]:
    """What a tool writes itself, line by line: ids, dates, times, counts, the words it uses."""
    out = []
    for line in text.splitlines():
        line = line.replace(STRANGER, "")
        message = _MESSAGE_LINE.match(line)
        if message:
            out.append(("message", *message.groups()))
            continue
        header = _HEADER.search(line)
        if header:
            out.append(("header", header.group(1)))
            continue
        ids = re.findall(r"\(id (p_\w+)\)", line)
        out.append(("line", *ids, *_COUNT.findall(line.split("(id")[-1])))
    return out


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("search_messages", {"query": "spaceddash slashed filler", "limit": 5}),
        ("get_conversation_context", {"message_id": "{first}", "before": 0, "after": 8}),
        ("list_contacts", {}),
        ("get_contact_stats", {"person": STRANGER}),
        ("get_message_volume_by_period",
         {"start_date": "2022-01-01", "end_date": "2024-12-31", "period": "month", "top_n": 5}),
    ],
)  # fmt: skip
def test_redacted_keeps_the_tools_own_ids_dates_and_counts(
    home: Path, name: str, arguments: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    first = _one(home, "SELECT min(rowid) FROM messages WHERE text LIKE 'spaceddash%'")
    arguments = {k: str(first) if v == "{first}" else v for k, v in arguments.items()}
    full = _tool(home, "full", name, arguments)["text"]
    redacted = _tool(home, "redacted", name, arguments)["text"]
    assert STRANGER in full  # the test would see a header or count swallowed with it
    assert STRANGER not in redacted and "[phone]" in redacted
    assert len(redacted.splitlines()) == len(full.splitlines()), redacted
    assert _structure(redacted) == _structure(full), redacted


def test_mcp_citations_are_quoted_like_the_text(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    for query in ("crumble", "blorf", "mdblock"):
        for privacy in ("full", "redacted"):
            cited = _tool(home, privacy, "search_messages", {"query": query})["citations"]
            assert cited
            for c in cited:
                for value in (c["text"], c["sender"]):
                    assert not CONTROL.search(value) and "\n" not in value, value
                    for raw in ("</tool_call>", "\u27e6", "<|im_start|>"):
                        assert raw not in value, value


@pytest.mark.parametrize("privacy", ["full", "aggregate"])
def test_words_not_found_are_found_within_the_calls_filters(
    home: Path, privacy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    anywhere = _tool(home, privacy, "search_messages", {"query": "spaceddash"})
    assert anywhere["words_not_found"] == []
    for scope in ({"person": "Sam Rivera"}, {"start_date": "2022-01-01", "end_date": "2022-12-31"}):
        scoped = _tool(home, privacy, "search_messages", {"query": "spaceddash", **scope})
        assert scoped["words_not_found"] == ["spaceddash"], (scope, scoped["words_not_found"])


def test_a_model_on_another_machine_reads_no_phone_in_its_prompt(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    engines: list[ScriptedEngine] = []

    def make_engine(cfg: Any) -> ScriptedEngine:
        engines.append(ScriptedEngine("Done."))
        return engines[-1]

    monkeypatch.setattr(factory, "make_engine", make_engine)
    cfg = load_config(home, privacy="redacted", allow_remote_llm=True)
    history = ["Q: what was Eve's number? A: 415 - 555 - 0199, she said [#12]"]
    handlers.run(Runtime(cfg), "ask", {"question": "who did I text the most?",
                                       "base_url": "http://models.example.net/v1",
                                       "history": history})  # fmt: skip
    sent = "\n".join(m.content for c in engines[-1].calls for m in c.messages)
    assert "Most messages exchanged" in sent  # the ranking hint went: it names the stranger
    for number in (STRANGER, "4155550199"):
        assert secret_digits(number)[-10:] not in secret_digits(sent), sent[-1500:]


def test_the_escape_body_is_what_the_store_holds(home: Path) -> None:
    """The planted body reached the store as written (else the terminal tests prove nothing)."""
    assert _one(home, "SELECT count(*) FROM messages WHERE text = ?", ESC_BODY) == 1
