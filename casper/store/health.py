"""Does `casper.sqlite` still read? A read-only integrity check for `casper doctor`, for
`casper index --rebuild` (which moves a damaged store aside) and for errors that must name the
damaged file.

Imports: sqlite3 (stdlib), casper.datadir.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from casper.datadir import unusable

# SQLite's own words for a damaged file: random bytes ("file is not a database") and a file cut
# short or overwritten in part ("database disk image is malformed"); extended codes start so too
DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
BUSY_WAIT_S = 5.0


def is_damage(exc: BaseException) -> bool:
    """True when a SQLite error says the file itself is damaged (not busy, locked or full)."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    return isinstance(exc, sqlite3.DatabaseError) and name.startswith(DAMAGE_CODES)


def sqlite_problem(path: Path) -> str | None:
    """What is wrong with the SQLite file at `path`, or None when it opens and passes
    `PRAGMA quick_check` (or does not exist, or is empty: SQLite reads that as a new database).

    Read-only; the check reads every page (about a second per 600 MB here), so it runs when a
    rebuild starts, in `casper doctor`, and after an error, never on the path of a search.
    A file another process holds locked is not judged (None)."""
    path = Path(path)
    cannot = unusable(path)  # a folder in its place, no permission: named like bad bytes
    if cannot is not None:
        return cannot
    try:
        if path.stat().st_size == 0:
            return None
    except FileNotFoundError:
        return None
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True,
                               timeout=BUSY_WAIT_S)  # fmt: skip
    except sqlite3.Error as exc:
        return str(exc) if is_damage(exc) else None
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.Error as exc:
        return None if not is_damage(exc) else str(exc)
    finally:
        conn.close()
    found = rows[0][0] if rows else "ok"
    return None if found == "ok" else str(found)
