"""casper.telemetry: the libraries' records switched off before they load (the end-to-end check
is tests/integration/test_egress.py; this one is the onnxruntime case alone, in a second)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from casper.telemetry import REDIRECTED, SWITCHED_OFF, switch_off, telemetry_state

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _restored_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """switch_off writes os.environ: every name it sets is put back after each test."""
    for name in [*SWITCHED_OFF, *REDIRECTED]:
        monkeypatch.delenv(name, raising=False)


def _import_onnxruntime(tmp_path: Path, code: str) -> set[str]:
    """Run `code` then `import onnxruntime` with a fresh HOME and TMPDIR; what it left there."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir(parents=True)
    tmp.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TMPDIR": str(tmp),
           "PYTHONPATH": str(REPO)}  # fmt: skip
    subprocess.run([sys.executable, "-c", f"{code}\nimport onnxruntime"], env=env, check=True,
                   timeout=120)  # fmt: skip
    return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()}


def test_onnxruntime_keeps_no_record_once_switched_off(tmp_path: Path) -> None:
    left = _import_onnxruntime(tmp_path / "off", "from casper.telemetry import switch_off\n"
                               "switch_off()")  # fmt: skip
    assert left == set()
    if sys.platform == "linux":  # where the record is known to be kept (onnxruntime 1.32)
        # without the switch the same import records the machine (what casper used to leave)
        left = _import_onnxruntime(tmp_path / "on", "")
        assert "home/.cache/Microsoft/DeveloperTools/.onnxruntime/deviceid" in left
        assert "tmp/.ses" in left


def test_switches_win_over_the_environment_and_caches_stay_where_the_user_put_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mine"))
    assert not any(telemetry_state().values())
    switch_off(tmp_path / "cache")
    assert all(telemetry_state().values())
    assert os.environ["ORT_DISABLE_TELEMETRY"] == "1"
    assert os.environ["MPLCONFIGDIR"] == str(tmp_path / "mine")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache" / "torchinductor")
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700


def test_doctor_names_onnxruntimes_earlier_record_and_a_switch_left_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casper.app.doctor_trust import telemetry_check

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    switch_off(tmp_path / "cache")
    assert telemetry_check()["status"] == "ok"
    left = tmp_path / ".cache" / "Microsoft" / "DeveloperTools" / ".onnxruntime"
    left.mkdir(parents=True)
    line = telemetry_check()
    assert line["status"] == "warn" and str(left) in line["detail"]
    assert f"rm -r {left}" in (line["hint"] or "")
    left.rmdir()
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    line = telemetry_check()
    assert line["status"] == "warn" and "ORT_DISABLE_TELEMETRY" in line["detail"]
