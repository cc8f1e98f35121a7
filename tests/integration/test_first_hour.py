"""The first hour with Casper, off a terminal: what a newcomer pipes, pastes and reads.

Each thing a newcomer meets has a test here with the output piped (CliRunner: stdout and stderr are
not terminals); tests/slow/test_first_hour_terminal.py runs the same checks in a real terminal.
Golden text lives in tests/golden/ (`CASPER_UPDATE_GOLDEN=1` rewrites it; review the diff).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from tests.first_hour import (
    CLI_WITH_SLOW_EMBEDDER,
    check_golden,
    demo_lines,
    masked,
    run_demo,
    use_demo_fakes,
)
from tests.helpers import child_env

runner = CliRunner()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir where `casper demo` ran once (fake models): the demo lives in base/demo."""
    base = tmp_path_factory.mktemp("first-hour") / "casper-home"
    (base / "demo").mkdir(parents=True)  # a fixed zone: the same screens on every machine
    (base / "demo" / "config.toml").write_text('timezone = "America/Los_Angeles"\n')
    with pytest.MonkeyPatch.context() as mp:
        use_demo_fakes(mp)
        run_demo(base)
    return base


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    use_demo_fakes(monkeypatch)


def casper(*args: str, stdin: str | None = None, columns: int = 80):  # noqa: ANN201
    return runner.invoke(app, list(args), input=stdin, env={"COLUMNS": str(columns)})


# ---- 1. no dead end after the demo ---------------------------------------------------------
def test_the_demo_ends_with_commands_that_work_as_printed(base: Path, fakes: None) -> None:
    with pytest.MonkeyPatch.context() as mp:
        result = run_demo(base, mp)  # a second run: the index is up to date, same ending
    lines = demo_lines(result.stdout)
    assert lines, result.stdout
    opened = re.search(r"^open one with: (casper .*)$", result.stdout, re.M)
    assert opened, result.stdout
    for line in [opened.group(1), *lines]:
        words = shlex.split(line)
        assert words[:3] == ["casper", "--home", str(base / "demo")], line
        ran = casper(*words[1:], stdin="/quit\n")
        assert ran.exit_code == 0, (line, ran.output)
    end = result.stdout[result.stdout.index("People in") :]
    check_golden("demo_end_80", masked(end, base=base))


def test_what_the_demo_makes_is_owner_only(base: Path) -> None:
    """The demo's home, its source folder (chat.db, AddressBook) and every file in them are
    0700/0600, like the data dir: a made-up chat history is still a chat history."""
    demo = base / "demo"
    for path in [base, demo, *sorted(demo.rglob("*"))]:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path}: {mode:o}"
    assert (demo / "source" / "chat.db").exists()


