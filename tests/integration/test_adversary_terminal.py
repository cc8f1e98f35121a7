"""`-o -` on a terminal (bench/results/adversary.md): `casper export --format csv -o -` and
`casper review -o -` wrote message bodies to standard output as they are, past the console
every other output passes, so a body's escape sequences (a window title, an OSC 8 link, OSC 52
writing the clipboard) acted on the terminal. On a terminal the text is `plain` now; through a
pipe the bytes stay as written (a program reading the CSV gets the text people sent)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, use_fake_search_models
from tests.hostile_text import CONTROL, STRANGER, build_hostile_home


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        return build_hostile_home(tmp_path_factory.mktemp("adversary-terminal"))


def _run(home: Path, args: list[str], *, tty: bool) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CASPER_SERVICE": "0", "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "casper", *args, "--home", str(home)]
    if not tty:
        return subprocess.run(cmd, env=env, capture_output=True, timeout=120, check=True).stdout
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, env=env, stdout=follower, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return out


@pytest.mark.parametrize(
    "args",
    [["export", "--person", STRANGER, "--format", "csv", "-o", "-"], ["review", "2024", "-o", "-"]],
    ids=["export csv", "review"],
)
def test_standard_output_on_a_terminal_carries_no_escape(home: Path, args: list[str]) -> None:
    piped = _run(home, args, tty=False).decode("utf-8")
    assert CONTROL.search(piped)  # a planted body's escapes are in what it writes
    shown = _run(home, args, tty=True).decode("utf-8", "replace").replace("\r\n", "\n")
    assert len(shown) > len(piped) // 2
    assert not CONTROL.search(shown), sorted(set(CONTROL.findall(shown)))


def test_a_pipe_gets_the_text_as_it_was_sent(home: Path) -> None:
    piped = _run(home, ["export", "--person", STRANGER, "--format", "csv", "-o", "-"], tty=False)
    assert b"\x1b]0;pwned title\x07" in piped
