"""Files Casper writes for a person to keep (`review`, `export`, `stats --png`): owner-only
(0600) from the first byte, never over an existing file unless asked (`--force`), written whole
or not at all; `-o -` is standard output, and a folder that is not there is an error.

Imports: stdlib, casper.errors.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from casper.errors import CasperError


def refuse_existing(path: Path, force: bool) -> None:
    """A CasperError when `path` exists and `force` is not set (checked before any work)."""
    if path.exists() and not force:
        raise CasperError(f"{path} already exists", hint="pass --force to replace it")
    if path.is_dir():
        raise CasperError(f"{path} is a folder", hint="name a file to write")


def write_private(path: Path, data: bytes, *, force: bool) -> Path:
    """Write `data` to `path` as 0600 through a temporary file beside it, then rename."""
    refuse_existing(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o600)  # a umask may have taken bits; never more than the owner's
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


STDOUT = "-"  # `-o -`: standard output, as Unix tools read it


def destination(path: Path, force: bool) -> Path | None:
    """Where a file a person named goes, decided before any work: None for `-` (standard
    output), else `path` once its folder is known to exist (a folder is never made for it: a
    mistyped path must not become a new tree) and it is no file to keep (unless `force`)."""
    if str(path) == STDOUT:
        return None
    folder_exists(path)
    refuse_existing(path, force)
    return path


def folder_exists(path: Path) -> None:
    """A CasperError when the folder `path` would go in is not there (or is not a folder)."""
    folder = path.parent
    if not folder.is_dir():
        said = f"{folder} is not a folder" if folder.exists() else f"no folder {folder}"
        raise CasperError(
            f"cannot write {path}: {said}",
            hint="make the folder first, or name a file in one that exists",
        )


def write_out(target: Path | None, data: bytes, *, force: bool) -> None:
    """`data` to the file `destination` chose, or to standard output (None)."""
    if target is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    write_private(target, data, force=force)
