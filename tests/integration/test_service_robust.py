"""The service when things go wrong: auto-start, idle exit, stale sockets, another version, a
kill -9 mid-request, strangers; and the client staying thin."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from casper.cli.transport import execute
from casper.config import load_config
from casper.service import client, protocol
from tests.service_helpers import REPO, env_on, fake_factory, status

HEAVY = ("numpy", "torch", "sentence_transformers", "transformers", "lancedb", "pyarrow", "mlx",
         "mlx_lm", "dateparser", "openai", "mcp", "casper.store", "casper.index",
         "casper.search", "casper.app.runtime")  # fmt: skip
# stdlib-only modules under those names that the client may read (none: the search modes the CLI
# offers and checks before it sends a request are casper.vocab's)
LIGHT: tuple[str, ...] = ()


def _casper(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "casper", *args, "--home", str(home)],
        env=env_on(), capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )  # fmt: skip


def test_first_command_starts_the_service_which_exits_when_idle(home: Path, services) -> None:  # noqa: ANN001
    services.watch(home)
    (home / "config.toml").write_text("service_idle_minutes = 0.03\n")  # ~2 s
    first = _casper(home, "contacts", "--json")  # returns although a child keeps running
    assert first.returncode == 0, first.stderr
    assert "running in this process" not in first.stderr
    doc = status(home)
    assert doc["running"] and doc["requests"] == 1
    pid = doc["pid"]
    second = _casper(home, "contacts", "--json")
    assert second.stdout == first.stdout and status(home)["pid"] == pid
    assert client.wait_exit(home, timeout=30)  # idle exit, socket and pid file removed
    assert not protocol.socket_path(home).exists() and not (home / "service.pid").exists()


def test_stale_socket_and_pid_file_are_replaced(home: Path, services) -> None:  # noqa: ANN001
    path = protocol.socket_path(home)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a socket file nobody listens on, as a crash leaves it
    dead.close()
    (home / "service.pid").write_text("999999 old-version /nowhere\n")
    assert client.connect(home) is None and not client.running(home)
    proc = services.start(home)
    assert status(home)["pid"] == proc.pid
    assert client.call(home, "contacts", {}, autostart=False)


def test_second_service_for_the_same_home_refuses(home: Path, services) -> None:  # noqa: ANN001
    proc = services.start(home)
    again = _casper(home, "serve", timeout=60)
    assert again.returncode == client.ALREADY_RUNNING_EXIT
    assert "error:" in again.stderr and "hint:" in again.stderr and str(proc.pid) in again.stderr
    assert status(home)["pid"] == proc.pid


def test_a_service_of_another_version_is_replaced(home: Path, services) -> None:  # noqa: ANN001
    old = services.start(home, "--build-id", "0.0.1+old")
    services.watch(home)
    assert status(home)["version"] == "0.0.1+old"
    doc = client.call(home, "contacts", {})  # the old one stops, a current one starts
    assert doc and old.wait(timeout=30) == 0
    now = status(home)
    assert now["pid"] != old.pid and now["version"] == protocol.build_id()


def test_kill_9_mid_request_falls_back_in_process(
    home: Path,
    services,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    fake_factory(monkeypatch)  # the in-process retry uses the same fake models
    proc = services.start(home, "--embed-delay", "60")
    expected = execute("search", {"query": "wifi password"}, load_config(home), no_service=True)
    monkeypatch.setenv("CASPER_SERVICE", "1")
    box: dict = {}

    def ask() -> None:
        box["started"] = time.monotonic()
        box["doc"] = execute("search", {"query": "wifi password"}, load_config(home))
        box["done"] = time.monotonic()

    worker = threading.Thread(target=ask)
    worker.start()
    deadline = time.monotonic() + 30
    while status(home).get("inflight", 0) < 1:  # the search is inside the service now
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    worker.join(timeout=60)
    assert not worker.is_alive(), "the client hung on a dead service"
    assert box["doc"] == expected
    assert box["done"] - box["started"] < 30


def test_a_dead_service_is_an_error_not_a_hang_for_the_raw_client(home: Path, services) -> None:  # noqa: ANN001
    proc = services.start(home, "--embed-delay", "60")
    threading.Timer(1.0, lambda: os.kill(proc.pid, signal.SIGKILL)).start()
    started = time.monotonic()
    with pytest.raises(client.ServiceLost):
        client.call(home, "search", {"query": "wifi"}, autostart=False)
    assert time.monotonic() - started < 20


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_only_the_owner_can_connect(home: Path, services) -> None:  # noqa: ANN001
    import shutil
    import tempfile

    # pytest's own temp dirs are private; the second half needs a path others can traverse
    outer = Path(tempfile.mkdtemp(prefix="casper-owner-", dir="/tmp"))
    os.chmod(outer, 0o711)
    try:
        shutil.copytree(home, outer / "h")
        _check_owner_only(outer / "h", services)
    finally:
        services.close()
        shutil.rmtree(outer, ignore_errors=True)


def _check_owner_only(home: Path, services) -> None:  # noqa: ANN001
    services.start(home)
    path = protocol.socket_path(home)
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1])\nexcept OSError as e:\n    print('refused', e.errno)\n"
        'else:\n    try:\n        s.sendall(b\'{"cmd": "status"}\\n\')\n    except OSError:\n'
        "        pass  # it may hang up before reading\n    print(s.makefile().readline())\n"
    )

    python = "/usr/bin/python3"  # stdlib only; the venv's may not be readable by others
    if not os.access(python, os.X_OK):
        pytest.skip("no system python to run as another user")

    def as_nobody() -> str:
        out = subprocess.run(
            [python, "-c", probe, str(path)], capture_output=True, text=True,
            timeout=30, user=65534, group=65534, cwd="/",
        )  # fmt: skip
        return out.stdout + out.stderr

    assert as_nobody().startswith("refused")  # 0700 directory, 0600 socket
    # even with the file permissions opened up, the service checks who is calling
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o666)
    try:
        for parent in list(path.parents)[1:]:
            if not parent.stat().st_mode & 0o001:
                pytest.skip(f"{parent} is not traversable by others")
        reply = as_nobody()
    finally:
        os.chmod(path.parent, 0o700)
        os.chmod(path, 0o600)
    assert json.loads(reply)["message"] == "permission denied"
    assert "pid" not in reply


def test_the_client_path_imports_no_heavy_library(home: Path, services) -> None:  # noqa: ANN001
    services.start(home)
    code = (
        "import sys\nfrom casper.cli import app\n"
        "try:\n    app(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        f"heavy = sorted(m for m in sys.modules\n"
        f"               if m.startswith({HEAVY!r}) and m not in {LIGHT!r})\n"
        "print(heavy, file=sys.stderr)\n"
    )
    for args in (
        ["search", "wifi", "--json"],
        ["ask", "what is the gym wifi?", "--json"],
        # the server's URL is checked here too, and the engine that talks to it is the
        # service's: the client imports no HTTP client library for it
        ["ask", "what is the gym wifi?", "--base-url", "http://127.0.0.1:9/v1", "--json"],
        ["contacts"],
        ["show", "1481"],
        ["serve", "--status", "--json"],
    ):
        out = subprocess.run(
            [sys.executable, "-c", code, *args, "--home", str(home)],
            env=env_on(), capture_output=True, text=True, timeout=120, cwd=REPO,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stderr.strip().splitlines()[-1] == "[]", (args, out.stderr)
    assert status(home)["requests"] == 5


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys\nfrom casper.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules\n"
        f"             if m.startswith({HEAVY!r}) and m not in {LIGHT!r}), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stderr.strip().splitlines()[-1] == "[]"
