"""`casper serve --install`'s LaunchAgent: the plist is valid (plistlib reads back what it wrote),
runs this venv's python as `-m casper serve` for the data dir, starts at login, is restarted
only after a crash and at most once a minute, logs to a 0600 file in the data dir and holds no
message text. Installing is macOS-only: elsewhere it is `error:` + `hint:` and exit 1."""

from __future__ import annotations

import os
import plistlib
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from casper.service import launchagent


def test_the_plist_runs_the_service_for_this_data_dir(tmp_path: Path) -> None:
    home = tmp_path / "casper home"
    data = plistlib.loads(plistlib.dumps(launchagent.plist_for(home)))  # valid, round-trips
    assert data["Label"] == launchagent.label(home)
    assert data["Label"].startswith("local.casper.serve.")
    assert data["ProgramArguments"] == [
        sys.executable, "-m", "casper", "serve", "--home", str(home),
    ]  # fmt: skip
    assert data["RunAtLoad"] is True
    assert data["StandardOutPath"] == data["StandardErrorPath"] == str(home / "service.log")
    assert data["Umask"] == 0o077
    # the casper the installing command ran, whether installed or a checkout
    import casper

    code = data["EnvironmentVariables"]["PYTHONPATH"]
    assert Path(casper.__file__).resolve().is_relative_to(code)


def test_launchd_restarts_it_after_a_crash_only_and_never_in_a_tight_loop(tmp_path: Path) -> None:
    data = launchagent.plist_for(tmp_path)
    # not KeepAlive=true (that restarts a clean `casper serve --stop` and an error at start
    # forever): only a crash (a signal) brings it back, at most once a minute
    assert data["KeepAlive"] == {"Crashed": True}
    assert data["ThrottleInterval"] >= 60


def test_the_plist_holds_paths_and_switches_only(tmp_path: Path) -> None:
    data = launchagent.plist_for(tmp_path / "h")
    assert set(data) == {
        "Label", "ProgramArguments", "EnvironmentVariables", "WorkingDirectory", "RunAtLoad",
        "KeepAlive", "ThrottleInterval", "StandardOutPath", "StandardErrorPath", "Umask",
    }  # fmt: skip
    assert set(data["EnvironmentVariables"]) == {"PYTHONPATH"}


def test_different_data_dirs_get_different_agents(tmp_path: Path) -> None:
    assert launchagent.label(tmp_path / "a") != launchagent.label(tmp_path / "b")
    assert launchagent.label(tmp_path / "a") == launchagent.label(tmp_path / "x" / ".." / "a")


def test_install_writes_and_loads_it_and_uninstall_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    calls: list[list[str]] = []
    fake = lambda args: calls.append(args) or 0  # noqa: E731 - launchctl, recorded
    home, user = tmp_path / "data", tmp_path / "user"
    path = launchagent.install(home, launchctl=fake, user_home=user)
    assert path == user / "Library/LaunchAgents" / f"{launchagent.label(home)}.plist"
    assert plistlib.loads(path.read_bytes()) == launchagent.plist_for(home)
    log = home / "service.log"
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600  # created before launchd opens it
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    domain = f"gui/{os.getuid()}"
    assert calls == [["bootout", f"{domain}/{launchagent.label(home)}"],
                     ["bootstrap", domain, str(path)]]  # fmt: skip
    assert launchagent.installed(home, user)
    calls.clear()
    assert launchagent.uninstall(home, launchctl=fake, user_home=user) == path
    assert not path.exists() and not launchagent.installed(home, user)
    assert calls == [["bootout", f"{domain}/{launchagent.label(home)}"]]
    assert launchagent.uninstall(home, launchctl=fake, user_home=user) is None


@pytest.mark.skipif(sys.platform == "darwin", reason="the macOS-only refusal, elsewhere")
@pytest.mark.parametrize("flag", ["--install", "--uninstall"])
def test_install_elsewhere_than_macos_is_an_error_with_a_hint(tmp_path: Path, flag: str) -> None:
    result = CliRunner().invoke(app, ["serve", flag, "--home", str(tmp_path / "h")])
    assert result.exit_code == 1
    assert "error:" in result.stderr and "macOS" in result.stderr
    assert "hint:" in result.stderr
    assert not (tmp_path / "user-home" / "Library").exists()
