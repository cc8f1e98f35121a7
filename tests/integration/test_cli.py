"""The command-line contract (CLI.md) through typer's CliRunner, with fake models.

Real SQLite + LanceDB in tmp dirs; the embedder, reranker and engine are the test fakes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic import build_demo_corpus
from tests.fakes import ScriptedEngine
from tests.fakes_search import HashEmbedder
from tests.helpers import index_home, index_json, use_fake_search_models

runner = CliRunner()


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Route every model the CLI builds to a deterministic fake."""
    import casper.backends.factory as factory

    engine_box: dict = {"engine": None}
    use_fake_search_models(monkeypatch)

    def make_engine(cfg):  # noqa: ANN001, ANN202
        from casper.errors import ModelUnavailable

        if engine_box["engine"] is None:
            raise ModelUnavailable("cannot load language model (test)")
        return engine_box["engine"]

    monkeypatch.setattr(factory, "make_engine", make_engine)
    return engine_box


@pytest.fixture
def indexed(demo_corpus, fake_models, tmp_path: Path):  # noqa: ANN001, ANN201
    home = tmp_path / "home"
    return home, index_json(home, demo_corpus)


def run(home: Path, *args: str):  # noqa: ANN201
    return runner.invoke(app, [*args, "--home", str(home)])


def instant(ts: str | None) -> float | None:
    """An ISO timestamp as UTC seconds: the same moment whatever offset it is written in."""
    return None if ts is None else datetime.fromisoformat(ts).timestamp()


def is_ts(value: object) -> bool:
    """ISO-8601 with an offset, as CLI.md promises for every timestamp."""
    return isinstance(value, str) and datetime.fromisoformat(value).tzinfo is not None


def test_index_json_shape_and_incremental_noop(indexed, demo_corpus) -> None:  # noqa: ANN001
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
    facts, rows = demo_corpus.facts, demo_corpus.facts["rows"]
    assert data["messages_total"] == data["messages_new"] == facts["messages_visible"]
    assert data["chunks_new"] == data["chunks_total"] > 0
    assert data["decode_failures"] == 0  # the generator writes only decodable bodies
    folded = rows["tapbacks"] + rows["tapback_removals"] + rows["legacy_reactions"]
    assert data["reactions"] == folded
    assert data["events"] == rows["system_events"] + rows["unsent"]
    assert data["deleted"] == 0  # nothing indexed yet could have been deleted
    assert data["vectors_done"] == data["vectors_total"] == data["chunks_total"]
    assert data["coverage"]["first"].startswith("2022-03")
    for end in ("first", "last"):
        assert is_ts(data["coverage"][end])
        assert instant(data["coverage"][end]) == instant(facts["coverage"][end])
    assert isinstance(data["elapsed_s"], float) and data["elapsed_s"] >= 0
    second = index_json(home, demo_corpus)
    assert second["messages_new"] == 0 and second["chunks_new"] == 0
    assert second["messages_total"] == data["messages_total"] and second["noop"] is True


