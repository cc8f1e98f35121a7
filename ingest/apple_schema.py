"""Schema entries only Apple's SQLite parses: read around them, never past real damage.

Since macOS Sequoia, Messages' chat.db holds triggers written in syntax that Apple's own SQLite
build accepts and stock SQLite (Python's `sqlite3`) does not: the first query on such a file
fails with `malformed database schema (chat_service_on_insert_chat_message_join) - near "ON":
syntax error`, before any row is read. `PRAGMA writable_schema = ON` makes SQLite load every
schema entry it can parse and skip the others; on a `mode=ro` connection nothing can be written.

It is set only after that error (`is_unparsable_schema`), so every file stock SQLite reads opens
exactly as it always did. writable_schema skips *any* entry that does not parse, a damaged
`CREATE TABLE` included, and a table missing from the parsed schema turns into a bare "no such
table" later or is read around unnoticed; so after the retry `check_tables_loaded` makes sure
every table of `sqlite_master` loaded (one that did not is damage). Triggers, views and indexes
may be skipped: reading never runs a trigger or needs a view, and an index changes speed, not
results. `skipped_entries` names what was skipped, for `casper doctor`. The measurement behind
this is in docs/reliability.md ("Apple-only schema entries").

Imports: stdlib only.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

_SCHEMA_ERROR = "malformed database schema ("


@dataclass(frozen=True, slots=True)
class Skipped:
    """One `sqlite_master` entry this SQLite could not parse, and so did not load."""

    kind: str  # "trigger", "view", "index" or "table"
    name: str
    reason: str  # SQLite's own words ("near \"ON\": syntax error")


class SchemaDamaged(Exception):
    """A table's schema entry does not load: reading around it would silently lose its rows."""

    def __init__(self, skipped: list[Skipped]) -> None:
        self.skipped = skipped
        what = ", ".join(f"{s.name} ({s.reason})" for s in skipped)
        super().__init__(f"the schema entry of table {what} does not load")


def is_unparsable_schema(exc: BaseException) -> bool:
    """True for the error SQLite raises when an entry of `sqlite_master` does not parse."""
    return isinstance(exc, sqlite3.DatabaseError) and str(exc).startswith(_SCHEMA_ERROR)


def tolerant(conn: sqlite3.Connection) -> bool:
    """True when `conn` was opened to skip the entries it cannot parse."""
    return bool(conn.execute("PRAGMA writable_schema").fetchone()[0])


def check_tables_loaded(conn: sqlite3.Connection) -> None:
    """Raise SchemaDamaged when a table of `sqlite_master` did not load on `conn`."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' ORDER BY rowid"
    ).fetchall()
    loaded = _loaded_tables(conn)
    missing = [
        Skipped("table", name, _parse_errors([sql])[0])
        for name, sql in rows
        if not _is_loaded(conn, name, loaded)
    ]
    if missing:
        raise SchemaDamaged(missing)


def skipped_entries(conn: sqlite3.Connection) -> tuple[Skipped, ...]:
    """The entries of `sqlite_master` `conn` skipped: triggers, views and indexes in file order,
    then tables (none on a connection `open_chat_db` made). () on a connection that loads the
    whole schema: every database but those holding entries this SQLite cannot parse."""
    if not tolerant(conn):
        return ()
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    table_sql = [sql for kind, *_, sql in rows if kind == "table"]
    # SQLite lists no loaded triggers: one is skipped exactly when it does not parse, which an
    # empty database holding the tables tells; indexes and views are asked of `conn`
    trigger_errors = iter(_parse_errors(table_sql, [sql for k, *_, sql in rows if k == "trigger"]))
    skipped = []
    for kind, name, _table, sql in rows:
        if kind == "trigger":
            reason = next(trigger_errors)
            gone = bool(reason)
        elif kind == "index":
            gone = not conn.execute(f"PRAGMA index_info({_quote(name)})").fetchall()
            reason = _parse_errors(table_sql, [sql])[0] if gone else ""
        elif kind == "view":
            gone = not _is_loaded(conn, name, None)
            reason = _parse_errors(table_sql, [sql])[0] if gone else ""
        else:
            continue
        if gone:
            skipped.append(Skipped(kind, name, reason))
    loaded = _loaded_tables(conn)
    skipped += [
        Skipped("table", name, _parse_errors([sql])[0])
        for kind, name, _table, sql in rows
        if kind == "table" and not _is_loaded(conn, name, loaded)
    ]
    return tuple(skipped)


def describe(skipped: tuple[Skipped, ...] | list[Skipped]) -> str:
    """'1 trigger (name)', '2 triggers and 1 index (a, b, c)': what was skipped, for a line."""
    counts: dict[str, int] = {}
    for s in skipped:
        counts[s.kind] = counts.get(s.kind, 0) + 1
    parts = [f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in counts.items()]
    names = ", ".join(s.name for s in skipped)
    return f"{' and '.join(parts)} ({names})"


def _loaded_tables(conn: sqlite3.Connection) -> set[str] | None:
    """The tables and views `conn` loaded (SQLite 3.37+), else None: ask one by one."""
    try:
        return {
            r[0] for r in conn.execute("SELECT name FROM pragma_table_list WHERE schema = 'main'")
        }
    except sqlite3.Error:
        return None


def _is_loaded(conn: sqlite3.Connection, name: str, loaded: set[str] | None) -> bool:
    """Whether table or view `name` loaded: in `loaded` (from _loaded_tables), else asked."""
    if loaded is not None:
        return name in loaded
    try:
        return bool(conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall())
    except sqlite3.Error:
        return True  # known to this connection, just not usable here (a virtual table's module)


def _parse_errors(setup: list[str], statements: list[str] | None = None) -> list[str]:
    """SQLite's error for each statement ('' when it parses) in one empty in-memory database,
    `setup` first (the tables a trigger or index needs). Without `statements`, the errors of
    `setup` itself."""
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    try:
        scratch.execute("BEGIN")  # one transaction: no schema reload per statement
        first = [_error(scratch, sql) for sql in setup]
        if statements is None:
            return first
        # kept, not rolled back: names are unique, and undoing DDL re-reads the whole schema
        return [_error(scratch, sql) for sql in statements]
    finally:
        scratch.close()


def _error(scratch: sqlite3.Connection, sql: str | None) -> str:
    if not sql:
        return ""
    try:
        scratch.execute(sql)
    except sqlite3.Error as exc:
        return str(exc)
    return ""


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
