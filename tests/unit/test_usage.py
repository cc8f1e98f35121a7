"""Global options (`--home`, `-v`) before the command name move to where its parser reads them."""

from __future__ import annotations

import pytest

from casper.cli.usage import hoist_globals


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        (["--home", "X", "show", "1"], ["show", "--home", "X", "1"]),
        (["--home=X", "-v", "ask", "q"], ["ask", "--home=X", "-v", "q"]),
        (["show", "1", "--home", "X"], ["show", "1", "--home", "X"]),  # after: untouched
        (["--version"], ["--version"]),
        (["-h", "--home", "X", "show"], ["-h", "show", "--home", "X"]),
        (["--home", "X"], []),  # no command: the help, as for a bare `casper`
        (["--home"], ["--home"]),  # no value: click's error names it
        (["--bogus", "show"], ["--bogus", "show"]),
        (["--home", "X", "--", "show"], ["--", "show"]),
    ],
)
def test_hoist_globals(given: list[str], parsed: list[str]) -> None:
    assert hoist_globals(given) == parsed
