"""`casper serve --install / --uninstall`: a per-user LaunchAgent that starts the service at login.

macOS only. The plist (built by `plist_for`, pure, checked by the tests on any system) runs this
interpreter with `-m casper serve --home DATA_DIR`; launchd starts it at login (RunAtLoad) and
again only after a crash (KeepAlive Crashed), never after an exit with a status: a
`casper serve --stop`, a hand-over to a newer version or an error at start (a bad config.toml)
stay stopped instead of looping, and a crash is retried at most once a minute (ThrottleInterval).
Its output goes to the service log in the data dir, created 0600 (Umask 077 for the files it
makes). A service started this way, or one that takes over from it, never exits for idleness
(casper.service.server).

Imports: stdlib, casper (where it is installed), casper.errors.
"""

from __future__ import annotations

import hashlib
import os
import plistlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import casper
from casper.errors import CasperError

LABEL_PREFIX = "local.casper.serve"
THROTTLE_S = 60

Launchctl = Callable[[list[str]], int]  # runs `launchctl ARGS…`, returns its exit status


class MacOSOnly(CasperError):
    default_hint = (
        "start `casper serve` from your own session instead (e.g. a systemd user unit); "
        "commands start it by themselves when it is not running"
    )


def label(home: Path) -> str:
    """One agent per data dir: the prefix and a short hash of the data dir's path."""
    digest = hashlib.blake2b(os.fsencode(str(_abs(home))), digest_size=4).hexdigest()
    return f"{LABEL_PREFIX}.{digest}"


def plist_path(home: Path, user_home: Path | None = None) -> Path:
    return (user_home or Path.home()) / "Library/LaunchAgents" / f"{label(home)}.plist"


def log_file(home: Path) -> Path:
    return _abs(home) / "service.log"


def plist_for(home: Path, python: str | None = None) -> dict[str, object]:
    """The LaunchAgent for `home`: this interpreter (the venv's, as given: not resolved, so its
    packages are the ones installed) running the service. Paths only, no message text."""
    home = _abs(home)
    code = str(Path(casper.__file__).resolve().parents[1])  # the casper this command runs
    return {
        "Label": label(home),
        "ProgramArguments": [
            python or sys.executable,
            "-m",
            "casper",
            "serve",
            "--home",
            str(home),
        ],
        "EnvironmentVariables": {"PYTHONPATH": code},
        "WorkingDirectory": str(home),
        "RunAtLoad": True,
        "KeepAlive": {"Crashed": True},
        "ThrottleInterval": THROTTLE_S,
        "StandardOutPath": str(log_file(home)),
        "StandardErrorPath": str(log_file(home)),
        "Umask": 0o077,
    }


def installed(home: Path, user_home: Path | None = None) -> bool:
    """True on macOS when this data dir's LaunchAgent is installed."""
    return sys.platform == "darwin" and plist_path(home, user_home).exists()


def require_macos(what: str) -> None:
    if sys.platform != "darwin":
        raise MacOSOnly(
            f"`casper serve {what}` is for macOS (a LaunchAgent); this is {sys.platform}"
        )


def install(
    home: Path, *, launchctl: Launchctl | None = None, user_home: Path | None = None
) -> Path:
    """Write the LaunchAgent and load it (which starts the service); its plist path."""
    require_macos("--install")
    run = launchctl or _launchctl
    home = _abs(home)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    log = log_file(home)
    os.close(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # launchd would 0644
    os.chmod(log, 0o600)
    path = plist_path(home, user_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".plist.tmp")
    with open(tmp, "wb") as fh:
        plistlib.dump(plist_for(home), fh)
    os.chmod(tmp, 0o644)  # launchd refuses agents others can write
    os.replace(tmp, path)
    domain = f"gui/{os.getuid()}"
    run(["bootout", f"{domain}/{label(home)}"])  # an older copy of it, if loaded
    if run(["bootstrap", domain, str(path)]) != 0:
        raise CasperError(
            f"launchctl could not load {path}",
            hint=f"try `launchctl bootstrap {domain} {path}`; the service log is {log}",
        )
    return path


def uninstall(
    home: Path, *, launchctl: Launchctl | None = None, user_home: Path | None = None
) -> Path | None:
    """Unload and remove the LaunchAgent; its former path, or None when none was installed."""
    require_macos("--uninstall")
    run = launchctl or _launchctl
    path = plist_path(home, user_home)
    run(["bootout", f"gui/{os.getuid()}/{label(home)}"])  # stops the service it started
    if not path.exists():
        return None
    path.unlink()
    return path


def _launchctl(args: list[str]) -> int:
    done = subprocess.run(["launchctl", *args], capture_output=True, check=False)
    return done.returncode


def _abs(home: Path) -> Path:
    return Path(os.path.abspath(Path(home).expanduser()))
