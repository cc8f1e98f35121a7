"""The dated commands the docs show, run as a user would, on the demo corpus
(messages from March 2022 to October 2024) with the fake embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app

runner = CliRunner()


@pytest.fixture
def home(demo_home: Path) -> Path:
    """The demo corpus indexed with the fake models (tests/integration/conftest)."""
    return demo_home


def test_ask_in_january_looks_in_a_january_that_has_messages(home: Path) -> None:
    result = runner.invoke(
        app,
        ["ask", "what did we talk about in January?", "--no-llm", "--json", "--home", str(home)],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["citations"]
    # the index ends in October 2024, so January means January 2024 (not an empty 2026)
    assert all(c["ts"].startswith("2024-01") for c in data["citations"]), data["citations"]
    assert not data["answer"].startswith("Nothing between")


def test_readme_search_with_since_last_march_runs(home: Path) -> None:
    # README: casper search "dentist" --person Priya --since "last March"
    result = runner.invoke(
        app,
        ["search", "dentist", "--person", "Priya", "--since", "last March", "--json",
         "--home", str(home)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["filters"]["since"] == "last March"
    # the latest March is after the corpus's last message (October 2024): nothing can match
    assert data["hits"] == []