def test_the_demo_home_reads_the_demo_history_from_then_on(base: Path, fakes: None) -> None:
    """`--home …/demo index` or `doctor`, pasted later, never reach for the real Messages."""
    doctor = casper("--home", str(base / "demo"), "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["chat.db"]["status"] == "ok"
    assert str(base / "demo" / "source" / "chat.db") in checks["chat.db"]["detail"]
    again = casper("--home", str(base / "demo"), "index", "--json")
    assert again.exit_code == 0 and '"noop": true' in again.stdout


def test_an_empty_default_home_points_at_the_demo(
    base: Path, fakes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASPER_HOME", str(base))  # the demo's parent is the default home
    result = casper("show", "2441", "--before", "1")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: nothing indexed yet in {base}\n")
    hint = result.stderr.splitlines()[1]
    pasted = re.search(r"`(casper [^`]*)`", hint)
    assert pasted and pasted.group(1) == f"casper --home {base / 'demo'} show 2441 --before 1"
    assert "would read your own Messages" in hint
    assert casper(*shlex.split(pasted.group(1))[1:]).exit_code == 0
    check_golden("empty_home_hint", masked(result.stderr, base=base))


def test_an_empty_home_without_a_demo_suggests_index_or_demo(tmp_path: Path) -> None:
    result = casper("search", "dentist", "--home", str(tmp_path / "new"))
    assert result.exit_code == 1
    assert "casper --home" in result.stderr and " index` to read your Messages" in result.stderr
    assert " demo` to try the synthetic demo first" in result.stderr


# ---- 7. off a terminal -----------------------------------------------------------------------
def test_show_marks_the_message_asked_for_in_a_pipe(base: Path, fakes: None) -> None:
    result = casper("show", "2441", "--before", "2", "--after", "2", "--home", str(base / "demo"))
    assert result.exit_code == 0, result.output
    marked = [line for line in result.stdout.splitlines() if line.startswith("▶")]
    assert len(marked) == 1 and marked[0].endswith("#2441"), result.stdout
    check_golden("show_marked_80", result.stdout)


# ---- 3. quiet notices ------------------------------------------------------------------------
def test_a_missing_model_is_one_line_once_per_data_dir(
    base: Path, fakes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "demo"
    shutil.copytree(base / "demo", home)
    (home / "notices.json").unlink(missing_ok=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))

    def notices(question: str) -> list[str]:
        result = casper("ask", question, "--home", str(home), columns=60)
        assert result.exit_code == 0, result.output
        return [line for line in result.stderr.splitlines() if line.startswith("notice:")]

    first = notices("who do I text the most?")
    model = "mlx-community/Qwen3.5-4B-MLX-4bit"
    assert first == [
        f"notice: answering from search alone: {model} is not downloaded (`casper pull` "
        "fetches it once, online; `casper doctor` has the details)"
    ]  # one line, even at 60 columns; no library message cut in half
    check_golden("ask_notice_once", "\n".join(first))
    # said already (other notices, about this question's words, may follow: not the model's)
    again = notices("what did Priya say about the dentist?")
    assert not [line for line in again if "answering from search alone" in line], again
    doctor = json.loads(casper("doctor", "--json", "--home", str(home)).stdout)
    check = next(c for c in doctor["checks"] if c["name"] == "language model")
    assert check["status"] == "warn" and "cannot load language model (test)" in check["detail"]
    assert check["hint"]  # the whole story is in doctor
    # the situation changes (a download appeared): said again, once
    (tmp_path / "hub" / ("models--" + model.replace("/", "--")) / "snapshots").mkdir(parents=True)
    assert len(notices("who do I text the most?")) == 1
    assert notices("who do I text the most?") == []


# ---- 8. smaller ------------------------------------------------------------------------------
def test_a_missing_addressbook_is_a_notice_with_a_hint(
    base: Path, fakes: None, tmp_path: Path
) -> None:
    """Not a `WARNING:` log line: the same notice:/hint: shape as every other message."""
    chat_db = base / "demo" / "source" / "chat.db"
    result = casper("index", "--home", str(tmp_path / "h"), "--chat-db", str(chat_db))
    assert result.exit_code == 0, result.output
    said = [x for x in result.stderr.splitlines() if not x.startswith("casper index:")]
    assert "WARNING" not in result.stderr
    assert said[0].startswith("notice: contacts: no AddressBook database at ")
    assert said[1].startswith("hint: pass `--contacts PATH`") and "--no-contacts" in said[1]
    check_golden("index_no_contacts_notice", masked("\n".join(said[:2]), home=Path.home()))
    doctor = casper("doctor", "--home", str(tmp_path / "h"))
    assert "notice:" not in doctor.stderr  # doctor says it as its contacts check instead


# ---- 6. index: waiting, Ctrl-C, the whole run's time -----------------------------------------
def _child(args: list[str], **popen: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CLI_WITH_SLOW_EMBEDDER, json.dumps(args)],
        env=child_env(COLUMNS="80"), text=True, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
        # a child of a non-interactive shell may inherit SIGINT ignored: give it Ctrl-C back
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **popen,
    )  # fmt: skip


def test_a_second_index_says_at_once_whom_it_waits_for(base: Path, tmp_path: Path) -> None:
    from casper.indexer.lock import exclusive

    home = tmp_path / "demo"
    shutil.copytree(base / "demo", home)
    with exclusive(home / "index.lock"):  # this test process is "the other run"
        started = time.monotonic()
        child = _child(["index", "--home", str(home)])
        first = child.stderr.readline()
        said_after = time.monotonic() - started
    out, rest = child.communicate(timeout=120)
    assert child.returncode == 0, rest
    assert said_after < 10  # at once, not after the 60 s the wait may last (a child starts in ~2 s)
    assert re.fullmatch(
        rf"waiting for `casper index` \(pid {os.getpid()}, running since \d\d:\d\d:\d\d, "
        r"[\d.]+ s ago\) to finish… \(Ctrl-C stops waiting; that run goes on\)\n",
        first,
    ), first
    assert rest.startswith("up to date: ")  # then it ran, once the other one was done


def test_ctrl_c_says_what_was_kept_and_the_next_run_continues(base: Path, tmp_path: Path) -> None:
    home = tmp_path / "h"
    source = base / "demo" / "source"
    child = _child(["index", "--home", str(home), "--chat-db", str(source / "chat.db"),
                    "--contacts", str(source / "AddressBook")])  # fmt: skip
    lines = []
    for line in child.stderr:
        lines.append(line)
        if line.startswith("casper index: embedding chunks …"):
            time.sleep(1.0)  # a few batches in
            child.send_signal(signal.SIGINT)
            break
    _, rest = child.communicate(timeout=120)
    said = rest.splitlines()
    assert child.returncode == 130, rest
    assert re.fullmatch(r"casper index: embedding chunks: stopped at [\d,]+/2,388", said[-2])
    kept = re.fullmatch(
        r"interrupted: kept 3,917 messages and 2,388 chunks, ([\d,]+) of them with vectors "
        rf"\(\d+ %\); `casper --home {home} index` continues where this run stopped",
        said[-1],
    )
    assert kept, said[-1]
    assert "done" not in said[-2]
    again = _child(["index", "--home", str(home)])  # the paths were kept for it
    _, rest = again.communicate(timeout=300)
    assert again.returncode == 0, rest
    assert f"resuming: {kept.group(1)} of 2388 chunks already embedded" in rest
    finished = re.search(r"up to date: 3,917 messages; embedded the ([\d,]+) chunks", rest)
    assert finished, rest  # not a bare "up to date" after finishing a stopped run's work
    left = 2388 - int(kept.group(1).replace(",", ""))
    assert int(finished.group(1).replace(",", "")) == left, rest
    check_golden("index_interrupted", re.sub(r"\d[\d,]*", "N", said[-1].replace(str(home), "HOME")))


def test_the_summary_times_the_whole_run_stage_by_stage(
    base: Path, fakes: None, tmp_path: Path
) -> None:
    source = base / "demo" / "source"
    args = ["index", "--home", str(tmp_path / "h"), "--chat-db", str(source / "chat.db"),
            "--contacts", str(source / "AddressBook")]  # fmt: skip
    result = casper(*args)
    assert result.exit_code == 0, result.output
    summary = [x for x in result.stderr.splitlines() if not x.startswith("casper index:")]
    assert summary[0].startswith("indexed 3,917 new messages")
    timed = re.fullmatch(
        r"  in ([\d.]+) s: reading chat\.db ([\d.]+) s · chunk index ([\d.]+) s"
        r"(?: · embedding ([\d.]+) s \([\d,]+ chunks/s\))?",  # how fast (the fake: no device)
        summary[1],
    )
    assert timed, summary[1]
    total, *stages = (float(x or 0) for x in timed.groups())
    # the whole run, not its first step (a total of 10 s or more is shown to the second)
    assert total >= sum(stages) - (0.7 if total >= 10 else 0.2)
    data = json.loads(casper(*args[:3], "--rebuild", "--json").stdout)
    assert data["elapsed_s"] >= data["timings"]["index"] + data["timings"]["embed"]
    check_golden("index_summary", masked("\n".join(summary)))


# ---- 2. dates outside the history --------------------------------------------------------------
# the demo ends in October 2024, so "last March" (read against today's clock) is empty
COVERED = "your messages run from 2022-03-02 to 2024-10-28"  # in the demo zone


def test_search_says_the_range_it_used_and_what_the_history_covers(base: Path, fakes: None) -> None:
    home = str(base / "demo")
    result = casper("search", "dentist", "--person", "Priya", "--since", "last March",
                    "--until", "last March", "--home", home)  # fmt: skip
    assert result.exit_code == 0, result.output
    said = re.fullmatch(
        rf"no matching messages between (\d{{4}})-03-01 and \1-03-31; {COVERED}\n", result.stdout
    )
    assert said and int(said.group(1)) >= 2025, result.stdout
    data = json.loads(casper("search", "dentist", "--since", "last March", "--home", home,
                             "--json").stdout)  # fmt: skip
    assert data["coverage"] == {"first": "2022-03-02", "last": "2024-10-28"}
    assert data["filters"]["days"][0].endswith("-03-01") and data["filters"]["days"][1] is None
    check_golden("search_outside_history", result.stdout.replace(said.group(1), "YYYY", 2))


def test_a_question_whose_dates_hold_no_hit_says_so_with_the_coverage(
    base: Path, fakes: None
) -> None:
    result = casper("search", "dinner plans last March", "--home", str(base / "demo"))
    assert result.exit_code == 0, result.output
    notice = [x for x in result.stderr.splitlines() if x.startswith("notice: nothing between")]
    assert notice, result.stderr
    assert notice[0].endswith(f"({COVERED}); these are from other dates"), notice
    assert result.stdout.strip()  # the closest hits from other dates still follow
    year = re.search(r"between (\d{4})-", notice[0]).group(1)  # type: ignore[union-attr]
    check_golden("search_question_outside_history", notice[0].replace(year, "YYYY", 2))
    inside = casper("search", "dinner plans in March 2024", "--home", str(base / "demo"))
    assert "notice: nothing" not in inside.stderr, inside.stderr


# ---- 4. names and holidays as a person types them ----------------------------------------------
def test_lowercase_mom_and_a_yearless_thanksgiving_are_read(base: Path, fakes: None) -> None:
    home = str(base / "demo")
    mom = casper("search", "what did mom say about the wifi", "--home", home)
    assert mom.exit_code == 0, mom.output
    said = mom.stderr.splitlines()[0]
    assert said.startswith("read as: ") and "chats with Mom" in said, mom.stderr
    holiday = casper("search", "what did we do around Thanksgiving", "--home", home)
    read = holiday.stderr.splitlines()[0]
    assert "'Thanksgiving' = 2023-11-20 to 2023-11-26" in read, holiday.stderr  # latest covered
    check_golden("read_as_mom_thanksgiving", f"{said}\n{read}")


# ---- 5 and 8. chat: follow-ups keep the topic; /sources after a stats answer ---------------------
def test_a_follow_up_keeps_the_topic_and_sources_explain_a_stats_answer(
    base: Path, fakes: None
) -> None:
    session = (
        "what did Priya say about the dentist?\nwhen did she go?\n"
        "who do I text most?\n/sources\n/quit\n"
    )
    result = casper("chat", "--no-llm", "--home", str(base / "demo"), stdin=session)
    assert result.exit_code == 0, result.output
    said = result.stderr.splitlines()
    carried = [x for x in said if x.startswith("read as: ")]
    assert carried == [
        "read as: when did she go? (about Priya Natarajan; regarding dentist) — carried from "
        "the last question"
    ], result.stderr
    why = [x for x in said if "precomputed stats" in x]
    assert why and "ask a question first" not in result.stderr, result.stderr
    check_golden("chat_follow_up_and_sources", "\n".join([*carried, *why]))


# ---- 7. eval off a terminal ----------------------------------------------------------------------
def test_eval_prints_progress_lines_off_a_terminal(
    fakes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ingest.synthetic as synthetic

    tiny = lambda dest, **kw: synthetic.build_tiny_corpus(dest)  # noqa: E731
    monkeypatch.setattr(synthetic, "build_demo_corpus", tiny)
    args = ["eval", "--dataset", "synthetic", "--mode", "bm25", "--unit", "8x4", "-k", "5",
            "--home", str(tmp_path / "h"), "--out", str(tmp_path / "runs")]  # fmt: skip
    result = casper(*args)
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stderr.splitlines() if x.startswith("casper eval: ")]
    assert "casper eval: synthetic 8x4 · reading chat.db …" in lines, result.stderr
    assert any(re.fullmatch(r"casper eval: synthetic 8x4 · embedding chunks: done, .*", x)
               for x in lines), lines  # fmt: skip
    scored = [x for x in lines if "scoring questions: done" in x]
    assert len(scored) == 2, lines  # one per run: bm25 on each word index
    check_golden("eval_progress_piped", masked("\n".join(lines)))


def test_contacts_and_chats_keep_ids_whole_at_80_columns(base: Path, fakes: None) -> None:
    home = str(base / "demo")
    people = json.loads(casper("contacts", "--home", home, "--json").stdout)
    chats = json.loads(casper("chats", "--home", home, "--json").stdout)
    for command, rows in (("contacts", people), ("chats", chats)):
        shown = casper(command, "--home", home, columns=80)
        assert shown.exit_code == 0, shown.output
        lines = shown.stdout.splitlines()[1:]
        firsts = {line.split()[0] for line in lines if line[:4].strip()}  # not a wrapped line
        assert {str(r["id"]) for r in rows} <= firsts, (command, shown.stdout)  # each id whole
        check_golden(f"{command}_80", shown.stdout)
