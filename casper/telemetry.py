"""The libraries Casper loads keep no record of the machine and send nothing: their telemetry
switched off, and the caches they would write in the home folder moved into Casper's own.

Each switch is an environment variable the library reads once, when it is first imported (or,
for onnxruntime, when its shared library loads), so `switch_off` runs before any of them: at the
start of every command (casper.cli.base.go_offline) and again in the onnxruntime adapter, for a
program that uses Casper as a library.

What each one did without it (found by tests/integration/test_egress.py, which runs the whole
product under a fresh HOME with an audit hook):

- onnxruntime (1.32, Linux and macOS) writes `~/.cache/Microsoft/DeveloperTools/.onnxruntime/
  {deviceid,onnxruntime.db}` (a device id; an events table with the Python path, OS, CPU model
  and memory) and a `.ses` session file in the temp folder, the moment it is imported, and
  carries an upload endpoint. `ORT_DISABLE_TELEMETRY` stops all three at their source;
  `onnxruntime.disable_telemetry_events()` (called by the adapter) only stops later events.
- torch's compiler (used by the one-time ONNX export) makes `$TMPDIR/torchinductor_$USER`.
- matplotlib (the eval's plots) writes a font cache in `~/.cache/matplotlib` or `~/.matplotlib`.
- huggingface_hub and transformers send usage pings when online (`HF_HUB_DISABLE_TELEMETRY`,
  and `DO_NOT_TRACK`, which other libraries honour too); an OpenTelemetry SDK, if one is ever
  installed, exports nothing (`OTEL_SDK_DISABLED`).

Imports: stdlib only.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

# Off whatever the environment says: these only ever record or send.
SWITCHED_OFF: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "OTEL_SDK_DISABLED": "true",
}

# Caches moved into Casper's cache folder (a subfolder each) unless the user chose a place.
REDIRECTED: dict[str, str] = {
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "TRITON_CACHE_DIR": "triton",
    "MPLCONFIGDIR": "matplotlib",
}


def cache_dir() -> Path:
    """Casper's own cache folder (what it derives from models, and the caches above):
    $CASPER_CACHE, else the platform's user cache folder. Owner-only, rebuilt when missing."""
    env = os.environ.get("CASPER_CACHE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "casper"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "casper"


def switch_off(cache: Path | None = None) -> dict[str, str]:
    """Set every switch above in this process's environment (children inherit it); `cache` is
    Casper's own cache folder (default: cache_dir()). Returns what was set."""
    cache = cache or cache_dir()
    applied = dict(SWITCHED_OFF)
    # owner-only from the start: a library making its subfolder would leave it 0755 (a read-only
    # home: the libraries say so themselves if they need the folder)
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name, value in SWITCHED_OFF.items():
        os.environ[name] = value
    for name, sub in REDIRECTED.items():
        applied[name] = os.environ.setdefault(name, str(cache / sub))
    return applied


def onnxruntime_records() -> Path | None:
    """The folder where onnxruntime kept its record of this machine before the switch, if it is
    still there (made by an earlier Casper, or by another program that loads onnxruntime)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    bases = [Path(xdg)] if xdg else []
    bases.append(Path.home() / ".cache")
    for base in bases:
        folder = base / "Microsoft" / "DeveloperTools" / ".onnxruntime"
        if folder.is_dir():
            return folder
    return None


def telemetry_state() -> dict[str, bool]:
    """Which switches hold in this process (for `casper doctor`): name → off."""
    return {name: os.environ.get(name) == value for name, value in SWITCHED_OFF.items()}
