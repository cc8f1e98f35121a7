"""The command-line contract (CLI.md) through typer's CliRunner, with fake models.

Real SQLite + LanceDB in tmp dirs; the embedder, reranker and engine are the test fakes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic import build_demo_corpus
from tests.fakes import ScriptedEngine
from tests.fakes_search import HashEmbedder, OverlapReranker

runner = CliRunner()


@pytest.fixture(scope="module")
def demo_src(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return build_demo_corpus(tmp_path_factory.mktemp("demo") / "src")


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Route every model the CLI builds to a deterministic fake."""
    import casper.backends.factory as factory

    engine_box: dict = {"engine": None}
    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    monkeypatch.setattr(factory, "make_reranker", lambda cfg: (OverlapReranker(), None))

    def make_engine(cfg):  # noqa: ANN001, ANN202
        from casper.errors import ModelUnavailable

        if engine_box["engine"] is None:
            raise ModelUnavailable("cannot load language model (test)")
        return engine_box["engine"]

    monkeypatch.setattr(factory, "make_engine", make_engine)
    return engine_box


@pytest.fixture
def indexed(demo_src, fake_models, tmp_path: Path):  # noqa: ANN001, ANN201
    home = tmp_path / "home"
    result = runner.invoke(
        app,
        [
            "index",
            "--home",
            str(home),
            "--chat-db",
            str(demo_src.chat_db),
            "--contacts",
            str(demo_src.contacts),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    return home, json.loads(result.stdout)


def run(home: Path, *args: str):  # noqa: ANN201
    return runner.invoke(app, [*args, "--home", str(home)])


def test_index_json_shape_and_incremental_noop(indexed, demo_src) -> None:  # noqa: ANN001
    home, data = indexed
    for key in (
        "messages_total",
        "messages_new",
        "chunks_total",
        "chunks_new",
        "decode_failures",
        "reactions",
        "events",
        "deleted",
        "coverage",
        "elapsed_s",
    ):
        assert key in data
    assert data["messages_total"] == demo_src.facts["messages_visible"]
    assert data["chunks_new"] == data["chunks_total"] > 0
    assert data["coverage"]["first"].startswith("2022-03")
    again = runner.invoke(
        app,
        [
            "index",
            "--home",
            str(home),
            "--chat-db",
            str(demo_src.chat_db),
            "--contacts",
            str(demo_src.contacts),
            "--json",
        ],
    )
    second = json.loads(again.stdout)
    assert second["messages_new"] == 0 and second["chunks_new"] == 0


def test_contacts_and_stats_json(indexed, demo_src) -> None:  # noqa: ANN001
    home, _ = indexed
    people = json.loads(run(home, "contacts", "--json").stdout)
    priya = next(p for p in people if p["name"] == "Priya Natarajan")
    assert priya["received"] == demo_src.facts["people"]["Priya Natarajan"]["received"]
    stats = json.loads(run(home, "stats", "Priya", "--json").stdout)
    assert stats["person"]["id"] == priya["id"]
    for key in (
        "sent",
        "received",
        "first",
        "last",
        "active_days",
        "median_reply_s",
        "initiations",
        "top_emoji",
        "busiest_hours",
        "by_month",
    ):
        assert key in stats
    ranged = json.loads(
        run(
            home, "stats", "Priya", "--since", "2024-01-01", "--until", "2024-12-31", "--json"
        ).stdout
    )
    assert (
        ranged["received"]
        == demo_src.facts["people"]["Priya Natarajan"]["by_year"]["2024"]["received"]
    )


def test_search_finds_planted_messages_with_filters(indexed, demo_src) -> None:  # noqa: ANN001
    home, _ = indexed
    keys = demo_src.facts["keys"]
    out = json.loads(run(home, "search", "wifi password climbing gym", "--json", "-k", "3").stdout)
    guids = [m["guid"] for h in out["hits"] for m in h["messages"]]
    assert keys["wifi"] in guids
    assert {"query", "filters", "hits"} <= set(out)
    hit = out["hits"][0]
    assert {"chunk_id", "chat", "score", "start", "end", "participants", "messages"} <= set(hit)
    only_mom = json.loads(run(home, "search", "wifi password", "--person", "Mom", "--json").stdout)
    assert all(h["chat"] == "Mom" for h in only_mom["hits"])
    japanese = json.loads(run(home, "search", "寿司", "--mode", "bm25", "--json").stdout)
    assert keys["sushi_jp"] in [m["guid"] for h in japanese["hits"] for m in h["messages"]]


def test_search_reports_how_it_read_the_question(indexed) -> None:  # noqa: ANN001
    home, _ = indexed
    asked = "What did Priya say about the dentist on 2024-03-05?"
    read = json.loads(run(home, "search", asked, "--json").stdout)["understood"]
    assert read["literal"] is False
    assert read["lexical_query"] == "say about the dentist"
    assert read["dates"]["from"] == read["dates"]["to"] == "2024-03-05"
    assert [p["said"] for p in read["people"]] == ["Priya"]
    assert {"what", "did"} <= set(read["dropped"])
    literal = json.loads(run(home, "search", asked, "--literal", "--json").stdout)["understood"]
    assert literal == {"literal": True, "lexical_query": asked}
    human = run(home, "search", asked)
    said = " ".join(human.stderr.split())
    assert "read as:" in said and "chats with Priya" in said


def test_show_prints_the_conversation_around_a_message(indexed, demo_src) -> None:  # noqa: ANN001
    home, _ = indexed
    guid = demo_src.facts["keys"]["dentist_moved"]
    data = json.loads(run(home, "show", guid, "--before", "2", "--after", "2", "--json").stdout)
    assert data["message"]["guid"] == guid
    assert [m["guid"] for m in data["context"]].index(guid) == 2
    human = run(home, "show", str(data["message"]["rowid"]))
    assert human.exit_code == 0 and "Priya" in human.stdout


def test_ask_without_a_model_answers_from_search(indexed) -> None:  # noqa: ANN001
    home, _ = indexed
    result = run(home, "ask", "what is the wifi password at the climbing gym", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["guards"] == ["model_unavailable"] and data["citations"]
    assert {
        "answer",
        "citations",
        "iterations",
        "tool_calls",
        "guards",
        "model",
        "tokens",
        "elapsed_s",
    } <= set(data)
    assert "Traceback" not in result.output


def test_ask_runs_the_agent_and_cites(indexed, fake_models, demo_src) -> None:  # noqa: ANN001
    home, _ = indexed
    fake_models["engine"] = ScriptedEngine(
        '<tool_call>{"name": "search_messages", '
        '"arguments": {"query": "climbing gym wifi password"}}</tool_call>',
        "The wifi password is in the group chat.",
    )
    data = json.loads(run(home, "ask", "what's the climbing gym wifi?", "--json").stdout)
    assert data["iterations"] == 2 and data["tool_calls"][0]["name"] == "search_messages"
    assert data["tool_calls"][0]["ok"] is True
    assert demo_src.facts["keys"]["wifi"] in [c["guid"] for c in data["citations"]]


def test_ambiguous_person_is_an_error_with_candidates(tmp_path: Path, fake_models) -> None:  # noqa: ANN001
    from ingest.synthetic import DemoToggles

    src = build_demo_corpus(tmp_path / "src", toggles=DemoToggles(ambiguous_sam=True))
    home = tmp_path / "home"
    assert (
        runner.invoke(
            app,
            [
                "index",
                "--home",
                str(home),
                "--chat-db",
                str(src.chat_db),
                "--contacts",
                str(src.contacts),
            ],
        ).exit_code
        == 0
    )
    result = run(home, "stats", "Sam")
    assert result.exit_code == 1
    assert "error:" in result.output and "p_" in result.output and "hint:" in result.output


@pytest.mark.parametrize("content", [b"", b"this is not sqlite at all" * 50])
def test_bad_chat_db_is_an_error_with_hint_and_store_untouched(
    indexed,
    content: bytes,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    home, _ = indexed
    before = (home / "casper.sqlite").read_bytes()
    bad = tmp_path / "bad.db"
    bad.write_bytes(content)
    result = runner.invoke(app, ["index", "--home", str(home), "--chat-db", str(bad)])
    assert result.exit_code == 1
    assert "error:" in result.output and "hint:" in result.output
    assert "Traceback" not in result.output
    assert (home / "casper.sqlite").read_bytes() == before


def test_missing_chat_db(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["index", "--home", str(tmp_path / "h"), "--chat-db", str(tmp_path / "nope.db")]
    )
    assert result.exit_code == 1 and "error:" in result.output and "hint:" in result.output


def test_commands_before_indexing_say_run_index(tmp_path: Path) -> None:
    result = runner.invoke(app, ["contacts", "--home", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "casper index" in result.output


def test_no_message_text_in_logs(demo_src, fake_models, tmp_path: Path, caplog) -> None:  # noqa: ANN001
    import logging

    caplog.set_level(logging.WARNING)
    result = runner.invoke(
        app,
        [
            "index",
            "--home",
            str(tmp_path / "h"),
            "--chat-db",
            str(demo_src.chat_db),
            "--contacts",
            str(demo_src.contacts),
        ],
    )
    assert result.exit_code == 0
    logged = " ".join(r.getMessage() for r in caplog.records) + result.stderr
    for planted in ("pumpkin pie", "wifi", "dentist", "寿司"):
        assert planted not in logged


def test_help_is_fast_and_imports_no_heavy_library() -> None:
    code = (
        "import sys, casper.cli; heavy = [m for m in ('lancedb', 'torch', 'mlx', "
        "'sentence_transformers', 'dateparser') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}, check=True
    )
    assert out.stdout.strip() == "[]"


def test_chat_repl_keeps_private_history_and_sources(indexed) -> None:  # noqa: ANN001
    home, _ = indexed
    session = "what is the wifi password at the climbing gym\n/sources\n/quit\n"
    result = runner.invoke(app, ["chat", "--home", str(home), "--no-llm"], input=session)
    assert result.exit_code == 0, result.output
    assert "Sources" in result.stdout and "wifi" in result.stdout.lower()
    history = home / "chat_history.json"
    assert history.stat().st_mode & 0o077 == 0
    saved = json.loads(history.read_text())
    assert saved["turns"][0][0].startswith("what is the wifi password")
    cleared = runner.invoke(app, ["chat", "--home", str(home), "--no-llm"], input="/clear\n/quit\n")
    assert cleared.exit_code == 0
    assert json.loads(history.read_text())["turns"] == []
