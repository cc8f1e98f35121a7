"""Read-only connections to chat.db and AddressBook files, with failures mapped to IngestErrors."""

from __future__ import annotations

import functools
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar
from urllib.parse import quote

from ingest.apple_schema import (
    SchemaDamaged,
    check_tables_loaded,
    describe,
    is_unparsable_schema,
    skipped_entries,
)
from ingest.dates import apple_to_unix
from ingest.errors import (
    ChatDbBusy,
    ChatDbCorrupt,
    ChatDbMissing,
    ChatDbUnreadable,
    IngestError,
    NotAMessagesDb,
)

if TYPE_CHECKING:
    from ingest.schema import Capabilities

log = logging.getLogger(__name__)
# attached to the warnings (a `hint` the caller's log handler may print under them)
CONTACTS_HINT = (
    "pass `--contacts PATH` (the AddressBook folder or an .abcddb file), or `--no-contacts` to "
    "index without names on purpose; on a Mac the terminal needs Full Disk Access for ~/Library"
)

REQUIRED_TABLES = ("message", "handle", "chat")
P = ParamSpec("P")
R = TypeVar("R")
_BUSY_ATTEMPTS = 3
_BACKOFF_S = 0.05


@dataclass(frozen=True, slots=True)
class SourceState:
    """A cheap fingerprint of chat.db: if it equals the last run's, there is no new work."""

    max_rowid: int
    message_count: int
    max_deleted_rowid: int
    recoverable_count: int
    max_date: int


def ro_uri(path: Path) -> str:
    """`file:` URI opening `path` read-only; never immutable=1, which would skip the -wal file."""
    return f"file:{quote(str(Path(path).absolute()), safe='/')}?mode=ro"


def map_sqlite_error(exc: sqlite3.Error, path: Path | str = "chat.db") -> IngestError:
    """Translate one sqlite3 failure on `path` into the IngestError the user can act on."""
    text = str(exc).lower()
    name = getattr(exc, "sqlite_errorname", "") or ""
    if "locked" in text or name.startswith("SQLITE_BUSY"):
        return ChatDbBusy(f"{path} is locked by another process ({exc})")
    if "not a database" in text or name.startswith("SQLITE_NOTADB"):
        return NotAMessagesDb(f"{path} is not an SQLite database")
    if is_unparsable_schema(exc):
        # the open parsed the schema (or read around it): it changed since, mid-read (a macOS
        # update migrating chat.db); the next open reads it
        return ChatDbBusy(
            f"{path} changed its schema while it was read ({exc})",
            hint="Messages changed chat.db's schema (after a macOS update?): run it again",
        )
    if "malformed" in text or name.startswith("SQLITE_CORRUPT"):
        return ChatDbCorrupt(f"{path} is damaged ({exc})")
    if "disk i/o error" in text or name.startswith("SQLITE_IOERR"):
        return ChatDbCorrupt(f"{path} could not be read to the end ({exc})")
    if (
        "unable to open" in text
        or "authoriz" in text
        or name.startswith(("SQLITE_CANTOPEN", "SQLITE_AUTH", "SQLITE_PERM"))
    ):
        return ChatDbUnreadable(f"cannot open {path}: permission denied ({exc})")
    return ChatDbUnreadable(f"cannot read {path} ({exc})")


def reads_chat_db(read: Callable[P, R]) -> Callable[P, R]:
    """A reader of chat.db: an SQLite failure inside it is the IngestError the user can act on
    (damaged, busy, …), as one at open is, never an "unexpected" error."""

    @functools.wraps(read)
    def mapped(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return read(*args, **kwargs)
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc) from exc

    return mapped


