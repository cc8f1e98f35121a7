"""Is chat.db still the history the store was read from?

A ROWID is not a message's identity: an older copy of chat.db put back (a restore, a Mac
migration) hands the ROWIDs of the messages it lacks to the next messages that arrive, and
Messages in iCloud re-downloading the history numbers every row anew. The guid is the identity.
So every run checks a few remembered (ROWID, guid) pairs, the anchors, beside the watermarks
(`suspect`, a few index lookups); only when something is off are the store's rows compared with
chat.db's by ROWID and guid (`compare`, one ordered walk of each). Rows that are simply gone are
deleted as before; a ROWID that holds another message, a message found under another ROWID, or
a row below the watermark the store should hold and does not, means the history was rewritten:
the run reads it again whole and keeps what did not change (casper.indexer.reconcile).

Imports: sqlite3, ingest, casper.store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import ingest
from ingest.messages import read_rowids
from ingest.records import MessageRow, ReactionRow
from ingest.schema import Capabilities

if TYPE_CHECKING:
    import sqlite3

    from casper.store.db import Store

# how many of a page's rows are kept out of the store (casper.indexer.exclude.counter)
KeptOut = Callable[[Sequence[MessageRow], Sequence[ReactionRow]], int]

ANCHORS = "anchors"  # store meta: JSON [[rowid, guid], ...] of stored messages
ANCHOR_COUNT = 8
_PAGE = 20_000  # rows per fetch of the ordered walks
_PART = 500  # values per IN (...) list


@dataclass(frozen=True, slots=True)
class Comparison:
    """The store against chat.db. `rewritten` says why the history must be read again (None
    when it need not be); otherwise `vanished` are stored ROWIDs chat.db no longer holds (plain
    deletions) and `vanished_reactions` the guids of stored tapbacks it no longer holds."""

    rewritten: str | None = None
    vanished: list[int] = field(default_factory=list)
    vanished_reactions: list[str] = field(default_factory=list)


def suspect(
    store: Store, conn: sqlite3.Connection, state: ingest.SourceState, watermark: int
) -> str | None:
    """Why the store may no longer match chat.db below the watermark, or None. Cheap: the
    anchors looked up by ROWID, and a count of the rows after the watermark when the counts
    moved."""
    if not watermark:
        return None
    if state.max_rowid < watermark:
        return "chat.db's newest ROWID went down"
    moved = moved_anchors(store, conn)
    if moved:
        return moved
    stored = int(store.meta_float("source_count"))
    if state.message_count == stored and state.max_rowid == watermark:
        return None
    after, _first = ingest.rows_after(conn, watermark)
    if state.message_count != stored + after:
        return "rows below the last one read were removed or added"
    return None


def moved_anchors(store: Store, conn: sqlite3.Connection) -> str | None:
    """None when every anchor is where it was; else what changed."""
    anchors = _anchors(store)
    if not anchors:
        return None
    marks = ",".join("?" * len(anchors))
    found = dict(
        conn.execute(f"SELECT ROWID, guid FROM message WHERE ROWID IN ({marks})", list(anchors))
    )
    for rowid, guid in anchors.items():
        if rowid not in found:
            return "a message read before is gone from chat.db"
        if found[rowid] != guid:
            return "a ROWID read before holds another message"
    return None


def save_anchors(store: Store) -> None:
    """Remember ANCHOR_COUNT stored (ROWID, guid) pairs, spread over the ROWIDs from the newest
    down (inside the run's transaction)."""
    low, high = store.conn.execute("SELECT min(rowid), max(rowid) FROM messages").fetchone()
    if high is None:
        store.delete_meta(ANCHORS)
        return
    picked: dict[int, str] = {}
    step = max((high - low) / (ANCHOR_COUNT - 1), 1.0)
    for i in range(ANCHOR_COUNT):
        row = store.conn.execute(
            "SELECT rowid, guid FROM messages WHERE rowid <= ? ORDER BY rowid DESC LIMIT 1",
            (int(high - i * step),),
        ).fetchone()
        if row is not None:
            picked[row[0]] = row[1]
    store.set_meta(ANCHORS, json.dumps(sorted(picked.items())))


def _anchors(store: Store) -> dict[int, str]:
    try:
        pairs = json.loads(store.get_meta(ANCHORS) or "[]")
        return {int(r): str(g) for r, g in pairs}
    except (ValueError, TypeError):
        return {}


def compare(
    store: Store,
    conn: sqlite3.Connection,
    caps: Capabilities,
    watermark: int,
    kept_out: KeptOut | None = None,
) -> Comparison:
    """The store's messages and chats against chat.db's, by ROWID and guid (see the module
    doc). One ordered walk of each message table; at a million rows about a second. Rows
    `kept_out` counts (the setting `exclude`) are never stored: not new, though unread."""
    chats = _chats_renumbered(store, conn)
    if chats:
        return Comparison(rewritten=chats)
    vanished: list[tuple[int, str]] = []
    unknown: list[tuple[int, str]] = []  # chat.db rows the store holds no message for
    for rowid, mine, theirs in _merge(store, conn, watermark):
        if mine is None:
            unknown.append((rowid, theirs or ""))
        elif theirs is None:
            vanished.append((rowid, mine))
        elif mine != theirs:  # one is enough: the history is read again (and counted) whole
            return Comparison(rewritten="a ROWID read before holds another message")
    if _present(conn, "SELECT guid FROM message", [g for _, g in vanished], first=True):
        return Comparison(rewritten="messages read before have new ROWIDs")
    reactions = {g for (g,) in store.conn.execute("SELECT guid FROM reactions")}
    unknown = [(r, g) for r, g in unknown if g not in reactions]
    missed = _would_store(conn, caps, [r for r, _ in unknown], kept_out)
    if missed:
        return Comparison(rewritten="rows below the last one read are new")
    gone_reactions = sorted(reactions - _present(conn, "SELECT guid FROM message", reactions))
    return Comparison(None, [r for r, _ in vanished], gone_reactions)


def _chats_renumbered(store: Store, conn: sqlite3.Connection) -> str | None:
    theirs = dict(conn.execute("SELECT ROWID, guid FROM chat"))
    for chat_id, guid in store.conn.execute("SELECT id, guid FROM chats WHERE id != 0"):
        if chat_id in theirs and theirs[chat_id] != guid:
            return "a chat's ROWID holds another chat"
    return None


def _merge(
    store: Store, conn: sqlite3.Connection, watermark: int
) -> Iterator[tuple[int, str | None, str | None]]:
    """(rowid, the store's guid, chat.db's guid) for every ROWID up to `watermark` either holds,
    in ROWID order (None where one side has no row)."""
    mine = _pages(store.conn, "SELECT rowid, guid FROM messages ORDER BY rowid")
    theirs = _pages(
        conn, "SELECT ROWID, guid FROM message WHERE ROWID <= ? ORDER BY ROWID", (watermark,)
    )
    a, b = next(mine, None), next(theirs, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            assert a is not None
            yield a[0], a[1], None
            a = next(mine, None)
        elif a is None or b[0] < a[0]:
            yield b[0], None, b[1]
            b = next(theirs, None)
        else:
            yield a[0], a[1], b[1]
            a, b = next(mine, None), next(theirs, None)


def _pages(
    conn: sqlite3.Connection, sql: str, params: Sequence[object] = ()
) -> Iterator[tuple[int, str]]:
    """The rows of `sql`, fetched a page at a time (no statement held between the pages'
    rows and the caller's work is short: both walks finish before the run goes on)."""
    cur = conn.execute(sql, params)
    while rows := cur.fetchmany(_PAGE):
        yield from rows


def _present(
    conn: sqlite3.Connection, select: str, guids: Sequence[str] | set[str], *, first: bool = False
) -> set[str]:
    """The guids of `guids` that `select … WHERE guid IN (…)` finds (with `first`, stop at the
    first part that finds any)."""
    wanted = list(guids)
    found: set[str] = set()
    for i in range(0, len(wanted), _PART):
        part = wanted[i : i + _PART]
        sql = f"{select} WHERE guid IN ({','.join('?' * len(part))})"
        found.update(g for (g,) in conn.execute(sql, part))
        if first and found:
            break
    return found


def _would_store(
    conn: sqlite3.Connection, caps: Capabilities, rowids: list[int], kept_out: KeptOut | None
) -> int:
    """How many of these chat.db rows a full read would store as a message or a tapback (the
    rest it skips too: poll votes, tapbacks without a target, rows in Recently Deleted, rows
    kept out)."""
    if not rowids:
        return 0
    messages, reactions = read_rowids(conn, caps, rowids)
    dropped = kept_out(messages, reactions) if kept_out is not None else 0
    return len(messages) + len(reactions) - dropped
