"""`casper doctor`'s informational lines for Apple databases holding schema entries this SQLite
cannot parse (triggers in Apple-only syntax, since macOS Sequoia): what was skipped to read them,
and that nothing was written. No line when nothing was skipped, or when the file does not open
(the chat.db and contacts checks say why).

Imports: stdlib, ingest (connect, contacts, apple_schema), casper.config, casper.app.doctor_check.
"""

from __future__ import annotations

from pathlib import Path

from casper.app.doctor_check import Check, check
from casper.app.documents import DoctorCounts
from casper.config import Config
from ingest.apple_schema import Skipped, skipped_entries
from ingest.connect import open_chat_db, open_contacts_db
from ingest.contacts import source_files
from ingest.errors import IngestError


def schema_checks(cfg: Config, counts: DoctorCounts) -> list[Check]:
    """One "chat.db schema" and one "AddressBook schema" line when entries were skipped; the
    entries go to counts["skipped_schema"] ({file: [{kind, name, reason}]}) for --json."""
    found: dict[Path, tuple[Skipped, ...]] = {}
    try:
        conn = open_chat_db(cfg.chat_db, busy_timeout_s=1.0)
    except IngestError:
        pass
    else:
        try:
            found[cfg.chat_db] = skipped_entries(conn)
        finally:
            conn.close()
    folder = cfg.contacts.expanduser() if cfg.contacts is not None else None
    books = source_files(folder) if folder is not None else []
    for book in books:
        book_conn = open_contacts_db(book)
        if book_conn is not None:
            try:
                found[book] = skipped_entries(book_conn)
            finally:
                book_conn.close()
    found = {path: skipped for path, skipped in found.items() if skipped}
    if not found:
        return []
    counts["skipped_schema"] = {
        str(path): [{"kind": s.kind, "name": s.name, "reason": s.reason} for s in skipped]
        for path, skipped in found.items()
    }
    checks = []
    if cfg.chat_db in found:
        checks.append(_line("chat.db schema", found.pop(cfg.chat_db)))
    for path, skipped in found.items():
        where = path.relative_to(folder) if folder is not None and folder in path.parents else path
        checks.append(_line("AddressBook schema", skipped, f"{where}: "))
    return checks


def _line(name: str, skipped: tuple[Skipped, ...], prefix: str = "") -> Check:
    triggers = [s for s in skipped if s.kind == "trigger"]
    others = [s for s in skipped if s.kind != "trigger"]
    parts = []
    if triggers:
        parts.append(f"{_count(len(triggers), 'trigger')} in Apple-only syntax")
    if others:
        kinds = sorted({s.kind for s in others})
        parts.append(f"{_count(len(others), '/'.join(kinds))} this SQLite cannot parse")
    names = ", ".join(s.name for s in skipped)
    detail = (
        f"{prefix}{' and '.join(parts)} skipped ({names}); every table read; "
        "read-only, nothing written"
    )
    return check(name, "ok", detail)


def _count(n: int, noun: str) -> str:
    plural = {"index": "indexes"}.get(noun, f"{noun}s")
    return f"{n} {noun if n == 1 else plural}"
