"""The newcomer's path: every command of the README's "Using it" block, run as
printed on the demo's data dir (after `casper demo`), exits 0. The README block is read from
the file, so the README cannot drift from what works.

Fake models as on CI (the hash embedder, no language model); `eval` builds the tiny synthetic
corpus instead of the demo's, to stay quick: the command line is the README's either way.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from tests.first_hour import run_demo

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


def using_it_commands() -> list[list[str]]:
    """The `casper …` lines of the README's "Using it" code block, comments dropped."""
    text = README.read_text()
    section = text[text.index("## Using it") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the README's Using it section has no bash block"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("casper ")]


def test_the_readme_block_names_the_commands_a_newcomer_tries() -> None:
    names = [words[1] for words in using_it_commands()]
    assert {"doctor", "index", "ask", "chat", "search", "stats", "show", "eval"} <= set(names)


def test_every_readme_command_exits_0_on_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ingest.synthetic as synthetic

    base = tmp_path / "home"
    run_demo(base, monkeypatch)  # fake models from here on
    monkeypatch.setattr(
        synthetic, "build_demo_corpus", lambda dest, **kw: synthetic.build_tiny_corpus(dest)
    )
    demo = str(base / "demo")
    monkeypatch.chdir(tmp_path)  # `review` and `export` write their files here, not in the repo
    for words in using_it_commands():
        args = ["--home", demo, *words[1:]]  # as `casper --home DEMO …`, the demo's own advice
        ran = runner.invoke(app, args, input="/quit\n", env={"COLUMNS": "80"})
        assert ran.exit_code == 0, (shlex.join(words), ran.output)
