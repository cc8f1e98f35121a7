"""`casper chat --no-llm` on the demo: a follow-up of a count, a ranking or a last contact is
that question again for another person or period, answered as if asked whole.

Each case is three lines of one chat: the question, the follow-up, and the question the
follow-up should be read as, asked on its own. The follow-up's answer must be the whole
question's answer, word for word, and of the same kind — no hard-coded figures.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from casper.cli import app
from tests.first_hour import run_demo, use_demo_fakes

runner = CliRunner()

# (question, follow-up, the question it is read as); the demo's history runs 2022 → 2024
CASES = [
    ("how many messages with Sam in 2023?", "and Mom?", "how many messages with Mom in 2023?"),
    ("how many messages with Sam in 2023?", "and in 2022?", "how many messages with Sam in 2022?"),
    ("how many messages with Sam in 2023?", "and Mom in 2022?",
     "how many messages with Mom in 2022?"),
    ("how many messages with Priya in 2024?", "what about Alex?",
     "how many messages with Alex in 2024?"),
    ("how many messages with Priya in 2024?", "same for 2023",
     "how many messages with Priya in 2023?"),
    ("how many texts with Alex?", "and with Mom?", "how many texts with Mom?"),
    ("how often do I text Mom?", "how about Sam?", "how often do I text Sam?"),
    ("how many messages with Mom in March 2023?", "and in April 2023?",
     "how many messages with Mom in April 2023?"),
    ("how many messages with Dana?", "and Priya?", "how many messages with Priya?"),
    ("who texts me most in 2024?", "and in 2023?", "who texts me most in 2023?"),
    ("who do I text the most?", "and in 2022?", "who do I text the most in 2022?"),
    ("who texts me most in 2024?", "what about Mom?", "how many messages with Mom in 2024?"),
    ("who are my top contacts in 2023?", "same for 2024", "who are my top contacts in 2024?"),
    ("who texts me most in 2024?", "and in March 2024?", "who texts me most in March 2024?"),
    ("when did I last talk to Priya?", "and Dana?", "when did I last talk to Dana?"),
    ("when did I last talk to Priya?", "and in 2023?", "when did I last talk to Priya in 2023?"),
    ("when did I first text Sam?", "and Alex?", "when did I first text Alex?"),
    ("when did I last talk to Priya?", "what about Mom?", "when did I last talk to Mom?"),
    ("when did I first talk to Dana?", "and Mom in 2023?",
     "when did I first talk to Mom in 2023?"),
    ("who texted me last?", "and Sam?", "when did I last talk to Sam?"),
    ("when did I last text Alex Chen?", "and with Priya?", "when did I last text Priya?"),
]  # fmt: skip
# how each kind's answer begins (casper.agent.stats_route, casper.agent.fact_route)
KIND = {
    "count": re.compile(r"^With .+ (?:between \S+ and \S+|in all your messages): you sent "),
    "ranking": re.compile(r"^Who you exchanged the most messages with "),
    "last": re.compile(r"^You last talked with "),
    "first": re.compile(r"^You first talked with "),
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> str:
    base = tmp_path_factory.mktemp("follow-up-kinds") / "casper-home"
    with pytest.MonkeyPatch.context() as mp:
        use_demo_fakes(mp)
        run_demo(base)
    return str(base / "demo")


def chat(home: str, lines: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    """(each line's answer, stderr) of one `casper chat --no-llm` session."""
    use_demo_fakes(monkeypatch)
    session = "\n".join([*lines, "/quit"]) + "\n"
    result = runner.invoke(app, ["chat", "--no-llm", "--home", home], input=session,
                           env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 0, result.output
    answers = [a.strip() for a in result.stdout.split("you> ")[1:]]
    return answers[: len(lines)], result.stderr


def test_follow_ups_keep_the_kind_of_question_they_follow(
    home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [line for case in CASES for line in case]
    answers, stderr = chat(home, lines, monkeypatch)
    read = [x for x in stderr.splitlines() if x.startswith("read as: ")]
    assert read == [f"read as: {whole} — carried from the last question" for _, _, whole in CASES]
    from casper.agent.question_kind import kind_of

    for i, (first, follow, whole) in enumerate(CASES):
        asked, followed, alone = answers[3 * i : 3 * i + 3]
        kind = kind_of(whole)
        assert kind is not None and KIND[kind].match(followed), (follow, followed)
        assert followed == alone, (first, follow, whole)
        assert "These messages match best" not in followed  # never a search for its words


def test_a_carried_range_is_the_whole_range_not_its_first_day(
    home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follow-up with a topic of its own is searched with the last question's dates; they
    were read as the first day ("Nothing between 2023-01-01 and 2023-01-01")."""
    answers, stderr = chat(home, ["how many messages with Sam in 2023?", "and Thanksgiving?"],
                           monkeypatch)  # fmt: skip
    said = "read as: and Thanksgiving? (about Sam Rivera; between 2023-01-01 and 2023-12-31)"
    assert said in stderr, stderr
    assert answers[1].startswith("These messages match best:"), answers[1]
    days = re.findall(r"^Sam Rivera, (\d{4})-\d\d-\d\d:$", answers[1], re.M)
    assert days and set(days) == {"2023"}, answers[1]
    assert "thanksgiving" in answers[1].lower()
