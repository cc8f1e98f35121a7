"""No Full Disk Access, for real: chat.db exists but this user may not read it.

As root (CI containers) a forked child drops to uid 65534 before running the CLI, so the kernel
refuses the file just as macOS refuses ~/Library/Messages to a terminal without Full Disk Access;
as any other user the file is chmod 000. `index` (default path and `--chat-db`) and `doctor`
must say `error:`/`✗` plus a hint naming System Settings → Full Disk Access and the terminal app.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from tests.paths import CHATDB_FIXTURES

runner = CliRunner()
NOBODY = 65534
ITERM = {"TERM_PROGRAM": "iTerm.app"}


@pytest.fixture
def world() -> Iterator[Path]:
    """A dir another user can traverse (pytest's tmp_path is private to root), with an
    unreadable chat.db at the default place under it and a home anyone may write to."""
    root = Path(tempfile.mkdtemp(prefix="casper-fda-"))
    root.chmod(0o755)
    messages = root / "Library" / "Messages"
    messages.mkdir(parents=True)
    for part in (root / "Library", messages):
        part.chmod(0o755)
    shutil.copy(CHATDB_FIXTURES / "imessagedb" / "chat.db", messages / "chat.db")
    (messages / "chat.db").chmod(0o600 if os.geteuid() == 0 else 0)
    (root / "home").mkdir(mode=0o777)
    (root / "home").chmod(0o777)
    yield root
    (messages / "chat.db").chmod(0o600)
    shutil.rmtree(root)


def _others_can_reach(path: Path) -> bool:
    """Every directory above `path` is searchable by other users (the o+x bit)."""
    return all(p.stat().st_mode & 0o001 for p in path.resolve().parents)


def _run_denied(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run the CLI as a user who may not read chat.db: (exit code, stdout, stderr)."""
    if os.geteuid() != 0:
        result = runner.invoke(app, args, env=env)
        return result.exit_code, result.stdout, result.stderr
    unreadable = [d for d in (Path(sys.prefix), Path(__file__)) if not _others_can_reach(d)]
    if unreadable:  # e.g. a checkout (and its .venv) inside a 0700 `mktemp -d` directory
        pytest.skip(f"uid {NOBODY} cannot reach {unreadable[0]}: run from a 0755 checkout")
    # Lazy imports must happen before the fork: uid 65534 can't read root's Python install.
    warm = {**env, "CASPER_CHAT_DB": "/nonexistent/chat.db"}
    runner.invoke(app, [*args[:1], "--home", tempfile.mkdtemp()], env=warm)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        os.close(read_fd)
        out = {"exit": -1, "stdout": "", "stderr": "crash"}
        signal.alarm(60)  # a lock held by another thread at fork time must not hang the suite
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result = runner.invoke(app, args, env=env)
            out = {"exit": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}
        finally:
            os.write(write_fd, json.dumps(out).encode())
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        raw = pipe.read().decode()
    os.waitpid(pid, 0)
    assert raw, "the unprivileged child died without reporting"
    out = json.loads(raw)
    return out["exit"], out["stdout"], out["stderr"]


def _env(world: Path) -> dict[str, str]:
    return {**ITERM, "HOME": str(world), "CASPER_CHAT_DB": "", "CASPER_CONTACTS": ""}


def _assert_fda_error(code: int, stdout: str, stderr: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 1, (stdout, stderr)
    assert lines[0].startswith("error: ") and "permission denied" in lines[0], lines
    assert lines[1].startswith("hint: "), lines
    assert "Privacy & Security → Full Disk Access" in lines[1]
    assert "switch on iTerm" in lines[1]  # the terminal app in use, from TERM_PROGRAM
    assert "Traceback" not in stderr and "Invalid value" not in stderr


def test_default_chat_db_without_access(world: Path) -> None:
    code, out, err = _run_denied(["index", "--home", str(world / "home" / "a")], _env(world))
    _assert_fda_error(code, out, err)
    assert str(world / "Library" / "Messages" / "chat.db") in err


def test_chat_db_option_without_access(world: Path) -> None:
    path = world / "Library" / "Messages" / "chat.db"
    args = ["index", "--home", str(world / "home" / "b"), "--chat-db", str(path)]
    _assert_fda_error(*_run_denied(args, {**ITERM}))


def test_doctor_says_the_same(world: Path) -> None:
    args = ["doctor", "--home", str(world / "home" / "c"), "--json"]
    code, out, err = _run_denied(args, _env(world))
    check = next(c for c in json.loads(out)["checks"] if c["name"] == "chat.db")
    assert check["status"] == "fail" and "permission denied" in check["detail"]
    assert "Privacy & Security → Full Disk Access" in check["hint"]
    assert "switch on iTerm" in check["hint"]
    code, out, _ = _run_denied(["doctor", "--home", str(world / "home" / "c")], _env(world))
    shown = " ".join(out.split())  # rich wraps long lines at the terminal width
    assert code == 1 and "✗ chat.db: cannot open" in shown
    assert "hint: System Settings → Privacy & Security → Full Disk Access: switch on iTerm" in shown
