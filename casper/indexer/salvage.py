"""`casper index --rebuild` on a damaged data dir: every damaged file Casper wrote is moved aside
(renamed `<name>.damaged-<time>`, kept for the user) and rebuilt from chat.db by the run.

Only what is damaged moves. The vector side file outlives a damaged table (vectors are keyed by
the chunk's content, so the rebuilt table finds them again); a damaged manifest takes the whole
index folder with it, as nothing then says which model wrote those vectors. config.toml is the
user's own file and never moves (casper.config names its line instead).

Imports: stdlib, casper.datadir, casper.store (db, health), casper.index.health.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from casper import datadir
from casper.index import health
from casper.index.files import GENERATION, TABLE, VECTOR_FILE
from casper.store.db import Store
from casper.store.health import sqlite_problem

Announce = Callable[[str], None]
SQLITE_SIDE_FILES = ("-wal", "-shm")  # SQLite finds them by the database's name


@dataclass(frozen=True, slots=True)
class MovedAside:
    """One damaged file or folder, and where it went."""

    what: str  # "the store", "the search index's vector file"
    path: Path
    aside: Path
    problem: str
    rebuilt: bool = True  # from chat.db; else (a small file) written anew when next needed

    def line(self) -> str:
        """The one line a run says about it."""
        then = "rebuilding it from chat.db" if self.rebuilt else "a new one is written when needed"
        return (
            f"{self.what} was damaged ({self.problem}): moved {self.path.name} aside to "
            f"{self.aside.name}; {then}"
        )


def _quiet(_line: str) -> None:
    pass


def open_store(path: Path, *, rebuild: bool, announce: Announce = _quiet) -> Store:
    """The store a run writes to (created when missing); with `rebuild`, a damaged one is moved
    aside first and a new one created in its place."""
    if rebuild:
        for moved in salvage_store(path):
            announce(moved.line())
    return Store.open(path)


def salvage_small_files(data_dir: Path) -> list[MovedAside]:
    """Move aside each small file of the data dir that cannot be used (casper.datadir): the
    notices, the auto-index record, the chat histories, the service's log, pid and lock files
    and the index lock. Before the index lock is taken: a damaged one cannot be."""
    return [
        MovedAside(p.file.what, p.path, move_aside(p.path), p.problem, rebuilt=False)
        for p in datadir.problems(data_dir)
    ]


def salvage_store(path: Path) -> list[MovedAside]:
    """Move a damaged `casper.sqlite` (with its -wal and -shm) aside; [] when it reads."""
    problem = sqlite_problem(path)
    if problem is None:
        return []
    aside = move_aside(path, SQLITE_SIDE_FILES)
    return [MovedAside("the store", path, aside, problem)]


def salvage_index(index_dir: Path) -> list[MovedAside]:
    """Move the damaged parts of the chunk index aside (see the module doc); [] when it reads."""
    found = health.damage(index_dir)
    if not found:
        return []
    first: dict[str, health.Damage] = {}  # part → its first damaged file
    for damage in found:
        first.setdefault(damage.part, damage)
    if health.MANIFEST_PART in first:  # the vectors' model is unknown: nothing of it is kept
        d = first[health.MANIFEST_PART]
        return [MovedAside(d.what, index_dir, move_aside(index_dir), d.problem)]
    moved = []
    targets = {
        health.TABLE_PART: (index_dir / f"{TABLE}.lance", ()),
        health.GENERATION_PART: (index_dir / GENERATION, ()),
        health.VECTORS_PART: (index_dir / VECTOR_FILE, SQLITE_SIDE_FILES),
    }
    for part, (path, side) in targets.items():
        if part in first:
            moved.append(MovedAside(first[part].what, path, move_aside(path, side),
                                    first[part].problem))  # fmt: skip
    for damage in found:  # cache files: each damaged one (the next search builds them again)
        if damage.part == health.CACHE_PART and damage.path.exists():
            moved.append(MovedAside(damage.what, damage.path, move_aside(damage.path),
                                    damage.problem))  # fmt: skip
    return moved


def move_aside(path: Path, side: tuple[str, ...] = ()) -> Path:
    """Rename `path` to `<name>.damaged-<time>` beside it (and its `side` files, suffix kept
    last so SQLite still pairs them); the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    os.replace(path, aside)
    for suffix in side:
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, aside.with_name(aside.name + suffix))
    return aside
