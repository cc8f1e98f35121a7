"""Casper in a real terminal: tmux at a fixed size, keys sent, the screen read back.

Checks what CliRunner cannot: line editing with arrow keys (no `^[[D`), history recall,
the shell prompt on a fresh line after Ctrl-D, and bars on a TTY. Skipped without tmux.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ingest.synthetic import build_demo_corpus

REPO = Path(__file__).resolve().parents[2]
_SERVERS = itertools.count()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


class Tmux:
    """One private tmux server (its own socket) holding one window of a fixed size."""

    def __init__(self, socket: str, width: int, height: int = 24) -> None:
        self.base = ["tmux", "-L", socket]
        self.width, self.height = width, height

    def start(self, command: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
        subprocess.run(
            [*self.base, "-f", "/dev/null", "new-session", "-d", "-x", str(self.width),
             "-y", str(self.height), command],
            check=True, env=env, cwd=REPO,
        )  # fmt: skip

    def keys(self, *keys: str, literal: bool = False) -> None:
        flags = ["-l"] if literal else []
        subprocess.run([*self.base, "send-keys", *flags, *keys], check=True)

    def screen(self) -> str:
        out = subprocess.run(
            [*self.base, "capture-pane", "-p", "-S", "-200"], capture_output=True, text=True
        )
        return out.stdout

    def wait_for(self, found: Callable[[str], bool], timeout: float = 60.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = self.screen()
            if found(text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"screen never matched; last screen:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = build_demo_corpus(tmp_path_factory.mktemp("tty") / "src")
    home = tmp_path_factory.mktemp("tty") / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'timezone = "UTC"\nchat_db = "{src.chat_db}"\ncontacts = "{src.contacts}"\n'
    )
    subprocess.run(
        [sys.executable, "-m", "tests.tty_casper", "index", "--home", str(home), "--json"],
        check=True, capture_output=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    return home


@pytest.fixture
def tmux(request: pytest.FixtureRequest) -> Iterator[Callable[[int], Tmux]]:
    made: list[Tmux] = []

    def make(width: int) -> Tmux:
        t = Tmux(f"casper-test-{os.getpid()}-{next(_SERVERS)}", width)  # never reused
        made.append(t)
        return t

    yield make
    for t in made:
        t.kill()


def casper(home: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "tests.tty_casper", *args, "--home", str(home)]
    # after casper exits, a stand-in shell prompt shows where the cursor was left
    return f"sh -c {shlex.quote(shlex.join(cmd) + '; printf SHELL; sleep 60')}"


@pytest.mark.parametrize("width", [80, 60])
def test_chat_line_editing_history_and_ctrl_d(demo_home: Path, tmux, width: int) -> None:  # noqa: ANN001
    t = tmux(width)
    t.start(casper(demo_home, "chat", "--no-llm"))
    t.wait_for(lambda s: "you>" in s)
    t.keys("the dentist", literal=True)
    t.keys("Home")  # arrow/Home keys edit the line instead of printing escape codes
    t.keys("what did Priya say about ", literal=True)
    t.keys("Left", "Right")
    screen = t.wait_for(lambda s: "about the dentist" in s)
    assert "you> what did Priya say about the dentist" in screen
    assert "^[[" not in screen
    t.keys("Enter")
    t.wait_for(lambda s: "no model (search only)" in s)
    t.keys("Up")  # history recall
    t.wait_for(lambda s: s.rstrip().endswith("you> what did Priya say about the dentist"))
    t.keys("C-u")
    t.keys("C-d")
    screen = t.wait_for(lambda s: "SHELL" in s)
    assert any(line.startswith("SHELL") for line in screen.splitlines())  # a fresh line
    history = demo_home / "chat_input_history"
    assert "what did Priya say about the dentist" in history.read_text()
    assert history.stat().st_mode & 0o777 == 0o600


def test_index_bars_on_a_terminal_fit_60_columns(demo_home: Path, tmux) -> None:  # noqa: ANN001
    t = tmux(60)
    t.start(casper(demo_home, "index", "--rebuild"))
    screen = t.wait_for(lambda s: "SHELL" in s)
    # (a rebuild with the same model reuses the cached vectors: no embedding stage then, and
    # the bundled model is not even loaded)
    for stage in ("reading chat.db", "computing stats", "chunking chats", "writing index",
                  "indexing text"):  # fmt: skip
        line = next((x for x in screen.splitlines() if stage in x), f"missing {stage}: {screen}")
        assert line.startswith("✓ "), line  # every stage shown and finished
    lines = screen.splitlines()
    bars = lines[next(i for i, x in enumerate(lines) if "reading chat.db" in x) :]
    bars = bars[: next(i for i, x in enumerate(bars) if x.startswith("indexed "))]
    assert all("━" in x for x in bars), bars  # one line per stage: no column wrapped over
