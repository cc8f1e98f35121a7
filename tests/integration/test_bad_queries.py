"""Input a person can type that is not what a command takes ends as `error:` + `hint:`, never
"unexpected": a query whose bytes are not UTF-8 (in this process and through the service), a
`--home` that is a file or under /proc, a config value of the wrong type (and `doctor` says
which, and still checks the rest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import build_tiny_corpus
from tests.service_helpers import REPO, env_on

runner = CliRunner()


def _error(result) -> str:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    assert (
        "unexpected" not in result.output
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    ), result.output
    assert "error:" in result.output and "hint:" in result.output, result.output
    return result.output


@pytest.mark.parametrize(
    "args",
    [
        ["search", "caf\udce9 au lait"],
        ["search", "dentist", "--person", "\udcff"],
        ["ask", "when is the \udcff dentist?", "--no-llm"],
        ["stats", "Pr\udce9ya"],
        ["search", "wifi\x00password"],
    ],
)
def test_text_that_is_not_utf8_is_refused_in_process(demo_home: Path, args: list[str]) -> None:
    result = runner.invoke(app, [*args, "--home", str(demo_home), "--no-service"])
    said = _error(result)
    assert "not UTF-8 text" in said or "NUL" in said


def _casper(home: Path, *args: bytes | str, service: bool) -> subprocess.CompletedProcess[bytes]:
    env = env_on() if service else {**os.environ, "CASPER_SERVICE": "0", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "casper", *args, "--home", str(home)],
        env=env, capture_output=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("service", [False, True])
def test_argv_bytes_that_are_not_utf8_are_refused(
    home: Path,
    services,  # noqa: ANN001
    service: bool,
) -> None:
    """The bytes as a terminal in Latin-1 hands them over (`casper search café` typed there)."""
    if service:
        services.start(home)
    done = _casper(home, "search", b"caf\xe9", service=service)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1, err
    assert "not UTF-8 text" in err and "unexpected" not in err


@pytest.mark.parametrize("where", ["a file", "under a file", "under /proc", "/proc itself"])
@pytest.mark.parametrize("command", [["index"], ["search", "dentist"], ["doctor"]])
def test_a_home_that_cannot_be_a_data_dir_is_named(
    tmp_path: Path, where: str, command: list[str]
) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("a file, not a folder\n")
    home = {
        "a file": file,
        "under a file": file / "casper",
        "under /proc": Path("/proc/casper-test-home"),
        "/proc itself": Path("/proc"),
    }[where]
    if command == ["index"]:  # a chat.db that reads: what fails is the home
        corpus = build_tiny_corpus(tmp_path / "src")
        command = ["index", "--chat-db", str(corpus.chat_db), "--no-contacts"]
    result = runner.invoke(app, [*command, "--home", str(home)])
    assert "unexpected" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1, result.output
    assert str(home) in result.output or str(file) in result.output, result.output
    assert not Path("/proc/casper-test-home").exists()


def test_doctor_names_a_config_value_of_the_wrong_type_and_checks_the_rest(
    demo_home: Path,
) -> None:
    with (demo_home / "config.toml").open("a") as fh:
        fh.write('top_k = "ten"\n')
    result = runner.invoke(app, ["doctor", "--json", "--home", str(demo_home)])
    assert result.exit_code == 1, result.output
    checks = json.loads(result.stdout)["checks"]
    config = [c for c in checks if c["name"] == "config"]
    assert len(config) == 1 and config[0]["status"] == "fail"
    assert "top_k" in config[0]["detail"] and "whole number from 1 to 1000" in config[0]["detail"]
    assert str(demo_home / "config.toml") in config[0]["detail"]
    # the rest still ran, with the settings that were accepted (chat.db from config.toml)
    store = next(c for c in checks if c["name"] == "store")
    assert store["status"] == "ok" and next(c for c in checks if c["name"] == "chat.db")
    # and a command refuses it the same way, before anything runs
    said = _error(runner.invoke(app, ["search", "pie", "--home", str(demo_home)]))
    assert 'top_k = "ten"' in said and "config.toml" in said
