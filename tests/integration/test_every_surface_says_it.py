"""Every surface says what `search` says: dates outside the history name the
history's span in `ask --no-llm`, `stats --since` and the MCP tools, and an MCP result carries
the searched words no message contains (`words_not_found` and a notice), in its structured
content and in the text the client's model reads. In process (MCP through the SDK's own
client), on the demo with fake models: its history runs 2022-03 → 2024-10, so "last year" and
"last March" are always after it."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import date, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from casper.cli import app
from tests.first_hour import run_demo, use_demo_fakes

runner = CliRunner()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp-notices") / "casper-home"
    with pytest.MonkeyPatch.context() as mp:
        use_demo_fakes(mp)
        run_demo(base)
    return base / "demo"


def call(home: Path, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call through `casper mcp`'s server, in this process."""
    from mcp import Client

    from casper.cli.base import config
    from casper.cli.mcp import build_server
    from casper.cli.transport import Session

    server = build_server(Session(config(home), no_service=True))

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(main)


def test_a_word_no_message_contains_is_said_in_the_result(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_demo_fakes(monkeypatch)
    result = call(home, "search_messages", {"query": "xylophone"})
    data = result.structured_content
    assert result.is_error is False and data["ok"] is True
    assert data["words_not_found"] == ["xylophone"]
    said = [n for n in data["notices"] if n.startswith("no message contains 'xylophone'")]
    assert said, data["notices"]
    assert said[0] in result.content[0].text  # the client's model reads it too
    found = call(home, "search_messages", {"query": "thanksgiving"}).structured_content
    assert found["words_not_found"] == []
    assert not [n for n in found["notices"] if n.startswith("no message contains")]


def history(home: Path) -> tuple[str, str]:
    """The first and last day of the demo's history, as the store has them (its own zone)."""
    from zoneinfo import ZoneInfo

    conn = sqlite3.connect(f"file:{home / 'casper.sqlite'}?mode=ro", uri=True)
    try:
        first, last = conn.execute("SELECT min(ts), max(ts) FROM messages WHERE kind != 'system' "
                                   "AND ts > 0").fetchone()  # fmt: skip
    finally:
        conn.close()
    zone = ZoneInfo(re.findall(r'timezone = "([^"]+)"', (home / "config.toml").read_text())[0])
    return tuple(datetime.fromtimestamp(t, zone).date().isoformat() for t in (first, last))  # type: ignore[return-value]


LAST_YEAR = date.today().year - 1
# ask --no-llm: (question, how the answer begins); each names the history's span
ASKED = [
    ("how many messages with Sam last year?", f"No messages between {LAST_YEAR}-01-01 and "
     f"{LAST_YEAR}-12-31. Your messages here run from {{first}} to {{last}}."),
    ("who texts me most last year?", f"No messages between {LAST_YEAR}-01-01 and "
     f"{LAST_YEAR}-12-31. Your messages here run from {{first}} to {{last}}."),
    ("when did I last talk to Priya last year?", f"No messages between {LAST_YEAR}-01-01 and "
     f"{LAST_YEAR}-12-31. Your messages here run from {{first}} to {{last}}."),
    ("what did Sam say about thanksgiving last year?", f"Nothing between {LAST_YEAR}-01-01 and "
     f"{LAST_YEAR}-12-31 (your messages here run from {{first}} to {{last}}); the closest"),
]  # fmt: skip


@pytest.mark.parametrize(("question", "begins"), ASKED)
def test_ask_names_the_history_for_dates_outside_it(
    home: Path, monkeypatch: pytest.MonkeyPatch, question: str, begins: str
) -> None:
    use_demo_fakes(monkeypatch)
    first, last = history(home)
    result = runner.invoke(app, ["ask", question, "--no-llm", "--json", "--home", str(home)])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)["answer"]
    assert answer.startswith(begins.format(first=first, last=last)), answer
    assert "you sent 0" not in answer


def test_stats_since_a_time_after_the_history_says_so(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_demo_fakes(monkeypatch)
    first, last = history(home)
    result = runner.invoke(app, ["stats", "Sam", "--since", "last March", "--home", str(home)])
    assert result.exit_code == 0, result.output
    said = rf"notice: no messages since \d{{4}}-03-01; your messages run from {first} to {last}"
    assert re.search(said, result.stderr), result.stderr
    inside = runner.invoke(app, ["stats", "Sam", "--since", "2023-03-01", "--home", str(home)])
    assert "your messages run from" not in inside.stderr  # a range it covers: no notice


def test_an_mcp_call_with_dates_after_the_history_says_so(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_demo_fakes(monkeypatch)
    first, last = history(home)
    result = call(home, "search_messages", {"query": "dinner", "start_date": "last March"})
    notices = result.structured_content["notices"]
    said = [n for n in notices if n.endswith(f"; your messages run from {first} to {last}")]
    assert said and said[0].startswith("no messages since "), notices
    assert said[0] in result.content[0].text
    stats = call(home, "get_contact_stats", {"person": "Sam", "start_date": "2023-01-01",
                                             "end_date": "2023-12-31"})  # fmt: skip
    assert not [n for n in stats.structured_content["notices"] if "your messages run" in n]


def test_the_readmes_search_leads_with_the_topic_not_the_verb(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "when did Sam and I plan Thanksgiving?" searched "and plan Thanksgiving": "plan" matched
    every "any plans this weekend?" in Sam's chats. The topic alone is searched; Sam's
    Thanksgiving messages, though the weakest matches of all chats', still count inside his
    scope (with the hash embedder here, the words alone order it)."""
    use_demo_fakes(monkeypatch)
    result = runner.invoke(app, ["search", "when did Sam and I plan Thanksgiving?", "--json",
                                 "-k", "3", "--home", str(home)])  # fmt: skip
    data = json.loads(result.stdout)
    assert data["understood"]["lexical_query"] == "Thanksgiving"
    assert {"plan", "and"} <= set(data["understood"]["dropped"])
    first = " ".join(m["text"].lower() for m in data["hits"][0]["messages"])
    assert "thanksgiving" in first and data["hits"][0]["chat"] == "Sam Rivera"
    assert data["hits"][0]["matched_words"] == ["thanksgiving"]
