"""The chunk index's directory: the names of its files, the manifest's identity keys, the
published generation, and removing an index (only one that looks like ours, renamed aside first).

Imports: stdlib, casper.errors.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from casper.errors import IndexMismatch

TABLE = "chunks"
MANIFEST = "manifest.json"
GENERATION = "generation.json"
VECTOR_FILE = "vectors.sqlite"  # the vectors' side file (vecstore.py)
BM25_FILE = "rank_bm25.pkl"  # rank-bm25's fitted model of the chunks (lexical.py)
# 2: vectors moved to the side file (vecstore.py); 3: the `dates` column (date terms, its own
# FTS index); 4: each message alone beside the windows, its words in the `message_*` columns.
# Bump it when a column or what the indexer derives into one (the date rules of
# casper.dates.mentions) changes: `casper index` then rebuilds the table and keeps the vectors.
SCHEMA_VERSION = 4
# Manifest keys that say which model and chunker wrote the vectors (checked on open); the
# others (the source the chunks came from) are bookkeeping.
IDENTITY = ("schema", "embedder", "dim", "checksum", "chunker")


@dataclass(frozen=True, slots=True)
class Generation:
    """What the writer published last (`generation.json`): the one generation readers follow.

    `number` goes up by one at every publish: a new table version (the lexical step of a run),
    or more vectors while a fill runs (at most every few seconds) and when it ends. `version`
    is the LanceDB table version readers open; `run` counts the `casper index` runs that
    changed something, so a long-lived process knows the store moved too, not only vectors.
    """

    number: int = 0  # 0: nothing published (an index from before this record, or none)
    version: int | None = None  # None: nothing published; readers open the head
    run: int = 0
    published: float = 0.0

    @property
    def table(self) -> tuple[int | None, int]:
        """Which table state this is: equal for two generations that differ only in vectors."""
        return self.version, self.run


def read_generation(index_dir: Path) -> Generation:
    """The published generation of the index in `index_dir` (Generation() when none)."""
    try:
        data = json.loads((Path(index_dir) / GENERATION).read_text())
    except (OSError, ValueError):
        return Generation()
    if not isinstance(data, dict):
        return Generation()
    version = data.get("version")
    return Generation(
        number=int(data.get("generation") or 0),
        version=int(version) if version is not None else None,
        run=int(data.get("run") or 0),
        published=float(data.get("published") or 0.0),
    )


def write_generation(
    index_dir: Path, *, version: int, run: int, after: Generation | None = None
) -> Generation:
    """Publish `version`: the next generation number (after `after` too: the record of an
    index this one replaces, so numbers never repeat), written last and atomically (a reader
    sees the old record or the new one, never half of either)."""
    path = Path(index_dir) / GENERATION
    last = max(read_generation(index_dir).number, after.number if after else 0)
    published = Generation(last + 1, int(version), int(run), time.time())
    record = {"generation": published.number, "version": published.version,
              "run": published.run, "published": published.published}  # fmt: skip
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, path)
    return published


def read_manifest(index_dir: Path) -> dict[str, Any]:
    """The manifest of the index in `index_dir` ({} when there is none or it does not read)."""
    try:
        data = json.loads((Path(index_dir) / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_current(index_dir: Path) -> bool:
    """True when `index_dir` holds a table and a manifest of this SCHEMA_VERSION."""
    schema = read_manifest(index_dir).get("schema")
    return schema == SCHEMA_VERSION and (Path(index_dir) / f"{TABLE}.lance").exists()


def older_schema(index_dir: Path) -> bool:
    """True when `index_dir` holds an index an earlier version of Casper built (a table of an
    older SCHEMA_VERSION, 2 on): `casper index` rebuilds its table and keeps its vectors."""
    manifest = read_manifest(index_dir)
    schema = manifest.get("schema")
    return (
        isinstance(schema, int)
        and 2 <= schema < SCHEMA_VERSION
        and (Path(index_dir) / f"{TABLE}.lance").exists()
    )


def identity(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest's identity keys (missing ones as None)."""
    return {key: manifest.get(key) for key in IDENTITY}


def only_older(found: dict[str, Any], expected: dict[str, Any]) -> bool:
    """True when a manifest differs from what this run expects only by an older schema: the
    same model and chunker, an earlier version's table (`casper index` rebuilds it)."""
    schema = found.get("schema")
    same = all(found.get(k) == v for k, v in expected.items() if k != "schema")
    return same and isinstance(schema, int) and schema < int(expected.get("schema") or 0)


def mismatch_message(found: dict[str, Any], expected: dict[str, Any]) -> str:
    """Which settings differ between the index's manifest and what this run expects."""
    if not found:
        return "the search index has no manifest (unknown model)"
    if only_older(found, expected):
        return "the search index was built by an earlier version of Casper"
    diffs = [
        f"{key} {found.get(key)!r} (index) vs {expected[key]!r} (now)"
        for key in expected
        if found.get(key) != expected[key]
    ]
    return "the search index was built with different settings: " + "; ".join(diffs)


def remove_index(index_dir: Path) -> None:
    """Delete an index directory, but only one that looks like ours."""
    entries = {p.name for p in index_dir.iterdir()}
    if entries and not ({MANIFEST, f"{TABLE}.lance"} & entries):
        raise IndexMismatch(f"{index_dir} does not look like a Casper index; not deleting it")
    discard(index_dir)


def discard(index_dir: Path, *, keep: tuple[str, ...] = ()) -> None:
    """Remove an index directory that readers may still be using: renamed aside first (atomic),
    so a reader writing its vector cache meanwhile can't make the deletion fail. Files named in
    `keep` are moved back into a new, empty directory (0700) first."""
    aside = index_dir.with_name(f"{index_dir.name}.discarded-{os.getpid()}")
    try:
        os.replace(index_dir, aside)
    except FileNotFoundError:
        return
    kept = [name for name in keep if (aside / name).exists()]
    if kept:
        index_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in kept:
            os.replace(aside / name, index_dir / name)
    shutil.rmtree(aside, ignore_errors=True)
