"""What a user mistypes: usage errors, empty queries, bad -k, reversed dates, `--version`.

Every one is the same shape as any other Casper error (CLI.md): exit 1, one `error:` line and one
`hint:` line on stderr, nothing on stdout, no typer box and no traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import casper
from casper.cli import app

runner = CliRunner()


def _assert_error(result, *, says: str, hint_says: str) -> None:  # noqa: ANN001
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1, result.output
    assert len(lines) == 2, lines
    assert lines[0].startswith("error: ") and says in lines[0], lines
    assert lines[1].startswith("hint: ") and hint_says in lines[1], lines
    assert result.stdout == ""
    assert "╭" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "says", "hint_says"),
    [
        (["search"], "missing argument 'query'", "casper search --help"),
        (["show"], "missing argument 'ID'", "casper show --help"),  # `stats` alone: the owner
        (["search", "dentist", "--bogus"], "no such option: --bogus", "casper search --help"),
        (["search", "dentist", "-k", "ten"], "invalid value for '-k'", "casper search [OPTIONS]"),
        (
            ["search", "dentist", "--mode", "fuzzy"],
            "invalid value for '--mode': 'fuzzy' is not one of 'hybrid', 'bm25', 'vector'",
            "casper search [OPTIONS]",
        ),
        (
            ["search", "dentist", "--lexical", "bm25"],
            "invalid value for '--lexical'",
            "casper search [OPTIONS]",
        ),
        (["frobnicate"], "no such command 'frobnicate'", "casper --help"),
        (["--bogus"], "no such option: --bogus", "casper --help"),
    ],
)
def test_usage_errors_are_one_error_and_one_hint_line(
    args: list[str], says: str, hint_says: str, tmp_path: Path
) -> None:
    result = runner.invoke(app, [*args, "--home", str(tmp_path)] if args[0] != "--bogus" else args)
    _assert_error(result, says=says, hint_says=hint_says)


@pytest.mark.parametrize(
    "args",
    [
        ["--home", "{home}", "show", "1"],
        ["--home={home}", "show", "1"],
        ["-v", "--home", "{home}", "show", "1"],
        ["show", "1", "--home", "{home}"],
        ["--home", "{home}", "show", "1", "-v"],
    ],
)
def test_global_options_work_before_or_after_the_command(args: list[str], tmp_path: Path) -> None:
    home = tmp_path / "elsewhere"
    result = runner.invoke(app, [a.format(home=home) for a in args])
    # the command ran against that home (an empty one: nothing indexed there), not a usage error
    _assert_error(result, says=f"nothing indexed yet in {home}", hint_says=f"--home {home} index")


def test_global_options_alone_print_the_help(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--home", str(tmp_path)])
    assert result.exit_code == 0 and "Usage: casper" in result.stdout
    assert "before or after its name" in " ".join(result.stdout.split())


def test_version_prints_the_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"casper {casper.__version__}"


def test_bare_casper_prints_help_not_an_error() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 0
    assert "Usage: casper" in result.stdout and "search" in result.stdout
    assert "error:" not in result.output


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
@pytest.mark.parametrize("command", ["search", "ask"])
def test_an_empty_query_is_an_error(command: str, query: str, tmp_path: Path) -> None:
    result = runner.invoke(app, [command, query, "--home", str(tmp_path)])
    what = "query" if command == "search" else "question"
    _assert_error(result, says=f"the {what} is empty", hint_says=f"casper {command} ")


@pytest.mark.parametrize("k", ["0", "-3"])
def test_k_below_one_is_an_error(k: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["search", "dentist", "-k", k, "--home", str(tmp_path)])
    _assert_error(result, says=f"-k must be at least 1 (got {k})", hint_says="-k 10")


def test_k_beyond_a_thousand_is_an_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["search", "dentist", "-k", "5000", "--home", str(tmp_path)])
    _assert_error(result, says="-k must be at most 1,000 (got 5,000)", hint_says="-k 10")


def test_max_iterations_below_one_is_an_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ask", "when?", "--max-iterations", "0", "--home", str(tmp_path)])
    _assert_error(result, says="--max-iterations must be at least 1 (got 0)", hint_says="model")


@pytest.mark.parametrize("command", [["search", "dentist"], ["stats", "Priya"]])
def test_since_after_until_names_both_dates(command: list[str], tmp_path: Path) -> None:
    result = runner.invoke(
        app, [*command, "--since", "2024-05-02", "--until", "2024-03-01", "--home", str(tmp_path)]
    )
    _assert_error(result, says="--since 2024-05-02 is after --until 2024-03-01", hint_says="swap")


def test_since_after_until_shows_how_a_phrase_was_read(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["search", "dentist", "--since", "2 days ago", "--until", "2020-01-01", "--home",
         str(tmp_path)],
    )  # fmt: skip
    _assert_error(result, says="--since '2 days ago' (", hint_says="swap")
    assert re.search(
        r"'2 days ago' \(\d{4}-\d{2}-\d{2}\) is after --until 2020-01-01", result.stderr
    )


def test_one_day_range_is_fine_and_reaches_the_store(tmp_path: Path) -> None:
    """--since == --until is that whole day: valid, so the next complaint is the missing index."""
    result = runner.invoke(
        app, ["search", "dentist", "--since", "2024-03-01", "--until", "2024-03-01",
              "--home", str(tmp_path)],
    )  # fmt: skip
    _assert_error(result, says="nothing indexed yet", hint_says=" index` to read your Messages")
