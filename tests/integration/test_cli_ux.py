"""What a person sees at the terminal, through the real CLI with fake models.

Golden screens in tests/golden/ are rendered at fixed widths (80 and 60 columns, COLUMNS),
without colour (not a terminal), on the seeded demo corpus with the hash embedder and a fixed
time zone, so they only change when the output does. Regenerate after an intended change:
`CASPER_UPDATE_GOLDEN=1 pytest tests/integration/test_cli_ux.py`, then review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic import build_demo_corpus
from tests.first_hour import check_golden
from tests.helpers import index_home, use_fake_embedder, use_fake_search_models

runner = CliRunner()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = build_demo_corpus(tmp_path_factory.mktemp("demo") / "src")
    home = tmp_path_factory.mktemp("ux") / "home"
    home.mkdir()
    (home / "config.toml").write_text('timezone = "America/Los_Angeles"\n')
    with pytest.MonkeyPatch.context() as mp:
        use_fake_embedder(mp)
        result = index_home(home, src, "--json")
    json.loads(result.stdout)  # stdout holds the JSON document and nothing else
    # with --json and stderr not a terminal (CliRunner's is not), no progress lines either;
    # without --json they are printed (tests/integration/test_index_progress.py)
    assert "casper index:" not in result.stderr
    return home


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> None:
    import casper.backends.factory as factory
    from casper.errors import ModelUnavailable

    def no_engine(cfg):  # noqa: ANN001, ANN202
        raise ModelUnavailable("cannot load language model (test)")

    use_fake_search_models(monkeypatch)
    monkeypatch.setattr(factory, "make_engine", no_engine)


def screen(home: Path, width: int, *args: str, stdin: str | None = None):  # noqa: ANN201
    os.environ["COLUMNS"] = str(width)
    try:
        return runner.invoke(app, [*args, "--home", str(home)], input=stdin)
    finally:
        del os.environ["COLUMNS"]


@pytest.mark.parametrize("width", [80, 60])
def test_search_screen(home: Path, models: None, width: int) -> None:
    result = screen(home, width, "search", "dentist appointment", "-k", "4")
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= width
    check_golden(f"search_dentist_{width}", result.stdout)


@pytest.mark.parametrize("width", [80, 60])
def test_contacts_screen_keeps_ids_whole(home: Path, models: None, width: int) -> None:
    result = screen(home, width, "contacts")
    assert result.exit_code == 0
    ids = [p["id"] for p in json.loads(screen(home, width, "contacts", "--json").stdout)]
    for pid in ids:
        assert re.search(rf"^{pid}\b", result.stdout, re.M), pid
    check_golden(f"contacts_{width}", result.stdout)


def test_chats_lists_ids_that_search_takes(home: Path, models: None) -> None:
    rows = json.loads(screen(home, 80, "chats", "--json").stdout)
    assert {"id", "name", "is_group", "members", "messages", "first", "last"} <= set(rows[0])
    assert [r["last"] for r in rows] == sorted((r["last"] for r in rows), reverse=True)
    group = next(r for r in rows if r["is_group"])
    found = screen(home, 80, "search", "climbing", "--chat", str(group["id"]), "--json")
    assert found.exit_code == 0, found.output
    assert {h["chat"] for h in json.loads(found.stdout)["hits"]} == {group["name"]}
    text = screen(home, 80, "chats")
    check_golden("chats_80", text.stdout)


def test_ambiguous_chat_points_at_casper_chats(home: Path, models: None) -> None:
    result = screen(home, 80, "search", "x", "--chat", "a")
    assert result.exit_code == 1 and "casper chats" in result.stderr


def test_stats_says_its_range_and_shows_months(home: Path, models: None) -> None:
    result = screen(home, 80, "stats", "Sam", "--since", "2024-01-01", "--until", "2024-03-31")
    assert result.exit_code == 0, result.output
    assert "range: 2024-01-01 → 2024-03-31" in result.stdout
    assert "messages by week" in result.stdout  # a quarter: weeks, not months
    assert re.search(r"^  Mon  [ ░▒▓█]{48}  \d+$", result.stdout, re.M)  # the heatmap
    assert "2023-12" not in result.stdout
    check_golden("stats_sam_q1_80", result.stdout)
    everything = screen(home, 80, "stats", "Sam")
    assert "range: all time" in everything.stdout
    data = json.loads(screen(home, 80, "stats", "Sam", "--since", "2024-01-01", "--json").stdout)
    assert data["range"] == {"since": "2024-01-01", "until": None}
    assert set(data["by_month"]) == {m for m in data["by_month"] if m >= "2024-01"}


def test_every_command_has_dash_h_and_an_example() -> None:
    commands = ["index", "contacts", "chats", "stats", "search", "ask", "chat", "show",
                "doctor", "eval", "demo", "pull", "serve"]  # fmt: skip
    for name in commands:
        result = runner.invoke(app, [name, "-h"])
        assert result.exit_code == 0, name
        assert "Examples:" in result.stdout and f"$ casper {name}" in result.stdout, name
    assert runner.invoke(app, ["-h"]).exit_code == 0


def test_help_shows_the_defaults_that_none_hides() -> None:
    search = runner.invoke(app, ["search", "-h"], env={"COLUMNS": "200"}).stdout
    assert re.search(r"-k .*number of hits \[default: 8, setting top_k\]", search)
    ask = runner.invoke(app, ["ask", "-h"], env={"COLUMNS": "200"}).stdout
    assert re.search(r"--max-iterations.*\[default: 5, setting max_iterations\]", ask)


def test_chat_keeps_slash_commands_local_and_carries_follow_ups(home: Path, models: None) -> None:
    session = (
        "/help\n/bogus\nwhat did Priya say about the dentist\n/sources\n"
        "what did she do about it?\n/clear\n/sources\n"
    )
    result = screen(home, 80, "chat", "--no-llm", stdin=session)
    assert result.exit_code == 0, result.output
    assert "/sources" in result.stderr and "unknown command /bogus" in result.stderr
    assert "read as: what did she do about it? (about Priya Natarajan" in result.stderr
    assert "history and sources cleared" in result.stderr
    assert "no sources yet" in result.stderr  # /clear dropped the old sources
    assert "/sources shows them" in result.stdout
    assert result.stdout.endswith("\n")  # Ctrl-D / end of input leaves a fresh line
    saved = json.loads((home / "chat_history.json").read_text())
    assert saved["turns"] == []  # /help and /bogus were never sent as questions (and /clear)
    history = (home / "chat_history.json").stat().st_mode & 0o777
    assert history == 0o600


def test_show_wraps_under_the_text_column(home: Path, models: None) -> None:
    hits = json.loads(screen(home, 80, "search", "dentist moved", "-k", "1", "--json").stdout)
    rowid = str(hits["hits"][0]["messages"][0]["rowid"])
    result = screen(home, 60, "show", rowid, "--before", "2", "--after", "2")
    assert result.exit_code == 0, result.output
    check_golden("show_60", result.stdout)
