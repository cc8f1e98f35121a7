"""Does the chunk index still read? Probes of every file it is made of, for `casper doctor`
(one line each), for `casper index --rebuild` (which moves damaged parts aside) and for errors
that must name the damaged file.

Each probe reads for real: the manifest and generation records are parsed strictly, the table
is opened at the published version and one column of every row is read (every data file), each
of its indexes answers a query that uses it (BM25, n-grams, the lookups), the vector side file
passes SQLite's `quick_check` and gives back a vector, and the published vector cache reads.
A search only learns of damage when it hits it; these find it first.

Imports: stdlib, sqlite3, casper.errors, casper.index (files, lance_import); numpy, pyarrow and
LanceDB inside the probes (casper.index chunk_table, vector_cache, `lancedb()`), only when there
is something to read: every `casper index` loads this module (salvage), a no-op one reads nothing.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from casper.datadir import unusable
from casper.errors import DataDamaged
from casper.index.files import GENERATION, MANIFEST, TABLE, VECTOR_FILE, read_generation
from casper.index.lance_import import lancedb

# the parts a rebuild moves aside, each on its own (the vectors survive a damaged table: they
# are keyed by the chunk's content, so a rebuilt table finds them again)
MANIFEST_PART = "manifest"  # the model that wrote the vectors: without it they can't be trusted
GENERATION_PART = "generation"
TABLE_PART = "table"  # chunks.lance: versions, data files, indexes
VECTORS_PART = "vectors"  # vectors.sqlite
CACHE_PART = "cache"  # *.npy of the published generation

# an index's column → how it is called in `casper doctor`, and in an error
LEGS = {
    "text": "BM25", "cjk": "n-gram", "dates": "dates", "message_text": "BM25 (messages alone)",
    "message_cjk": "n-gram (messages alone)", "message_dates": "dates (messages alone)",
}  # fmt: skip
NAMES = {
    "text": "word (BM25) index", "cjk": "n-gram (CJK, emoji) index",
    "dates": "index of the dates messages mention",
    "message_text": "word (BM25) index of each message alone",
    "message_cjk": "n-gram (CJK, emoji) index of each message alone",
    "message_dates": "index of the dates each message alone mentions",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Damage:
    """One damaged part of the index: which (`part`), the file or folder to name, in words."""

    part: str
    path: Path
    what: str  # "the search index's text-search index (text_idx)"
    problem: str  # short: "not a Lance file", "cut short"

    def error(self) -> DataDamaged:
        return DataDamaged(self.what, self.path, self.problem)


@dataclass(frozen=True, slots=True)
class Probe:
    """One thing checked: its name (a line of `casper doctor`), what it found."""

    name: str
    detail: str
    damage: Damage | None = None


def damage(index_dir: Path) -> list[Damage]:
    """Every damaged part of the index in `index_dir` (empty when all of it reads)."""
    return [p.damage for p in probe(index_dir) if p.damage is not None]


def manifest_damage(index_dir: Path) -> Damage | None:
    """The manifest's damage, if it is there and does not read."""
    return _manifest(Path(index_dir)).damage


def table_damage(index_dir: Path) -> list[Damage]:
    """The damaged parts of the index's table alone (its version manifest, data files and
    indexes): what a failed read of the table checks, without the slower side-file check."""
    index_dir = Path(index_dir)
    if not (index_dir / f"{TABLE}.lance").exists():
        return []
    return [p.damage for p in _table(index_dir) if p.damage is not None]


def probe(index_dir: Path) -> list[Probe]:
    """Every probe of the index in `index_dir`, in order; [] when there is no index."""
    index_dir = Path(index_dir)
    if not index_dir.is_dir():
        return []
    found = [_manifest(index_dir), _generation(index_dir)]
    dim = _dim(index_dir)
    if (index_dir / f"{TABLE}.lance").exists():
        found += _table(index_dir)
    if (index_dir / VECTOR_FILE).exists():
        found.append(_vectors(index_dir, dim))
    if dim is not None and found[1].damage is None:
        found.append(_cache(index_dir, dim))
    return found


# ---- the records --------------------------------------------------------------------------
def _manifest(index_dir: Path) -> Probe:
    path = index_dir / MANIFEST
    if not path.exists():
        if (index_dir / f"{TABLE}.lance").exists():
            return _bad(MANIFEST_PART, path, "manifest", "the search index's manifest", "missing")
        return Probe("manifest", "none yet")
    problem = _json_problem(path, lambda d: isinstance(d.get("schema"), int))
    if problem:
        return _bad(MANIFEST_PART, path, "manifest", "the search index's manifest", problem)
    return Probe("manifest", "reads")


