"""Fixtures for the service tests: an indexed home (fake models) and services that always stop."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from casper.service import client, protocol
from tests.fakes_search import HashEmbedder, OverlapReranker

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def fake_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same fakes the test service uses, for this process's in-process path."""
    import casper.backends.factory as factory
    from tests.service_server import SearchThenAnswerEngine

    monkeypatch.setattr(factory, "make_embedder", lambda cfg: HashEmbedder(64))
    monkeypatch.setattr(factory, "make_reranker", lambda cfg: (OverlapReranker(), None))
    monkeypatch.setattr(factory, "make_engine", lambda cfg: SearchThenAnswerEngine())


def index_demo(home: Path, src: Path) -> None:
    with pytest.MonkeyPatch.context() as mp:
        fake_factory(mp)
        mp.setenv("CASPER_SERVICE", "0")
        result = runner.invoke(
            app,
            ["index", "--home", str(home), "--chat-db", str(src / "chat.db"), "--contacts",
             str(src / "AddressBook"), "--json"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def indexed_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(home, source) of the demo corpus indexed with the fake models; copy before use."""
    from ingest.synthetic import build_demo_corpus

    root = tmp_path_factory.mktemp("svc")
    corpus = build_demo_corpus(root / "src")
    index_demo(root / "home", corpus.chat_db.parent)
    return root / "home", corpus.chat_db.parent


@pytest.fixture
def home(indexed_template: tuple[Path, Path], tmp_path: Path) -> Path:
    """A private copy of the indexed demo home (short path: AF_UNIX paths are short)."""
    dest = tmp_path / "h"
    shutil.copytree(indexed_template[0], dest)
    return dest


def env_on() -> dict[str, str]:
    env = {**os.environ, "CASPER_SERVICE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


class Services:
    """Starts test services and guarantees none outlives the test."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.homes: set[Path] = set()

    def start(self, home: Path, *extra: str, wait: bool = True) -> subprocess.Popen[bytes]:
        self.homes.add(home)
        log = open(home / "test-service.log", "ab")  # noqa: SIM115 - owned by the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.service_server", "--home", str(home), *extra],
            env=env_on(), stdout=subprocess.DEVNULL, stderr=log, cwd=REPO,
        )  # fmt: skip
        self.procs.append(proc)
        if wait:
            wait_for_socket(home, proc)
        return proc

    def watch(self, home: Path) -> None:
        """Also clean up whatever service (e.g. auto-started) runs for this home."""
        self.homes.add(home)

    def close(self) -> None:
        for home in self.homes:
            pid = client.service_pid(home)
            if client.running(home) and pid:
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        for home in self.homes:
            assert client.wait_exit(home, 10), f"a service still holds {home}"


@pytest.fixture
def services() -> Iterator[Services]:
    svc = Services()
    try:
        yield svc
    finally:
        svc.close()


def wait_for_socket(home: Path, proc: subprocess.Popen[bytes] | None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock = client.connect(home)
        if sock is not None:
            sock.close()
            return
        if proc is not None and proc.poll() is not None:
            log = (home / "test-service.log").read_text()
            raise AssertionError(f"service exited {proc.returncode}:\n{log}")
        time.sleep(0.05)
    raise AssertionError("service socket never appeared")


def cli(home: Path, *args: str, service: bool) -> str:
    """Run a command in this process (CliRunner) with the service on or off; its stdout."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CASPER_SERVICE", "1" if service else "0")
        result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result.stdout


def status(home: Path) -> dict:
    return client.status(home)


def socket_file(home: Path) -> Path:
    return protocol.socket_path(home)


def load(text: str) -> object:
    return json.loads(text)
