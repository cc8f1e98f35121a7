"""What keeps a file Casper wrote from being read at all: a folder in its place, something that
is not a file, no permission to read it. Asked before a health check looks inside a file (the
store's, the index's, the data dir's small files), so a damage that is not in the bytes is named
as plainly as one that is.

Imports: stdlib only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

A_FOLDER = "a folder where a file belongs"
NO_PERMISSION = "no permission to read it"


def unusable(path: Path) -> str | None:
    """Why `path` cannot be read as a file, or None (it reads, or it is not there)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(st.st_mode):
        return A_FOLDER
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except PermissionError:
        return NO_PERMISSION
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    return None