def _generation(index_dir: Path) -> Probe:
    path = index_dir / GENERATION
    if not path.exists():
        return Probe("generation", "none published")

    def valid(d: dict[str, Any]) -> bool:
        number, version, run = d.get("generation"), d.get("version"), d.get("run")
        return (
            isinstance(number, int)
            and isinstance(run, int)
            and (version is None or isinstance(version, int))
        )

    problem = _json_problem(path, valid)
    if problem:
        return _bad(GENERATION_PART, path, "generation", "the search index's generation record",
                    problem)  # fmt: skip
    return Probe("generation", str(read_generation(index_dir).number))


def _json_problem(path: Path, valid: Callable[[dict[str, Any]], bool]) -> str | None:
    cannot = unusable(path)
    if cannot is not None:
        return cannot
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        return exc.strerror or str(exc)
    except ValueError:  # UnicodeDecodeError included
        return "not JSON" if path.stat().st_size else "empty"
    if not isinstance(data, dict) or not valid(data):
        return "not the record Casper writes"
    return None


def _dim(index_dir: Path) -> int | None:
    try:
        dim = json.loads((index_dir / MANIFEST).read_text()).get("dim")
    except (OSError, ValueError, AttributeError):
        return None
    return dim if isinstance(dim, int) and dim > 0 else None


# ---- the table ----------------------------------------------------------------------------
def _table(index_dir: Path) -> list[Probe]:
    """Open at the published version, read every data file, query every index."""
    table_dir = index_dir / f"{TABLE}.lance"
    unreadable = _unusable_files(table_dir)
    if unreadable is not None:  # named by its own path, before LanceDB trips over it
        path, why = unreadable
        return [_bad(TABLE_PART, path, "table", "a file of the search index's table", why)]
    published = _published(index_dir)
    try:
        table = lancedb().connect(str(index_dir)).open_table(TABLE)
        if published is not None and int(table.version) != published:
            table.checkout(published)
    except (OSError, RuntimeError, ValueError) as exc:
        return [_bad(TABLE_PART, _version_file(table_dir, published), "table",
                     "the search index's version manifest", lance_problem(exc))]  # fmt: skip
    data = table_dir / "data"
    try:
        rows = table.search().select(["chat_id"]).limit(None).to_arrow().num_rows
        sample = table.search().select(_SAMPLE).limit(1).to_arrow().to_pylist()
    except (OSError, RuntimeError, ValueError) as exc:
        return [_bad(TABLE_PART, data, "table", "the search index's data", lance_problem(exc))]
    found = [Probe("table", f"{rows:,} chunks")]
    try:
        indexes = list(table.list_indices())
    except (OSError, RuntimeError, ValueError) as exc:
        return [*found, _bad(TABLE_PART, table_dir / "_indices", "indexes",
                             "the search index's index list", lance_problem(exc))]  # fmt: skip
    row = sample[0] if sample else {}
    lookups = []
    for ix in sorted(indexes, key=lambda ix: ix.name):
        column = ix.columns[0]
        problem = _query_problem(table, column, row)
        name = LEGS.get(column, f"{column} lookup")
        if problem is not None:
            what = f"the search index's {NAMES.get(column, name)} ({ix.name})"
            found.append(_bad(TABLE_PART, table_dir / "_indices" / ix.index_uuid, name, what,
                              problem))  # fmt: skip
        elif column in LEGS:
            found.append(Probe(name, "answers"))
        else:
            lookups.append(column)
    if lookups:
        found.append(Probe("lookups", f"{len(lookups)} answer"))
    return found


_SAMPLE = ["id", "chat_id", "start", "end", "person_ids"]
# LanceDB's own folders have no suffix; a folder named like one of its files took a file's place
_FILE_SUFFIXES = (".lance", ".manifest", ".txn", ".json", ".idx", ".arrow")


def _unusable_files(table_dir: Path) -> tuple[Path, str] | None:
    """The first file of the table that cannot be read at all (a folder in its place, no
    permission), by a walk of stats only."""
    for path in sorted(table_dir.rglob("*")):
        if path.is_dir() and path.suffix not in _FILE_SUFFIXES:
            continue
        problem = unusable(path)
        if problem is not None:
            return path, problem
    return None


