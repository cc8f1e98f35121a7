"""One word for each field of a message, wherever a message is printed for a program to read —
`show --json`, `search --json`, `ask --json`'s citations, an MCP tool's citations, the review's
moments and `export`: `id`, `time`, `sender`, `text`, `chat`, with the same value for the same
message. The old `rowid` and `ts` stay beside them for a release (clients read them), with the
same values, and docs/cli.md says they are deprecated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import index_home, use_fake_search_models
from tests.paths import REPO

runner = CliRunner()
FIELDS = {"id", "time", "sender", "text", "chat"}
OLD = {"rowid": "id", "ts": "time"}  # deprecated name → the name it is kept beside


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("vocabulary") / "home"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(place, demo_corpus)
    return place


@pytest.fixture(autouse=True)
def _fake_models(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_search_models(monkeypatch)


def ok(home: Path, *args: str) -> dict:
    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def exported(home: Path, tmp_path: Path) -> dict[int, dict]:
    out = tmp_path / "all.jsonl"
    result = runner.invoke(app, ["export", "-o", str(out), "--home", str(home)])
    assert result.exit_code == 0, result.output
    return {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}


def check(message: dict, rows: dict[int, dict], where: str, *, aliases: bool = True) -> None:
    assert set(message) >= FIELDS, (where, sorted(message))
    row = rows[message["id"]]
    assert (message["time"], message["sender"], message["chat"]) == (
        row["time"], row["sender"], row["chat"]), where  # fmt: skip
    if aliases:  # the old names, same values, one release
        for old, new in OLD.items():
            assert message[old] == message[new], (where, old)


def test_show_search_ask_and_export_say_the_same_words(home: Path, tmp_path: Path) -> None:
    rows = exported(home, tmp_path)
    hits = ok(home, "search", "thanksgiving", "--json")["hits"]
    assert hits
    for hit in hits:
        for m in hit["messages"]:
            check(m, rows, "search --json")
    shown = ok(home, "show", str(hits[0]["messages"][0]["id"]), "--json")
    for m in [shown["message"], *shown["context"]]:
        check(m, rows, "show --json")
    cited = ok(home, "ask", "when is thanksgiving?", "--no-llm", "--json")["citations"]
    assert cited
    for m in cited:
        check(m, rows, "ask --json")


def test_mcp_citations_say_the_same_words(home: Path, tmp_path: Path) -> None:
    from casper.app.requests import ToolRequest
    from casper.app.runtime import Runtime
    from casper.app.tool_calls import call_tool
    from casper.config import load_config

    rows = exported(home, tmp_path)
    rt = Runtime(load_config(home))
    doc = call_tool(rt, ToolRequest("search_messages", {"query": "thanksgiving"}), lambda e: None)
    assert doc["ok"] and doc["citations"]
    for m in doc["citations"]:
        check(m, rows, "mcp search_messages")


def test_the_reviews_moments_say_the_same_words(home: Path, tmp_path: Path) -> None:
    rows = exported(home, tmp_path)
    review = ok(home, "review", "2023", "--json")
    for key in ("first_message", "last_message"):  # `ts` was their only other name
        check(review[key], rows, f"review {key}", aliases=False)
        assert review[key]["ts"] == review[key]["time"]


def test_the_old_names_are_documented_as_deprecated() -> None:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for old, new in OLD.items():  # on one line: the old name, that it is deprecated, the new
        assert any(f"`{old}`" in line and "deprecated" in line and f"`{new}`" in line
                   for line in text.splitlines()), old  # fmt: skip