def test_contacts_and_stats_json(indexed, demo_corpus) -> None:  # noqa: ANN001
    home, _ = indexed
    people = json.loads(run(home, "contacts", "--json").stdout)
    priya = next(p for p in people if p["name"] == "Priya Natarajan")
    expected = demo_corpus.facts["people"]["Priya Natarajan"]
    assert priya["received"] == expected["received"]
    assert (priya["sent"], priya["handles"]) == (expected["sent"], expected["handles"])
    assert instant(priya["first"]) == instant(expected["first"])
    assert instant(priya["last"]) == instant(expected["last"])
    assert re.fullmatch(r"p_[0-9a-f]+", priya["id"])
    assert [p["sent"] + p["received"] for p in people] == sorted(
        (p["sent"] + p["received"] for p in people), reverse=True
    )  # busiest first
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
    assert stats["person"] == {
        "id": priya["id"],
        "name": priya["name"],
        "handles": priya["handles"],
    }
    assert (stats["sent"], stats["received"]) == (expected["sent"], expected["received"])
    assert (instant(stats["first"]), instant(stats["last"])) == (
        instant(expected["first"]),
        instant(expected["last"]),
    )
    total = stats["sent"] + stats["received"]
    assert isinstance(stats["active_days"], int) and 0 < stats["active_days"] <= total
    assert set(stats["median_reply_s"]) == {"me", "them"}
    assert all(isinstance(v, float) and v > 0 for v in stats["median_reply_s"].values())
    assert set(stats["initiations"]) == {"me", "them"} and sum(stats["initiations"].values()) > 0
    assert 0 < len(stats["top_emoji"]) <= 5
    assert all(isinstance(e, str) and n > 0 for e, n in stats["top_emoji"])
    assert [n for _, n in stats["top_emoji"]] == sorted(
        (n for _, n in stats["top_emoji"]), reverse=True
    )
    assert 0 < len(stats["busiest_hours"]) <= 5
    assert all(0 <= h < 24 and n > 0 for h, n in stats["busiest_hours"])
    assert all(re.fullmatch(r"\d{4}-\d{2}", month) for month in stats["by_month"])
    assert sum(stats["by_month"].values()) == total  # every counted message in one month
    assert (
        min(stats["by_month"]) == stats["first"][:7] and max(stats["by_month"]) == stats["last"][:7]
    )
    ranged = json.loads(
        run(
            home, "stats", "Priya", "--since", "2024-01-01", "--until", "2024-12-31", "--json"
        ).stdout
    )
    assert (
        ranged["received"]
        == demo_corpus.facts["people"]["Priya Natarajan"]["by_year"]["2024"]["received"]
    )
    assert ranged["sent"] == expected["by_year"]["2024"]["sent"]
    assert set(ranged["by_month"]) == {m for m in stats["by_month"] if m.startswith("2024-")}


