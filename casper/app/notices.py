"""Notices said once per situation, remembered in `<data dir>/notices.json` (0600).

A missing reranker is printed the first time and then only shown by `casper doctor`, instead of
on every search. Imports: stdlib only. Unreadable or absent state reads as "nothing said yet".
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

FILE = "notices.json"


def read_all(data_dir: Path) -> dict[str, dict[str, Any]]:
    """Every remembered notice by key ({} when there is no readable state)."""
    try:
        data = json.loads((Path(data_dir) / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def get(data_dir: Path, key: str) -> dict[str, Any] | None:
    value = read_all(data_dir).get(key)
    return value if isinstance(value, dict) else None


def remember(data_dir: Path, key: str, value: dict[str, Any]) -> None:
    """Store one notice; a data dir that does not exist yet is not created for it."""
    data = read_all(data_dir)
    data[key] = value
    _write(Path(data_dir), data)


def forget(data_dir: Path, key: str) -> None:
    data = read_all(data_dir)
    if data.pop(key, None) is not None:
        _write(Path(data_dir), data)


def _write(data_dir: Path, data: dict[str, Any]) -> None:
    """Write-then-rename, so a concurrent reader never sees half a file; 0600 from the start.
    A file that cannot be replaced (a folder in its place, a read-only data dir) is left as
    it is: the notice is said again next time, and `casper doctor` names the file."""
    if not data_dir.is_dir():
        return
    tmp = data_dir / f"{FILE}.tmp{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, data_dir / FILE)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
