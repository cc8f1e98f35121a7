"""Naming what went wrong with the data dir: an exception from SQLite, LanceDB or the file
system → the damaged file (`DataDamaged`, hint `casper index --rebuild`) or a full disk
(`DiskFull`), instead of an "unexpected" error.

A failure in the middle of a search or a run does not say which file it came from; the probes
(casper.store.health, casper.index.health) do, so they run after a failure, never before one.
Both transports use it: the CLI's error guard and the service's request handler.

Imports: stdlib, casper.config, casper.datadir, casper.errors, casper.store.health,
casper.index.health.
"""

from __future__ import annotations

import errno
import resource
import shutil
import sqlite3
from collections.abc import Iterator

from casper import datadir
from casper.config import Config
from casper.errors import CasperError, DataDamaged, DiskFull
from casper.index import health as index_health
from casper.store.health import sqlite_problem

_FULL_ERRNOS = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
# how LanceDB (Rust) words the same errors in its messages
_FULL_WORDS = ("No space left on device", "os error 28", "File too large", "os error 27",
               "Disk quota exceeded")  # fmt: skip


def explain(cfg: Config, exc: BaseException) -> CasperError | None:
    """The named error behind `exc`, or None when it was neither damage nor a full disk (a
    bug: the caller reports it as unexpected)."""
    full = disk_full(cfg, exc)
    if full is not None:
        return full
    return damaged(cfg) or unwritable(cfg, exc)


def damaged(cfg: Config) -> DataDamaged | None:
    """The first damaged file of the data dir: the store, then the index's parts, then the
    small files beside them (casper.datadir)."""
    problem = sqlite_problem(cfg.store_path)
    if problem is not None:
        return DataDamaged("the store", cfg.store_path, problem)
    found = index_health.damage(cfg.index_dir)
    if found:
        return found[0].error()
    small = datadir.problems(cfg.data_dir)
    return DataDamaged(small[0].file.what, small[0].path, small[0].problem) if small else None


_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR}


def unwritable(cfg: Config, exc: BaseException) -> CasperError | None:
    """The data dir cannot be written (a folder under /proc, a read-only disk, someone else's
    folder): an OSError about a path in it, or the data dir itself."""
    home = str(cfg.data_dir)
    for e in _chain(exc):
        name = getattr(e, "filename", None)
        inside = name is not None and (
            str(name) == home or str(name).startswith(home.rstrip("/") + "/")
        )
        if isinstance(e, OSError) and e.errno in _UNWRITABLE and inside:
            return CasperError(
                f"cannot write in the data dir {home}: {e.strerror} ({name})",
                hint="give --home (or $CASPER_HOME) a folder you can write to; the "
                "default is ~/.casper",
            )
    return None


def disk_full(cfg: Config, exc: BaseException) -> DiskFull | None:
    """DiskFull when `exc` (or what caused it) is a write that found no space, or hit the
    process's file-size limit (`ulimit -f`). SQLite reports some of those as a plain I/O
    error (growing its -shm file, a short write): those count when space is short or a
    limit is set."""
    free = _free_bytes(cfg)
    tight = (free is not None and free < LOW_SPACE) or _size_limited()
    if not any(_is_full(e, tight) for e in _chain(exc)):
        return None
    if _size_limited() and (free is None or free >= LOW_SPACE):
        return DiskFull(
            f"could not write to {cfg.data_dir}: a file reached this process's size limit "
            "(ulimit -f)",
            hint="raise the limit (ulimit -f unlimited) and run `casper index` again: the "
            "previous store and search index keep serving until it finishes",
        )
    left = f" ({free // 2**20} MB free)" if free is not None else ""
    return DiskFull(f"could not write to {cfg.data_dir}: the disk is full{left}")


LOW_SPACE = 64 * 2**20  # below this, an I/O error while writing is taken for a full disk


def _free_bytes(cfg: Config) -> int | None:
    try:
        return shutil.disk_usage(cfg.data_dir).free
    except OSError:
        return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_full(exc: BaseException, tight: bool) -> bool:
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", None) or ""
        return name == "SQLITE_FULL" or (tight and name.startswith("SQLITE_IOERR"))
    return isinstance(exc, RuntimeError | ValueError | OSError) and any(
        w in str(exc) for w in _FULL_WORDS
    )


def _size_limited() -> bool:
    soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    return soft != resource.RLIM_INFINITY
