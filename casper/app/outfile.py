"""Files Casper writes for a person to keep (`review`, `export`, `stats --png`, `eval`'s run
files): owner-only (0600) from the first byte, never over an existing file unless asked
(`--force`), written whole or not at all — and not steerable by another user who can write in
the same folder. `-o -` is standard output, and a folder that is not there is an error (a
mistyped path never becomes a new tree).

The bytes go to a temporary file that `tempfile.mkstemp` makes beside the target (a name
nobody can guess, opened `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600 from creation: a link or a
file planted in advance is never opened), then `os.replace` puts it in the target's place. A
symbolic link at the target is refused unless `--force`, and then the link itself is replaced:
what it points to is never written. A link on the way to the target's folder that another user
made (not this user, not root: the kernel's protected_symlinks rule, in every folder) is refused
too: in a folder others can write to, it would choose where the file goes.

Imports: stdlib, casper.datadir, casper.errors, casper.plaintext.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from casper.datadir import link_of_another
from casper.errors import CasperError
from casper.plaintext import plain


def refuse_existing(path: Path, force: bool) -> None:
    """A CasperError when something is at `path` that `force` does not allow replacing: a
    file or a link without it, a folder ever (checked before any work, and again at the end)."""
    _refuse_links_of_others(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:  # a folder on the way that isn't one, no permission
        raise CasperError(f"{path} cannot be written ({exc.strerror})",
                          hint="name a file in a folder you can write") from None  # fmt: skip
    if stat.S_ISLNK(st.st_mode):
        if not force:
            raise CasperError(f"{path} is a symbolic link",
                              hint="pass --force to replace the link itself (what it points to "
                              "is left alone), or name another file")  # fmt: skip
        return
    if stat.S_ISDIR(st.st_mode):
        raise CasperError(f"{path} is a folder", hint="name a file to write")
    if not force:
        raise CasperError(f"{path} already exists", hint="pass --force to replace it")


def _refuse_links_of_others(path: Path) -> None:
    found = link_of_another(path.parent)
    if found is not None:
        link, uid = found
        raise CasperError(f"{link}, on the way to {path}, is a symbolic link that uid {uid} "
                          "made: it would choose where the file goes",
                          hint="write it somewhere else, in a folder of yours")  # fmt: skip


def write_private(path: Path, data: bytes, *, force: bool) -> Path:
    """Write `data` to `path` (0600) through a temporary file beside it, then rename."""
    refuse_existing(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_links_of_others(path)  # not a link made while the folders were made
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        refuse_existing(path, force)  # something put there meanwhile is not written over
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
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
    """`data` (text: an export, a review) to the file `destination` chose, or to standard
    output (None). On a terminal the text passes `plain` first: a message's escape sequences
    (a window title, an OSC 8 link, OSC 52 writing the clipboard) would act there; a pipe
    or a file gets the bytes as they are."""
    if target is None:
        if sys.stdout.isatty():
            data = plain(data.decode("utf-8", "replace")).encode("utf-8")
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    write_private(target, data, force=force)
