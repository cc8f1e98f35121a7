"""The second hour with Casper: answers that never mislead, and the screens a newcomer trips on
once past the demo. Piped (CliRunner) on the demo corpus with fake models, as on CI; the
service-side items (memory, `casper index` through the service) are in
tests/integration/test_service_second_hour.py.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from tests.first_hour import run_demo, use_demo_fakes

runner = CliRunner()
MODEL = "cross-encoder/ms-marco-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir where `casper demo` ran once with fake models; nothing set by hand (the
    demo's own zone included): the demo lives in base/demo."""
    base = tmp_path_factory.mktemp("second-hour") / "casper-home"
    with pytest.MonkeyPatch.context() as mp:
        use_demo_fakes(mp)
        run_demo(base)
    return base


@pytest.fixture
def home(base: Path) -> str:
    return str(base / "demo")


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    use_demo_fakes(monkeypatch)


@pytest.fixture
def no_reranker(fakes: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No cross-encoder in the model cache (as on a fresh machine or CI)."""
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_reranker", lambda cfg: (None, "not in the cache (test)"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))


def casper(*args: str, stdin: str | None = None, columns: int = 80):  # noqa: ANN201
    return runner.invoke(app, list(args), input=stdin, env={"COLUMNS": str(columns)})


def tiny_eval(mp: pytest.MonkeyPatch, tmp_path: Path, *args: str):  # noqa: ANN201
    """`casper eval … --unit 8x4 -k 5` on the tiny corpus (quick), at 100 columns."""
    import ingest.synthetic as synthetic

    mp.setattr(synthetic, "build_demo_corpus", lambda dest, **kw: synthetic.build_tiny_corpus(dest))
    return casper("eval", *args, "--unit", "8x4", "-k", "5", "--home", str(tmp_path / "h"),
                  "--out", str(tmp_path / "runs"), columns=100)  # fmt: skip


def as_json(*args: str) -> dict:
    result = casper(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def sql(home: str, query: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(f"file:{Path(home) / 'casper.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


# ---- 1. say what ran: reranked or not, and why -------------------------------------------------
def test_search_says_it_was_not_reranked_and_why(home: str, no_reranker: None) -> None:
    data = as_json("search", "dentist", "--home", home)
    assert data["reranked"] is False
    assert data["why_not_reranked"] == f"{MODEL} is not downloaded (`casper pull`)"
    shown = casper("search", "dentist", "--home", home)
    assert shown.exit_code == 0, shown.output
    assert f"not reranked: {MODEL} is not downloaded (`casper pull`)" in shown.stderr.splitlines()
    chosen = casper("search", "dentist", "--no-rerank", "--home", home)
    assert "not reranked" not in chosen.stderr  # a choice is not repeated back
    assert as_json("search", "dentist", "--no-rerank", "--home", home)["why_not_reranked"] == (
        "--no-rerank"
    )
    asked = as_json("ask", "what did Priya say about the dentist?", "--home", home)
    assert asked["reranked"] is False and MODEL in asked["why_not_reranked"]
    footer = casper("ask", "what did Priya say about the dentist?", "--home", home).stderr
    assert f"not reranked: {MODEL} is not downloaded" in footer


def test_search_says_reranked_when_the_reranker_ran(home: str, fakes: None) -> None:
    data = as_json("search", "dentist", "--home", home)
    assert data["reranked"] is True and "why_not_reranked" not in data
    assert "not reranked" not in casper("search", "dentist", "--home", home).stderr


def test_search_help_claims_no_rerank_it_may_not_run() -> None:
    text = " ".join(casper("search", "--help", columns=200).stdout.split())
    assert "fused, reranked." not in text
    assert "reranked by the cross-encoder when it is cached" in text


def test_eval_says_the_rerank_runs_did_not_run_and_why(
    no_reranker: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = tiny_eval(monkeypatch, tmp_path, "--mode", "hybrid", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["reranked"] for r in doc["runs"]] == [False]
    assert [s["reason"] for s in doc["skipped"]] == [
        f"not reranked: {MODEL} is not downloaded (`casper pull`)"
    ]
    said = result.stderr.splitlines()
    assert f"skipped 1 run: not reranked: {MODEL} is not downloaded (`casper pull`)" in said


# ---- 2. ask --no-llm: the stats and the directory answer, citing the message ---------------------
def test_when_did_i_last_talk_to_someone_is_the_stats_date_and_its_message(
    home: str, fakes: None
) -> None:
    alex = next(p for p in as_json("contacts", "--home", home) if p["name"] == "Alex Chen")
    data = as_json("ask", "when did I last talk to Alex?", "--no-llm", "--home", home)
    (cited,) = data["citations"]
    assert cited["ts"] == alex["last"]  # the message behind the stats' `last`
    assert alex["last"][:10] in data["answer"] and f"[#{cited['rowid']}]" in data["answer"]
    assert data["grounding"] == "stats"  # the stats' date, citing its message
    first = as_json("ask", "when did I first text Priya?", "--no-llm", "--home", home)
    priya = next(p for p in as_json("contacts", "--home", home) if p["name"] == "Priya Natarajan")
    assert first["citations"][0]["ts"] == priya["first"]


def test_who_texted_me_last_is_the_newest_message_from_someone_else(home: str, fakes: None) -> None:
    ((rowid,),) = sql(home, "SELECT rowid FROM messages WHERE sender != 'me' AND "
                            "kind != 'system' AND ts > 0 ORDER BY ts DESC LIMIT 1")  # fmt: skip
    data = as_json("ask", "who texted me last?", "--no-llm", "--home", home)
    assert [c["rowid"] for c in data["citations"]] == [rowid]
    assert data["answer"].startswith(f"{data['citations'][0]['sender']} texted you last, on ")


def test_who_is_a_nickname_is_the_card(home: str, fakes: None) -> None:
    data = as_json("ask", "who is Sammy?", "--no-llm", "--home", home)
    assert data["answer"].startswith("Sammy is Sam Rivera")
    assert "+14155550132" in data["answer"] and "sam.rivera@example.com" in data["answer"]
    assert len(data["citations"]) == 1 and data["grounding"] == "stats"  # the card's


def test_a_question_with_a_topic_of_its_own_is_still_searched(home: str, fakes: None) -> None:
    data = as_json("ask", "when did I last talk to Alex about the dentist?", "--no-llm",
                   "--home", home)  # fmt: skip
    assert data["answer"].startswith("These messages match best")


# ---- 3. chat: a follow-up keeps what it does not replace, and says so ----------------------------
def _turns(stdout: str) -> list[set[str]]:
    """The chats each retrieval-only answer drew its messages from."""
    answers = stdout.split("These messages match best:")[1:]
    return [set(re.findall(r"^(\S[^\n]*?), \d{4}-\d\d-\d\d:$", a, re.M)) for a in answers]


def test_chat_follow_ups_keep_the_person_and_the_topic(home: str, fakes: None) -> None:
    session = ("what did Priya say about the dentist?\nand what about the license?\n"
               "what did Sam say about the flight?\nand Mom?\n/quit\n")  # fmt: skip
    result = casper("chat", "--no-llm", "--home", home, stdin=session)
    assert result.exit_code == 0, result.output
    read = [x for x in result.stderr.splitlines() if x.startswith("read as: ")]
    assert read == [
        "read as: and what about the license? (about Priya Natarajan) — carried from the "
        "last question",
        "read as: and Mom? (regarding flight) — carried from the last question",
    ], result.stderr
    turns = _turns(result.stdout)
    assert turns[1] == {"Priya Natarajan"}, turns  # not Alex's, not an unknown number's
    assert turns[3] == {"Mom"}, turns
    last = result.stdout.split("These messages match best:")[-1]
    assert "flight" in last.lower(), last  # Mom's flight, not any message of Mom's


# ---- 4. words in no message; a bar that means something ------------------------------------------
def test_a_word_in_no_message_is_said_and_no_hit_is_drawn_as_a_match(
    home: str, fakes: None
) -> None:
    data = as_json("search", "alex birthday", "--home", home)
    assert data["words"] == ["birthday"] and data["words_not_found"] == ["birthday"]
    assert data["hits"] and all(h["matched_words"] == [] for h in data["hits"])
    shown = casper("search", "alex birthday", "--home", home)
    assert "notice: no message contains 'birthday'" in shown.stderr
    bars = re.findall(r"[▰▱]{5}", shown.stdout)
    assert bars and set(bars) == {"▱▱▱▱▱"}, shown.stdout  # the first hit is no full bar
    found = casper("search", "dentist", "--person", "Priya", "--home", home)
    assert "no message contains" not in found.stderr
    assert re.findall(r"[▰▱]{5}", found.stdout)[0] == "▰▰▰▰▰"


# ---- 7. the demo reads its story in its own zone ------------------------------------------
def test_the_demo_keeps_its_own_zone_whatever_the_machine_says(base: Path, fakes: None) -> None:
    config = (base / "demo" / "config.toml").read_text()
    assert 'timezone = "America/Los_Angeles"' in config
    shown = casper("show", "2441", "--before", "0", "--after", "0", "--home", str(base / "demo"))
    assert "2023-11-03 18:40" in shown.stdout, shown.stdout  # planned after work, not at 01:40


# ---- 8. eval in a 100-column terminal ----------------------------------------------------------
def test_the_eval_table_fits_the_width_and_says_where_the_report_is() -> None:
    from casper.cli.evaluate import fit_columns

    header = ["run", "msg R@1", "msg R@5", "msg R@10", "msg R@25", "msg R@50", "chunk R@10",
              "MRR@10", "nDCG@10", "hit@10", "p50 ms", "p95 ms"]  # fmt: skip
    rows = [["hybrid/lancedb/rrf/literal/3x1", *["100.0"] * 11]] * 3
    kept, cut, dropped = fit_columns(header, rows, 100)
    assert kept[:1] == ["run"] and "msg R@10" in kept and "MRR@10" in kept
    assert sum(max(len(h), 5) + 3 for h in kept) + 1 <= 100 and dropped
    assert all(len(r) == len(kept) for r in cut)


def test_every_line_of_the_eval_plot_is_distinguishable() -> None:
    from eval.harness import plan_runs
    from eval.report import plot_styles

    runs = [{"mode": s.mode, "lexical": s.lexical, "rerank": s.rerank, "literal": s.literal,
             "fuse": s.fuse, "feedback": s.feedback, "unit": s.unit, "embedder": "e"}
            for s in plan_runs()]  # fmt: skip
    looks = plot_styles(runs)
    assert len(runs) >= 13 and len(set(looks)) == len(runs)


def test_eval_prints_where_the_report_and_the_plot_are(
    fakes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = tiny_eval(monkeypatch, tmp_path, "--mode", "bm25")
    assert result.exit_code == 0, result.output
    said = dict(re.findall(r"^(report|plot): +(\S+)$", result.stdout, re.M))
    assert said["report"].endswith(".md") and Path(said["report"]).is_file()
    assert said["plot"].endswith(".png") and Path(said["plot"]).is_file()


def test_eval_on_a_terminal_shows_the_stage_it_is_in() -> None:
    import io
    import time

    from rich.console import Console

    from casper.cli.evaluate import stage_line

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with stage_line(console) as stages:
        stages("synthetic 8x4 · embed", 384, 878)
        time.sleep(0.3)
    assert "synthetic 8x4 · embedding chunks 384/878 · 0s" in out.getvalue()


# ---- 9. counts that agree, and the small things --------------------------------------------
def test_index_progress_counts_agree_with_doctor_and_the_summary(
    base: Path, fakes: None, tmp_path: Path
) -> None:
    source = base / "demo" / "source"
    result = casper("index", "--home", str(tmp_path / "h"), "--chat-db", str(source / "chat.db"),
                    "--contacts", str(source / "AddressBook"))  # fmt: skip
    assert result.exit_code == 0, result.output
    err = result.stderr
    rows = re.search(r"reading chat\.db: done, ([\d,]+) rows", err)
    chunked = re.search(r"chunking chats: done, ([\d,]+) messages", err)
    total = re.search(r"^indexed [\d,]+ new messages \(([\d,]+) total", err, re.M)
    assert rows and chunked and total, err
    doctor = as_json("doctor", "--home", str(tmp_path / "h"))
    assert int(rows[1].replace(",", "")) == doctor["counts"]["chat_db_rows"]
    assert chunked[1] == total[1]
    assert f"{doctor['counts']['chat_db_rows']:,} rows" in next(
        c["detail"] for c in doctor["checks"] if c["name"] == "chat.db"
    )


def test_one_new_message_is_one_new_message(base: Path, fakes: None, tmp_path: Path) -> None:
    from ingest.synthetic import append_messages

    source = tmp_path / "src"
    shutil.copytree(base / "demo" / "source", source)
    args = ["index", "--home", str(tmp_path / "h"), "--chat-db", str(source / "chat.db"),
            "--contacts", str(source / "AddressBook")]  # fmt: skip
    assert casper(*args).exit_code == 0
    append_messages(source / "chat.db", 1)
    result = casper(*args)
    assert result.exit_code == 0, result.output
    assert "indexed 1 new message (" in result.stderr, result.stderr


def test_show_on_a_tapback_row_opens_the_message_it_reacts_to(home: str, fakes: None) -> None:
    ((guid, target_rowid),) = sql(
        home, "SELECT r.guid, m.rowid FROM reactions r JOIN messages m ON m.guid = r.target_guid "
              "WHERE r.kind = 2003 ORDER BY r.ts DESC LIMIT 1")  # fmt: skip
    conn = sqlite3.connect(f"file:{Path(home) / 'source' / 'chat.db'}?mode=ro", uri=True)
    ((rowid,),) = conn.execute("SELECT ROWID FROM message WHERE guid = ?", (guid,)).fetchall()
    conn.close()
    result = casper("show", str(rowid), "--home", home)
    assert result.exit_code == 0, result.output
    assert re.search(rf"^notice: {rowid} is .*😂 reaction to #{target_rowid}; showing "
                     rf"#{target_rowid}$", result.stderr, re.M), result.stderr  # fmt: skip
    marked = [x for x in result.stdout.splitlines() if x.startswith("▶")]
    assert len(marked) == 1 and marked[0].endswith(f"#{target_rowid}")
    data = as_json("show", str(rowid), "--home", home)
    assert data["reaction"]["to"] == target_rowid and data["message"]["rowid"] == target_rowid


def test_verbose_logs_name_their_level_once() -> None:
    import logging

    from casper.cli.base import _setup_logging

    root = logging.getLogger()
    kept = root.handlers[:], root.level
    try:
        _setup_logging(True)
        record = logging.LogRecord("tzlocal", logging.DEBUG, __file__, 1, "found %s", ("x",), None)
        assert root.handlers[0].format(record) == "tzlocal: found x"  # the handler shows DEBUG
    finally:
        root.handlers[:], _ = kept[0], root.setLevel(kept[1])


def test_chat_says_the_model_is_missing_once_not_every_turn(home: str, fakes: None) -> None:
    session = "what did Priya say about the dentist?\nwho is Sammy?\nwhat about the wifi?\n/quit\n"
    result = casper("chat", "--home", home, stdin=session)
    assert result.exit_code == 0, result.output
    said = result.output.count("not available") + result.output.count("answering from search")
    assert said <= 1, result.output


def test_help_paragraphs_do_not_break_in_mid_sentence() -> None:
    text = casper("serve", "--help", columns=80).stdout
    about = text[text.index("Usage:") : text.index("╭")].splitlines()[1:]
    paragraphs = "\n".join(x.strip() for x in about).strip().split("\n\n")
    for paragraph in paragraphs:
        lines = paragraph.splitlines()
        assert all(len(x) > 30 for x in lines[:-1]), paragraph  # only a paragraph's end is short


def test_ask_says_when_none_of_the_messages_it_found_holds_the_words(
    home: str, fakes: None
) -> None:
    """Mom never wrote about a license: her closest messages are not passed off as that."""
    data = as_json("ask", "what did Mom say about the license?", "--no-llm", "--home", home)
    assert data["words_not_in_hits"] == ["license"] and data["words_not_found"] == []
    shown = casper("ask", "what did Mom say about the license?", "--no-llm", "--home", home)
    assert "notice: none of the messages found contains 'license'" in shown.stderr
    found = as_json("ask", "did Priya say the dentist moved?", "--no-llm", "--home", home)
    assert found["words_not_in_hits"] == []  # 'say' is how the question asks, not a topic
    planned = as_json("ask", "when did Sam and I plan Thanksgiving?", "--no-llm", "--home", home)
    assert planned["words_not_in_hits"] == []  # 'plan' too: the messages hold the plan itself
