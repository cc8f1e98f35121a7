"""The chunk index's directory: the names of its files, the manifest's identity keys, and
removing an index (only one that looks like ours, renamed aside first).

Imports: stdlib, casper.errors.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from casper.errors import IndexMismatch

TABLE = "chunks"
MANIFEST = "manifest.json"
GENERATION = "generation.json"
SCHEMA_VERSION = 2  # 2: vectors moved to the side file (vecstore.py)
# Manifest keys that say which model and chunker wrote the vectors (checked on open); the
# others (the source the chunks came from) are bookkeeping.
IDENTITY = ("schema", "embedder", "dim", "checksum", "chunker")


def identity(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest's identity keys (missing ones as None)."""
    return {key: manifest.get(key) for key in IDENTITY}


def mismatch_message(found: dict[str, Any], expected: dict[str, Any]) -> str:
    """Which settings differ between the index's manifest and what this run expects."""
    if not found:
        return "the search index has no manifest (unknown model)"
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


def discard(index_dir: Path) -> None:
    """Remove an index directory that readers may still be using: renamed aside first (atomic),
    so a reader writing its vector cache meanwhile can't make the deletion fail."""
    aside = index_dir.with_name(f"{index_dir.name}.discarded-{os.getpid()}")
    try:
        os.replace(index_dir, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)
