"""What keeps a file of the data dir from being used, and the data dir's small files.

`unusable` says what keeps any file Casper wrote from being read at all (a folder in its place,
something that is not a file, no permission to read it); the store's and the index's health
checks ask it before they look inside a file, so such damage is named as plainly as bad bytes.

The small files besides the store and the index (notices, records, histories, the service's and
the index's lock, pid and log files) are listed here with what keeps one from being used (what
`unusable` says, bytes that are not UTF-8, a record that is not JSON).

None of them holds anything chat.db does not give back, and each is read with care (a notice not
remembered is said again; a chat history that does not read starts empty). So their damage
costs no command, but it is not silent either: `casper doctor` names it, and `casper index
--rebuild` moves the file aside (casper.indexer.salvage) so the next write makes a good one.

Imports: stdlib only.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

A_FOLDER = "a folder where a file belongs"
NO_PERMISSION = "no permission to read it"


def link_of_another(folder: Path) -> tuple[Path, int] | None:
    """The first symbolic link on the way to `folder` that someone else owns (not this user,
    not root), and its owner, followed link by link; None when there is none (folders still to
    be made are made by us). The rule the kernel's protected_symlinks applies in sticky
    folders, applied in every folder: in one others can write to, their link must not choose
    where we write."""
    me = os.getuid()
    todo = list(Path(os.path.abspath(folder)).parts)
    here = Path(todo.pop(0))
    hops = 0
    while todo:
        step = here / todo.pop(0)
        try:
            st = os.lstat(step)
        except FileNotFoundError:
            return None
        except OSError:
            return None  # not ours to judge: mkdir or the write says what is wrong
        if not stat.S_ISLNK(st.st_mode):
            here = step
            continue
        if st.st_uid not in (me, 0):
            return step, st.st_uid
        hops += 1
        if hops > 40:
            return None  # a loop of links: making the folder says so (ELOOP)
        target = Path(os.readlink(step))
        todo = [*(target.parts if target.is_absolute() else (here / target).parts), *todo]
        here = Path(todo.pop(0))
    return None


def not_yours(folder: Path) -> str | None:
    """Why `folder` (the data dir) is not this user's own — another user's folder, or reached
    through a link another user made — or None. In a folder someone else owns, they can replace
    or link any file Casper writes (its store, its log, a temporary file) whatever its mode."""
    found = link_of_another(folder)
    if found is not None:
        return f"is reached through {found[0]}, a symbolic link uid {found[1]} made"
    try:
        owner = os.stat(folder).st_uid
    except OSError:
        return None  # not there yet, or unreadable: making or opening it says what is wrong
    if owner != os.getuid():
        return f"belongs to uid {owner}, not to you (uid {os.getuid()})"
    return None


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


@dataclass(frozen=True, slots=True)
class SmallFile:
    name: str
    what: str  # in words, as doctor and the rebuild say it
    json: bool = False  # a JSON object
    text: bool = False  # UTF-8 text read back (the others' bytes are never read as data)


SMALL_FILES = (
    SmallFile("notices.json", "the notices file (what was said once)", json=True),
    SmallFile("auto_index.json", "the auto-index record", json=True),
    SmallFile("chat_history.json", "the `casper chat` history", json=True),
    SmallFile("chat_input_history", "the `casper chat` input history", text=True),
    SmallFile("service.log", "the service log"),
    SmallFile("service.pid", "the service's pid file"),
    SmallFile("service.lock", "the service lock"),
    SmallFile("index.lock", "the index lock"),
    SmallFile("onnx_copies.json", "the record of the onnxruntime copy's sha256", json=True),
)
BY_NAME = {f.name: f for f in SMALL_FILES}


@dataclass(frozen=True, slots=True)
class Problem:
    file: SmallFile
    path: Path
    problem: str


def problem(path: Path, file: SmallFile) -> str | None:
    """What keeps this small file from being used, or None."""
    cannot = unusable(path)
    if cannot is not None or not (file.json or file.text) or not path.exists():
        return cannot
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, ValueError):  # UnicodeDecodeError included
        return "not UTF-8 text"
    if not file.json:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return "not JSON" if text else "empty"
    return None if isinstance(data, dict) else "not the record Casper writes"


def problems(data_dir: Path) -> list[Problem]:
    """Every small file of `data_dir` that is there and cannot be used."""
    found = []
    for file in SMALL_FILES:
        path = Path(data_dir) / file.name
        why = problem(path, file)
        if why is not None:
            found.append(Problem(file, path, why))
    return found
