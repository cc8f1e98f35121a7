"""A home on a machine with no Messages: a first `casper index` that cannot read chat.db leaves
nothing behind, `doctor` says what is missing instead of showing green lines, and no command
starts a service for a home that has nothing to serve (nor does a service retry for ever).
An empty store an earlier version left behind is treated the same."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from casper.cli import app
from casper.service import client
from casper.store.db import Store
from tests.service_helpers import REPO, env_on

runner = CliRunner()


def test_a_failed_first_index_leaves_nothing_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "no-messages" / "chat.db"
    result = runner.invoke(app, ["index", "--home", str(home), "--chat-db", str(missing)])
    assert result.exit_code == 1 and "does not exist" in result.output, result.output
    assert not home.exists(), sorted(p.name for p in home.rglob("*"))
    # the default chat.db of this machine (none here) the same way
    result = runner.invoke(app, ["index", "--home", str(home)])
    assert result.exit_code == 1 and "chat.db" in result.output and not home.exists()


def test_a_first_run_stopped_before_storing_anything_removes_what_it_made(
    tmp_path: Path, demo_corpus
) -> None:  # noqa: ANN001
    """chat.db passes the probe, then fails to read (here: taken away at the first read)."""
    import casper.indexer.pipeline as pipeline

    home = tmp_path / "home"
    original = pipeline.Indexer._people_and_chats

    def fail(self, src):  # noqa: ANN001, ANN202
        raise pipeline.CasperError("chat.db could not be read", hint="try again")

    pipeline.Indexer._people_and_chats = fail
    try:
        result = runner.invoke(app, ["index", "--home", str(home), "--chat-db",
                                     str(demo_corpus.chat_db), "--no-contacts"])  # fmt: skip
    finally:
        pipeline.Indexer._people_and_chats = original
    assert result.exit_code == 1, result.output
    # the path given is kept (a plain `casper index` resumes on the same database) and
    # nothing else: no store that would look indexed
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]


def _empty_store(home: Path) -> None:
    """What an earlier version left after a failed first `casper index`."""
    home.mkdir(mode=0o700)
    Store.open(home / "casper.sqlite").close()


def test_doctor_says_nothing_is_indexed_in_an_empty_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _empty_store(home)
    result = runner.invoke(app, ["doctor", "--json", "--home", str(home)])
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert result.exit_code == 1  # chat.db is missing: a failed check
    assert checks["chat.db"]["status"] == "fail"
    assert (
        checks["store"]["status"] == "warn" and "nothing indexed yet" in checks["store"]["detail"]
    )
    assert "coverage" not in checks


def _casper(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "casper", *args, "--home", str(home)],
        env=env_on(), capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip


def test_no_service_starts_for_an_empty_store(tmp_path: Path, services) -> None:  # noqa: ANN001
    home = tmp_path / "h"
    _empty_store(home)
    services.watch(home)
    for args in (("search", "x"), ("contacts",)):
        done = _casper(home, *args)
        assert done.returncode == 1 and "nothing indexed yet" in done.stderr, done.stderr
        assert not client.running(home), f"{args[0]} started a service"


def test_a_service_does_not_retry_an_empty_store(tmp_path: Path, services) -> None:  # noqa: ANN001
    home = tmp_path / "h"
    _empty_store(home)
    services.start(home)
    time.sleep(3)
    state = client.status(home)["auto_index"]
    assert state["failures"] == 0 and state["retry_in_s"] is None, state
    assert state["last_run"]["outcome"] == "skipped"
    assert "nothing indexed yet" in state["last_run"]["error"]
