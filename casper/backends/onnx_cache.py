"""The embedder's model cache held as ssh holds its files: owner-only, no links out of it, and
every export checked against a record the cache cannot rewrite.

The cache (casper.telemetry.cache_dir) holds the onnxruntime copy of the embedding model, which
decides every search's vectors. So, before a copy is used:

- a folder of the cache, or a file of a copy, owned by another user is refused (the embedder
  stays on torch, and says why); one writable by group or others is made owner-only again
  (0700 folders, 0600 files), with a notice;
- a copy's folder or file that is a symbolic link is not followed: the copy is made again;
- each copy's files (model, tokenizer, meta.json) are hashed when it is first used from a data
  dir, and the sha256 recorded in that data dir (LEDGER_FILE, 0600): a model swapped together
  with a matching meta.json no longer matches the record, and the copy is made again.

The cache root itself may be a link (a cache moved to another disk); what it points to is held
to the same rules.

Imports: stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

# Beside the store, in the data dir: which copies this data dir checked, and their sha256.
log = logging.getLogger(__name__)
LEDGER_FILE = "onnx_copies.json"
WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


@dataclass
class Inspection:
    """What inspecting the cache found: `refusal` (do not load from it at all), `problem` (the
    copy is not to be trusted: make it again), `notices` (modes tightened, said once)."""

    notices: list[str] = field(default_factory=list)
    refusal: str | None = None
    problem: str | None = None


def inspect(cache: Path, folder: Path | None = None, *, tighten: bool = True) -> Inspection:
    """Check the cache root, its `onnx` folder and (when given) one copy's folder and files.
    `tighten`: take group and other write bits off (doctor only looks)."""
    found = Inspection()
    for path in (cache, cache / "onnx"):
        if path != cache and path.is_symlink():
            found.refusal = f"{path} is a link (to {os.readlink(path)}), not a folder of the cache"
            return found
        _hold(path, found, tighten=tighten, mode=0o700)
        if found.refusal:
            return found
    if folder is None or not (folder.exists() or folder.is_symlink()):
        return found
    if folder.is_symlink():
        found.problem = f"its folder is a link (to {os.readlink(folder)})"
        return found
    _hold(folder, found, tighten=tighten, mode=0o700)
    for entry in sorted(folder.iterdir()) if not found.refusal else ():
        if entry.is_symlink():
            found.problem = f"{entry.name} is a link (to {os.readlink(entry)})"
            return found
        _hold(entry, found, tighten=tighten, mode=0o600)
        if found.refusal:
            return found
    return found


def _hold(path: Path, found: Inspection, *, tighten: bool, mode: int) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if st.st_uid != os.getuid():
        found.refusal = (
            f"{path} belongs to another user (uid {st.st_uid}); Casper loads no model from it"
        )
        return
    if st.st_mode & WRITABLE_BY_OTHERS:
        was = stat.S_IMODE(st.st_mode)
        if tighten:
            os.chmod(path, mode)
            found.notices.append(
                f"{path} was writable by others (mode {was:o}): made owner-only ({mode:o})"
            )
        else:
            found.notices.append(f"{path} is writable by others (mode {was:o})")


def digests(folder: Path, files: tuple[str, ...]) -> dict[str, str]:
    """Each file's sha256 (a missing one is left out)."""
    return {name: sha256_of(folder / name) for name in files if (folder / name).is_file()}


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def recorded(ledger: Path | None, folder: Path) -> dict[str, str] | None:
    """The sha256 of each file of the copy in `folder`, as this data dir first checked it."""
    if ledger is None:
        return None
    entry = _read(ledger).get(str(folder.absolute()))
    files = entry.get("sha256") if isinstance(entry, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else None


def record(ledger: Path | None, folder: Path, files: dict[str, str]) -> None:
    """Remember the copy's hashes in the data dir (owner-only, replaced whole)."""
    if ledger is None or not ledger.parent.is_dir():
        return
    data = _read(ledger)
    data[str(folder.absolute())] = {"sha256": files, "at": round(time.time())}
    tmp = ledger.with_name(f"{ledger.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, ledger)
    except OSError as exc:  # a folder in its place, no permission: the copy still loads;
        # the record is a small file of the data dir, which doctor names and --rebuild moves aside
        tmp.unlink(missing_ok=True)
        log.warning("could not record the onnxruntime copy's sha256 in %s (%s)", ledger,
                    exc.strerror or exc)  # fmt: skip


def mismatch(expected: dict[str, str] | None, actual: dict[str, str]) -> str | None:
    """Which file differs from the record (None when there is no record or all match)."""
    if expected is None:
        return None
    for name in sorted(set(expected) | set(actual)):
        if expected.get(name) != actual.get(name):
            return f"{name} is not the file this data dir checked (its sha256 changed)"
    return None


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
