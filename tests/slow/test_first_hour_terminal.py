"""The first hour on a real terminal: tmux at 80 columns, the screen read back.

The piped side of the same checks is tests/integration/test_first_hour.py; both compare with
golden files in tests/golden/ (`*_tty.txt` here).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.first_hour import check_golden
from tests.slow.test_terminal import Tmux, casper, demo_home, tmux  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow


def joined(t: Tmux) -> str:
    """The screen with lines the terminal wrapped joined again (what was printed)."""
    out = subprocess.run(
        [*t.base, "capture-pane", "-p", "-J", "-S", "-200"], capture_output=True, text=True
    )
    return out.stdout


def run(make: Callable[[int], Tmux], home: Path, *args: str) -> str:
    t = make(80)
    t.start(casper(home, *args))
    t.wait_for(lambda s: "SHELL" in s)
    return joined(t)


def test_show_marks_the_message_on_a_terminal(demo_home: Path, tmux) -> None:  # noqa: ANN001, F811
    screen = run(tmux, demo_home, "show", "2441", "--before", "1", "--after", "1")
    marked = [x for x in screen.splitlines() if x.startswith("▶")]
    assert len(marked) == 1 and marked[0].rstrip().endswith("#2441"), screen
    check_golden("show_marked_tty", marked[0])


def test_search_outside_the_history_on_a_terminal(demo_home: Path, tmux) -> None:  # noqa: ANN001, F811
    screen = run(tmux, demo_home, "search", "dentist", "--person", "Priya",
                 "--since", "last March", "--until", "last March")  # fmt: skip
    said = re.search(r"no matching messages between (\d{4})-03-01 and \1-03-31; .*", screen)
    assert said and said.group(0).endswith("your messages run from 2022-03-02 to 2024-10-29"), (
        screen
    )
    check_golden("search_outside_history_tty", said.group(0).replace(said.group(1), "YYYY", 2))


def test_lowercase_mom_on_a_terminal(demo_home: Path, tmux) -> None:  # noqa: ANN001, F811
    screen = run(tmux, demo_home, "search", "what did mom say about the wifi")
    said = [x for x in screen.splitlines() if x.startswith("read as:")]
    assert said and "chats with Mom" in said[0], screen
    check_golden("read_as_mom_tty", said[0])


def test_contacts_keep_ids_whole_on_an_80_column_terminal(demo_home: Path, tmux) -> None:  # noqa: ANN001, F811
    screen = run(tmux, demo_home, "contacts")
    rows = [x for x in screen.splitlines() if x.startswith("p_")]
    assert rows and all(re.match(r"p_[0-9a-f]{8}  ", x) for x in rows), screen
    check_golden("contacts_ids_tty", "\n".join(x.split()[0] for x in rows))


def test_eval_on_a_100_column_terminal(tmp_path: Path, tmux) -> None:  # noqa: ANN001, F811
    """The second hour: eval's table fits (no "…" cells), a status line shows each stage while
    the unit indexes build, and the report and the plot are named (tmux, fake models)."""
    t = tmux(100)
    t.height = 60
    t.start(casper(tmp_path / "h", "eval", "--mode", "bm25", "--mode", "hybrid", "--unit",
                   "8x4", "-k", "5", "-k", "10", "--out", str(tmp_path / "runs")))  # fmt: skip
    seen = t.wait_for(lambda s: " · " in s and ("embedding" in s or "scoring" in s), 300)
    # the stage in progress, not a silent wait: the unit's index ("synthetic 8x4 · embedding")
    # or, when that went by between two looks at the screen, a run's scoring of it
    assert re.search(r"synthetic \S*8x4\S* · ", seen), seen
    screen = t.wait_for(lambda s: "SHELL" in s, 600)
    table = [x for x in screen.splitlines() if x.startswith(("┃", "│"))]
    assert table and all(len(x) <= 100 for x in table)
    assert not any("…" in x for x in table), table
    assert re.search(r"^report: \S+\.md$", screen, re.M) and re.search(r"^plot: +\S+\.png$",
                                                                      screen, re.M)  # fmt: skip