def _check_file(path: Path) -> None:
    """Fail early, with a precise error, on what stat() alone can tell."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ChatDbMissing(f"{path} does not exist") from None
    except PermissionError as exc:
        # macOS answers EPERM even to stat() inside ~/Library/Messages without Full Disk Access.
        raise ChatDbUnreadable(f"cannot access {path}: {exc.strerror}") from None
    except OSError as exc:
        raise ChatDbUnreadable(f"cannot access {path}: {exc}") from None
    if path.is_dir():
        raise NotAMessagesDb(f"{path} is a directory, not a chat.db file")
    if st.st_size == 0:
        raise NotAMessagesDb(f"{path} is empty (0 bytes), not a Messages database")


def _connect(path: Path, timeout_s: float, *, skip_unparsable: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(ro_uri(path), uri=True, timeout=timeout_s, isolation_level=None)
    conn.execute("PRAGMA query_only=1")
    if skip_unparsable:
        # load every schema entry this SQLite parses, skip the rest (ingest.apple_schema);
        # the connection stays read-only: mode=ro, query_only
        conn.execute("PRAGMA writable_schema=ON")
    return conn


def _open_checked(
    path: Path, timeout_s: float, probe: Callable[[sqlite3.Connection], None]
) -> sqlite3.Connection:
    """Connect and `probe`; when the schema holds entries this SQLite cannot parse (Apple-only
    syntax), connect again skipping them, as long as every table still loads. The connection
    is closed on any failure."""
    conn = _connect(path, timeout_s)
    try:
        probe(conn)
        return conn
    except sqlite3.DatabaseError as exc:
        conn.close()
        if not is_unparsable_schema(exc):
            raise
        first = exc
    except BaseException:
        conn.close()
        raise
    conn = _connect(path, timeout_s, skip_unparsable=True)
    try:
        check_tables_loaded(conn)
        probe(conn)
    except SchemaDamaged as exc:
        conn.close()
        raise ChatDbCorrupt(f"{path} is damaged: {exc}") from first
    except BaseException:
        conn.close()
        raise
    if log.isEnabledFor(logging.DEBUG):  # naming them parses each entry again: a few ms
        log.debug("%s: skipped %s, which this SQLite cannot parse", path.name,
                  describe(skipped_entries(conn)))  # fmt: skip
    return conn


def _probe(conn: sqlite3.Connection, path: Path) -> None:
    """Touch the schema and the message b-tree: the first real read is where FDA errors show."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [t for t in REQUIRED_TABLES if t not in names]
    if missing:
        raise NotAMessagesDb(
            f"{path} is an SQLite database but not a Messages one (no {', '.join(missing)} table)"
        )
    conn.execute("SELECT MAX(ROWID) FROM message").fetchone()
    conn.execute("SELECT ROWID FROM message ORDER BY ROWID LIMIT 1").fetchone()


def open_chat_db(path: Path, busy_timeout_s: float = 5.0) -> sqlite3.Connection:
    """Open chat.db read-only and check that it is a readable Messages database."""
    path = Path(path).expanduser()
    _check_file(path)
    per_try = max(busy_timeout_s / _BUSY_ATTEMPTS, 0.001)
    last: IngestError | None = None
    for attempt in range(_BUSY_ATTEMPTS):
        try:
            conn = _open_checked(path, per_try, lambda c: _probe(c, path))
        except sqlite3.Error as exc:
            last = map_sqlite_error(exc, path)
            if not isinstance(last, ChatDbBusy):
                raise last from exc
            if attempt + 1 < _BUSY_ATTEMPTS:
                time.sleep(_BACKOFF_S * 2**attempt)
            continue
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        return conn
    assert last is not None
    raise last


def _scalar(conn: sqlite3.Connection, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


@reads_chat_db
def snapshot_state(conn: sqlite3.Connection, caps: Capabilities) -> SourceState:
    """Fingerprint chat.db with index-backed queries only (max ROWIDs, max date, small counts)."""
    # COUNT(*) walks SQLite's smallest covering index (a few ms at 200k rows); it is the only
    # signal that catches a hard delete when deleted_messages is absent.
    deleted = (
        _scalar(conn, "SELECT MAX(ROWID) FROM deleted_messages")
        if caps.has_table("deleted_messages")
        else 0
    )
    recoverable = (
        _scalar(conn, "SELECT COUNT(*) FROM chat_recoverable_message_join")
        if caps.has_table("chat_recoverable_message_join")
        else 0
    )
    return SourceState(
        max_rowid=_scalar(conn, "SELECT MAX(ROWID) FROM message"),
        message_count=_scalar(conn, "SELECT COUNT(*) FROM message"),
        max_deleted_rowid=deleted,
        recoverable_count=recoverable,
        max_date=_scalar(conn, "SELECT MAX(date) FROM message"),
    )


@reads_chat_db
def rows_after(conn: sqlite3.Connection, rowid: int) -> tuple[int, float | None]:
    """How many message rows come after `rowid` (a reader's watermark), and the Unix time of
    the earliest of them (None when there are none or none is dated): a walk of that ROWID
    range only."""
    count, first = conn.execute(
        "SELECT COUNT(*), MIN(NULLIF(date, 0)) FROM message WHERE ROWID > ?", (rowid,)
    ).fetchone()
    return int(count or 0), apple_to_unix(first)


def _probe_contacts(conn: sqlite3.Connection) -> None:
    conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()  # parses the schema


def open_contacts_db(path: Path, busy_timeout_s: float = 2.0) -> sqlite3.Connection | None:
    """Open one AddressBook .abcddb read-only; None (with a warning) when it can't be read."""
    path = Path(path).expanduser()
    try:
        if not path.is_file() or path.stat().st_size == 0:
            log.warning(
                "contacts: %s is missing or empty; running without its names",
                path,
                extra={"hint": CONTACTS_HINT},
            )
            return None
        conn = _open_checked(path, busy_timeout_s, _probe_contacts)
    except (OSError, sqlite3.Error, IngestError) as exc:
        log.warning(
            "contacts: cannot read %s (%s); running without its names",
            path,
            exc,
            extra={"hint": CONTACTS_HINT},
        )
        return None
    return conn