def test_search_finds_planted_messages_with_filters(indexed, demo_corpus) -> None:  # noqa: ANN001
    home, _ = indexed
    keys = demo_corpus.facts["keys"]
    out = json.loads(run(home, "search", "wifi password climbing gym", "--json", "-k", "3").stdout)
    guids = [m["guid"] for h in out["hits"] for m in h["messages"]]
    assert keys["wifi"] in guids
    assert {"query", "filters", "hits"} <= set(out)
    assert out["query"] == "wifi password climbing gym"
    assert out["filters"] == {
        "person": None,
        "chat": None,
        "since": None,
        "until": None,
        "mode": "hybrid",
        "lexical": "lancedb",
        "rerank": True,
    }
    assert 0 < len(out["hits"]) <= 3
    hit = out["hits"][0]
    assert {"chunk_id", "chat", "score", "start", "end", "participants", "messages"} <= set(hit)
    for hit in out["hits"]:
        msgs = hit["messages"]
        chat_id, first, last, unit = hit["chunk_id"].split(":")
        assert chat_id.isdigit() and unit == "3x1"
        assert {int(first), int(last)} <= {m["rowid"] for m in msgs}
        assert isinstance(hit["chat"], str) and hit["chat"] and isinstance(hit["score"], float)
        assert is_ts(hit["start"]) and instant(hit["start"]) <= instant(hit["end"])
        assert hit["participants"] and all(isinstance(p, str) for p in hit["participants"])
        assert [instant(m["ts"]) for m in msgs] == sorted(instant(m["ts"]) for m in msgs)
        for m in msgs:
            assert isinstance(m["rowid"], int) and is_ts(m["ts"])
            assert all(isinstance(m[k], str) and m[k] for k in ("guid", "sender", "text"))
    scores = [h["score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)
    only_mom = json.loads(run(home, "search", "wifi password", "--person", "Mom", "--json").stdout)
    assert only_mom["hits"], "a person filter that finds nothing proves nothing"
    assert all(h["chat"] == "Mom" for h in only_mom["hits"])
    mom_id = next(
        p["id"] for p in json.loads(run(home, "contacts", "--json").stdout) if p["name"] == "Mom"
    )
    assert only_mom["filters"]["person"] == mom_id
    japanese = json.loads(run(home, "search", "寿司", "--mode", "bm25", "--json").stdout)
    assert keys["sushi_jp"] in [m["guid"] for h in japanese["hits"] for m in h["messages"]]


def test_search_reports_how_it_read_the_question(indexed) -> None:  # noqa: ANN001
    home, _ = indexed
    asked = "What did Priya say about the dentist on 2024-03-05?"
    read = json.loads(run(home, "search", asked, "--json").stdout)["understood"]
    assert read["literal"] is False
    assert read["lexical_query"] == "about the dentist"  # "say": how it asks, not what about
    assert read["dates"]["from"] == read["dates"]["to"] == "2024-03-05"
    assert [p["said"] for p in read["people"]] == ["Priya"]
    assert {"what", "did"} <= set(read["dropped"])
    # searched beside it: the words as typed (the date kept, Priya a scope) and the date's term
    assert read["typed_query"] == "about the dentist on 2024 03 05"
    assert read["date_terms"] == ["d20240305"]
    literal = json.loads(run(home, "search", asked, "--literal", "--json").stdout)["understood"]
    assert literal == {"literal": True, "lexical_query": asked}
    human = run(home, "search", asked)
    said = " ".join(human.stderr.split())
    assert "read as:" in said and "chats with Priya" in said


def test_show_prints_the_conversation_around_a_message(indexed, demo_corpus) -> None:  # noqa: ANN001
    home, _ = indexed
    guid = demo_corpus.facts["keys"]["dentist_moved"]
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
    assert data["guards"] == [] and data["notices"] == ["model_unavailable"] and data["citations"]
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
    assert isinstance(data["answer"], str) and data["answer"].strip()
    assert data["iterations"] == 0 and data["tool_calls"] == [] and data["model"] is None
    assert (data["tokens"]["prompt"], data["tokens"]["completion"]) == (0, 0)
    assert isinstance(data["elapsed_s"], float) and data["elapsed_s"] >= 0
    for c in data["citations"]:
        assert set(c) == {"id", "guid", "time", "sender", "text", "chat", "rowid", "ts"}
        assert isinstance(c["rowid"], int) and is_ts(c["ts"]) and c["text"]
    assert "Traceback" not in result.output


def test_ask_runs_the_agent_and_cites(indexed, fake_models, demo_corpus) -> None:  # noqa: ANN001
    home, _ = indexed
    fake_models["engine"] = ScriptedEngine(
        '<tool_call>{"name": "search_messages", '
        '"arguments": {"query": "climbing gym wifi password"}}</tool_call>',
        "The wifi password is in the group chat.",
        "It is in the group chat, I think.",
    )
    data = json.loads(run(home, "ask", "what's the climbing gym wifi?", "--json").stdout)
    assert data["iterations"] == 3 and data["tool_calls"][0]["name"] == "search_messages"
    assert data["tool_calls"][0]["ok"] is True
    # two uncited answers: one nudge, then the deterministic summary of what the tools showed
    # the model's reply was not used: the answer is the fallback, said as such
    assert data["guards"] == ["ungrounded_answer"] and data["grounding"] == "fallback"
    assert demo_corpus.facts["keys"]["wifi"] in [c["guid"] for c in data["citations"]]


def test_ambiguous_person_is_an_error_with_candidates(tmp_path: Path, fake_models) -> None:  # noqa: ANN001
    from ingest.synthetic import DemoToggles

    src = build_demo_corpus(tmp_path / "src", toggles=DemoToggles(ambiguous_sam=True))
    home = tmp_path / "home"
    index_home(home, src)
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
    empty = tmp_path / "empty"
    result = runner.invoke(app, ["contacts", "--home", str(empty)])
    # the command to paste names that data dir, as the one that failed did
    assert result.exit_code == 1 and f"casper --home {empty} index" in result.output


def test_no_message_text_in_logs(demo_corpus, fake_models, tmp_path: Path, caplog) -> None:  # noqa: ANN001
    import logging

    caplog.set_level(logging.WARNING)
    result = runner.invoke(
        app,
        [
            "index",
            "--home",
            str(tmp_path / "h"),
            "--chat-db",
            str(demo_corpus.chat_db),
            "--contacts",
            str(demo_corpus.contacts),
        ],
    )
    assert result.exit_code == 0
    logged = " ".join(r.getMessage() for r in caplog.records) + result.stderr
    for planted in ("pumpkin pie", "wifi", "dentist", "寿司"):
        assert planted not in logged


HEAVY = (
    "lancedb", "pyarrow", "numpy", "torch", "mlx", "mlx_lm", "sentence_transformers",
    "transformers", "dateparser", "rank_bm25", "phonenumbers", "matplotlib", "openai", "mcp",
    "httpx2",
)  # fmt: skip
# Runs the real entry point in a fresh interpreter, then reports the exit code and which heavy
# libraries ended up imported (on stderr, after everything the command printed).
_RUN_CLI = """
import json, sys
wanted = set(json.loads(sys.stdin.read()))
from casper.cli import app
try:
    app(sys.argv[1:], prog_name="casper")
    code = 0
except SystemExit as exc:
    code = exc.code or 0
heavy = sorted(m for m in sys.modules if m.split(".")[0] in wanted)
print(json.dumps({"exit": code, "heavy": heavy}), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["search", "--help"],
        ["ask", "--help"],
        ["index", "--help"],
        ["mcp", "--help"],
        ["--version"],
    ],
)
def test_help_is_fast_and_imports_no_heavy_library(args: list[str]) -> None:
    """`casper --help` (and a command's help) is read before any model or index library loads:
    what it costs is Python, typer and rich, never lancedb, torch, mlx or dateparser."""
    out = subprocess.run(
        [sys.executable, "-c", _RUN_CLI, *args],
        input=json.dumps(HEAVY),
        capture_output=True,
        text=True,
        env={**os.environ},
        check=True,
    )
    report = json.loads(out.stderr.strip().splitlines()[-1])
    assert report == {"exit": 0, "heavy": []}
    assert (
        ("Usage: casper" in out.stdout)
        if args != ["--version"]
        else out.stdout.startswith("casper ")
    )


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


class _FailingEmbedder(HashEmbedder):
    """Embeds `batches` calls, then fails like an interrupted run."""

    def __init__(self, batches: int) -> None:
        super().__init__(64)
        self.left = batches

    def embed_documents(self, texts, on_progress=None):  # noqa: ANN001, ANN201
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return super().embed_documents(texts, on_progress)


def test_interrupted_embedding_is_searchable_reported_and_resumed(
    demo_corpus, fake_models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    import casper.backends.factory as factory

    home = tmp_path / "home"
    args = ["index", "--home", str(home), "--chat-db", str(demo_corpus.chat_db),
            "--contacts", str(demo_corpus.contacts)]  # fmt: skip
    monkeypatch.setattr(factory, "make_embedder", lambda cfg: _FailingEmbedder(1))
    interrupted = runner.invoke(app, args)
    assert interrupted.exit_code != 0
    doctor = json.loads(run(home, "doctor", "--json").stdout)
    done, total = doctor["counts"]["vectors_done"], doctor["counts"]["vectors_total"]
    assert 0 < done < total  # the first batch was kept
    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    found = run(home, "search", "dinner", "--json")
    assert found.exit_code == 0 and json.loads(found.stdout)["hits"]
    assert f"semantic index {int(100 * done / total)} % built" in found.stderr
    resumed = runner.invoke(app, [*args, "--json"])
    assert resumed.exit_code == 0, resumed.output
    assert f"resuming: {done} of {total} chunks already embedded" in resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["vectors_done"] == data["vectors_total"] == total
    again = run(home, "search", "dinner")
    assert "semantic index" not in again.stderr
