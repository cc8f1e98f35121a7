"""Every function that reads chat.db turns an SQLite failure into the error a user can act on.

A damaged page is met by whichever query reaches it first; a reader added without
`@reads_chat_db` turns "chat.db is damaged, copy it again" into "unexpected DatabaseError" for
exactly the files whose damage sits where that reader looks (the owner's addresses read the
newest messages first: damage near the end of the file reached them before anything else).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sqlite3

import ingest

# Readers called only inside connect's open, whose own mapping covers them, or that read no
# page a damaged file can hold past the schema (which open has already read)
_MAPPED_BY_THEIR_CALLER = {
    "ingest.apple_schema.tolerant",
    "ingest.apple_schema.check_tables_loaded",
    "ingest.apple_schema.skipped_entries",
    "ingest.schema.table_columns",
    "ingest.messages.iter_rows",  # reads only through iter_pages
}


def _public_readers() -> dict[str, object]:
    found: dict[str, object] = {}
    for info in pkgutil.iter_modules(ingest.__path__, "ingest."):
        if info.name.startswith("ingest.synthetic"):
            continue  # builds test databases; never reads the user's
        module = importlib.import_module(info.name)
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn):
                continue
            if fn.__module__ != module.__name__:
                continue
            params = inspect.signature(inspect.unwrap(fn)).parameters.values()
            if any(p.annotation in (sqlite3.Connection, "sqlite3.Connection") for p in params):
                found[f"{module.__name__}.{name}"] = fn
    return found


def _maps_errors(fn: object) -> bool:
    if inspect.isgeneratorfunction(fn):
        # a decorator returns before the first row is read: a generator maps its own errors
        return "map_sqlite_error" in inspect.getsource(fn)  # type: ignore[arg-type]
    return hasattr(fn, "__wrapped__")


def test_every_chat_db_reader_maps_sqlite_errors() -> None:
    readers = _public_readers()
    assert "ingest.handles.load_owner_addresses" in readers  # the scan sees the readers
    unmapped = {
        name
        for name, fn in readers.items()
        if not _maps_errors(fn) and name not in _MAPPED_BY_THEIR_CALLER
    }
    assert not unmapped, f"wrap these in @reads_chat_db: {sorted(unmapped)}"


def test_the_exemptions_still_name_readers() -> None:
    # an exemption that no longer exists would let a new reader of that name slip through
    assert set(_public_readers()) >= _MAPPED_BY_THEIR_CALLER