def _query_problem(table: Any, column: str, row: dict[str, Any]) -> str | None:
    """Run one query that reads the index on `column` (a value from a real row, so the lookup
    reaches its data pages); what went wrong, or None."""
    from casper.index.chunk_table import quote

    where = {
        "id": f"id = {quote(str(row.get('id', '')))}",
        "chat_id": f"chat_id = {int(row.get('chat_id') or 0)}",
        "start": f"`start` >= {float(row.get('start') or 0.0)!r}",
        "end": f"`end` >= {float(row.get('end') or 0.0)!r}",
        "person_ids": f"array_has_any(person_ids, [{quote((row.get('person_ids') or ['-'])[0])}])",
    }
    try:
        if column in LEGS:  # every file of a full-text index is read by its first query
            table.search("casper", query_type="fts", fts_columns=column).limit(1).to_arrow()
        elif column in where:
            table.search().where(where[column]).select(["id"]).limit(1).to_arrow()
    except (OSError, RuntimeError, ValueError) as exc:
        return lance_problem(exc)
    return None


def _published(index_dir: Path) -> int | None:
    return read_generation(index_dir).version


def _version_file(table_dir: Path, version: int | None) -> Path:
    """The manifest file of a table version (LanceDB names it by the version or, in its newer
    layout, by 2^64 - 1 - version); the versions folder when it is not there."""
    folder = table_dir / "_versions"
    if version is not None:
        for name in (f"{version}.manifest", f"{2**64 - 1 - version}.manifest"):
            if (folder / name).exists():
                return folder / name
    manifests = sorted(folder.glob("*.manifest"))
    return manifests[0] if len(manifests) == 1 else folder


# ---- the vectors --------------------------------------------------------------------------
def _vectors(index_dir: Path, dim: int | None) -> Probe:
    """The side file: SQLite's quick_check (the same check as casper.store.health: the store
    and the index do not import each other), then one vector read back."""
    path = index_dir / VECTOR_FILE
    problem = _sqlite_problem(path)
    if problem is None and dim is not None:
        try:
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5.0)
            try:
                row = conn.execute("SELECT v FROM vec LIMIT 1").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            problem = str(exc) if _is_sqlite_damage(exc) else None
            row = None
        if row is not None and len(row[0]) != 2 * dim:
            problem = f"a vector of {len(row[0])} bytes where {2 * dim} were expected"
    if problem:
        return _bad(VECTORS_PART, path, "vectors", "the search index's vector file", problem)
    return Probe("vectors", "reads")


def _sqlite_problem(path: Path) -> str | None:
    cannot = unusable(path)
    if cannot is not None:
        return cannot
    try:
        if path.stat().st_size == 0:
            return None
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except (OSError, sqlite3.Error):
        return None
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.Error as exc:
        return str(exc) if _is_sqlite_damage(exc) else None
    finally:
        conn.close()
    found = rows[0][0] if rows else "ok"
    return None if found == "ok" else str(found)


def _is_sqlite_damage(exc: BaseException) -> bool:
    name = getattr(exc, "sqlite_errorname", None) or ""
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


def _cache(index_dir: Path, dim: int) -> Probe:
    from casper.index.vector_cache import cache_problem

    generation = read_generation(index_dir)
    if generation.version is None:
        return Probe("cache", "none")
    found = cache_problem(index_dir, generation.version, generation.number, dim)
    if found is None:
        return Probe("cache", "reads")
    path, problem = found
    return _bad(CACHE_PART, path, "cache", "the search index's vector cache", problem)


# ---- words --------------------------------------------------------------------------------
def _bad(part: str, path: Path, name: str, what: str, problem: str) -> Probe:
    return Probe(name, problem, Damage(part, path, what, problem))


_SOURCE = re.compile(r",\s*/\S+:\d+:\d+\s*$")  # ", /rustc/…/file.rs:250:5" at the end


def lance_problem(exc: BaseException) -> str:
    """LanceDB's error in a few words: what a user can tell apart (cut short, not a Lance file,
    missing), else its own first line without the source location."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "invalid magic" in text or "not appear to be a Lance file" in text:
        return "not a Lance file"
    if any(
        s in text for s in ("Invalid range", "fill whole buffer", "too small", "Unexpected EOF")
    ):
        return "cut short"
    missing = re.search(r"Not found: (\S+?),?\s", text + " ")
    if missing:
        return f"{Path(missing.group(1)).name} is missing"
    text = _SOURCE.sub("", text).replace("lance error: ", "").replace("LanceError(IO): ", "")
    return text[:160]
