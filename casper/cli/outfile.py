"""Files Casper writes for a person to keep (`review`, `export`): owner-only (0600) from the
first byte, never over an existing file unless asked (`--force`), written whole or not at all.

Imports: stdlib, casper.errors.
"""

from __future__ import annotations

import os
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
