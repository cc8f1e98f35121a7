"""The chat loop: what reaches `ask`, what stays local, and how a session ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from casper.cli.repl import line_reader, run_repl
from casper.config import Config


def reader(lines: list[str]):  # noqa: ANN201
    it: Iterator[str] = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def test_only_questions_reach_ask_and_follow_ups_are_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[tuple[str, tuple[str, ...]]] = []

    def ask(question: str, hints: tuple[str, ...]) -> dict:
        asked.append((question, hints))
        return {"answer": "she moved it", "citations": [{"sender": "Priya Natarajan", "rowid": 1,
                "ts": "2023-06-12T11:20:00+00:00", "text": "dentist moved"}]}  # fmt: skip

    lines = ["/help", "/nope", "", "what did Priya say about the dentist?",
             "did she go?", "/CLEAR", "did she go?"]  # fmt: skip
    run_repl(Config(data_dir=tmp_path), ask, read=reader(lines), names=["Priya Natarajan"])
    questions = [q for q, _ in asked]
    assert questions[0] == "what did Priya say about the dentist?"
    assert questions[1] == "did she go? (about Priya Natarajan; regarding dentist)"  # the topic too
    assert asked[1][1] and "Earlier question: what did Priya say" in asked[1][1][-1]
    assert questions[2] == "did she go?"  # after /clear nothing is carried over
    assert len(asked) == 3
    out = capsys.readouterr()
    assert "unknown command /nope" in out.err
    assert out.out.endswith("\n")


def test_ctrl_c_stops_one_answer_not_the_session(tmp_path: Path) -> None:
    calls: list[str] = []

    def ask(question: str, hints: tuple[str, ...]) -> dict:
        calls.append(question)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return {"answer": "ok", "citations": []}

    run_repl(Config(data_dir=tmp_path), ask, read=reader(["first", "second"]))
    assert calls == ["first", "second"]


def test_pipes_get_plain_input_and_terminals_a_private_history_file(tmp_path: Path) -> None:
    assert line_reader(tmp_path / "h", interactive=False) is input
    assert not (tmp_path / "h").exists()


def test_a_chat_says_it_continues_earlier_turns_and_the_model_sees_what_it_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import os

    cfg = Config(data_dir=tmp_path, timezone="UTC")
    turns = [[f"question {i}", f"answer {i}"] for i in range(6)]
    cfg.chat_history_path.write_text(json.dumps({"turns": turns, "summary": ""}))
    os.utime(cfg.chat_history_path, (1795737600, 1795737600))  # 2026-11-27, an older file
    asked: list[tuple[str, ...]] = []

    def ask(question: str, hints: tuple[str, ...]) -> dict:
        asked.append(hints)
        return {"answer": "ok", "citations": []}

    run_repl(cfg, ask, read=reader(["next?"]))
    said = " ".join(capsys.readouterr().err.split())
    assert "continuing 6 earlier turns from 2026-11-27" in said and "/clear starts fresh" in said
    assert "the model sees the last 3" in said
    assert [h.split(" — ")[0] for h in asked[0]] == [
        f"Earlier question: question {i}" for i in (3, 4, 5)
    ]
    run_repl(cfg, ask, read=reader(["/clear"]))
    capsys.readouterr()
    run_repl(cfg, ask, read=reader([]))
    assert "starting fresh" in capsys.readouterr().err
