"""Helpers of the first-hour tests: the demo with fake models, golden text, masks.

The piped tests are tests/integration/test_first_hour.py, the terminal ones (tmux)
tests/slow/test_first_hour_terminal.py; both compare with the same kind of golden files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from casper.cli import app

GOLDEN = Path(__file__).resolve().parent / "golden"
runner = CliRunner()


def use_demo_fakes(mp: pytest.MonkeyPatch) -> None:
    """The hash embedder, the word-overlap reranker and no language model (as on CI)."""
    import casper.backends.factory as factory
    from casper.errors import ModelUnavailable
    from tests.fakes_search import HashEmbedder, OverlapReranker

    def no_engine(cfg: object) -> object:
        raise ModelUnavailable("cannot load language model (test)")

    mp.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    mp.setattr(factory, "make_reranker", lambda cfg: (OverlapReranker(), None))
    mp.setattr(factory, "make_engine", no_engine)


def run_demo(base: Path, mp: pytest.MonkeyPatch | None = None, columns: int = 80) -> Result:
    """`casper demo --home base` at `columns` (fake models unless the caller set them)."""
    if mp is not None:
        use_demo_fakes(mp)
    result = runner.invoke(app, ["demo", "--home", str(base)], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result


def demo_lines(stdout: str) -> list[str]:
    """The commands the demo suggests at its end, one a line."""
    lines = stdout.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith("Try it yourself")), None)
    if start is None:
        return []
    found = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        found.append(line.strip())
    return found


def masked(text: str, **paths: Path) -> str:
    """Output without what changes from run to run: durations, rates, and the given paths by
    name."""
    for name, path in paths.items():
        text = text.replace(str(path), name.upper())
    text = re.sub(r"\b\d+(?:\.\d+)? s\b", "N s", text)
    text = re.sub(r"\b\d+m\d\ds\b|\b\d+s\b", "Ns", text)
    text = re.sub(r"\b\d[\d,]*(?:\.\d+)? (\w+)/s\b", r"N \1/s", text)  # rates: 1,234 chunks/s
    return text


def check_golden(name: str, text: str) -> None:
    """`text` (trailing spaces dropped) equals tests/golden/NAME.txt."""
    text = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("CASPER_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden {path}: run with CASPER_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} changed; regenerate and review if intended"


# `casper ARGS...` in a child interpreter whose embedder takes 0.2 s a batch, so a test can
# stop it mid-way with Ctrl-C (SIGINT); the language model is missing, as on CI
CLI_WITH_SLOW_EMBEDDER = """
import json, sys, time
import casper.backends.factory as factory
from tests.fakes_search import HashEmbedder

class Slow(HashEmbedder):
    def embed_documents(self, texts, on_progress=None):
        time.sleep(0.2)
        return super().embed_documents(texts, on_progress)

factory.make_embedder = lambda cfg: Slow(64)
from casper.cli import app
sys.argv = ["casper", *json.loads(sys.argv[1])]
app()
"""
