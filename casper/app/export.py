"""`casper export`: the messages of a person, a chat or everything, as rows a file can hold —
JSON Lines, CSV or a Markdown transcript (casper.app.export_formats).

Which messages: the ones `stats` counts for the same scope and days (a person: our 1:1 chats,
both sides, and what they wrote in groups; a chat: all of it; everything: every chat), system
events left out, so an export has exactly as many messages as `stats` says. Order: chat, then
time, then rowid — the same history exports byte-identical. Text passes through the review's
`Privacy` (casper.app.review), the one place a privacy mode can hide it.

Imports: store, records, dates, app.stats_scope, app.review.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING

from casper.app.review import Privacy
from casper.app.stats_scope import Scope
from casper.dates.zones import iso

if TYPE_CHECKING:
    from casper.records import StoredMessage
    from casper.store.db import Store


@dataclass(frozen=True, slots=True)
class ExportRow:
    id: int  # Casper's message id (chat.db ROWID): `casper show ID`
    guid: str
    chat_id: int
    chat: str
    sender_id: str  # person id, or "me"
    sender: str  # display name, or "me"
    time: str | None  # local time with its UTC offset
    text: str | None  # None: hidden by the privacy in force
    kind: str  # text | attachment
    edited: bool
    reply_to: str | None  # the guid of the message this one answers
    reactions: tuple[tuple[str, str], ...]  # (who, reaction) as they stand now
    attachments: tuple[str, ...]  # file names


def scope_rowids(store: Store, scope: Scope, start: float | None, end: float | None) -> list[int]:
    """The rowids of the messages `stats` counts for `scope` in [start, end)."""
    where, args = "kind != 'system'", []
    if scope.person is not None:
        chats = store.one_to_one_chat_ids(scope.person.id)
        holes = ",".join("?" * len(chats))
        where += f" AND (sender = ? OR chat_id IN ({holes}))"
        args += [scope.person.id, *chats]
    elif scope.chat is not None:
        where += " AND chat_id = ?"
        args.append(scope.chat.id)
    if start is not None:
        where += " AND ts >= ?"
        args.append(start)
    if end is not None:
        where += " AND ts < ?"
        args.append(end)
    rows = store.conn.execute(
        f"SELECT rowid FROM messages WHERE {where} ORDER BY chat_id, ts, rowid", args
    )
    return [r[0] for r in rows]


def export_rows(
    store: Store, rowids: list[int], tz: tzinfo, privacy: Privacy, batch: int = 2000
) -> list[ExportRow]:
    """The rows of those messages, in the order given, reactions folded, names resolved."""
    names = store.names()
    chats = {c.id: c.name for c in store.chats()}
    rows: list[ExportRow] = []
    for i in range(0, len(rowids), batch):
        part = rowids[i : i + batch]
        found = {m.rowid: m for m in store.messages_by_rowids(part)}
        rows += [_row(found[r], names, chats, tz, privacy) for r in part if r in found]
    return rows


def _row(
    m: StoredMessage, names: dict[str, str], chats: dict[int, str], tz: tzinfo, privacy: Privacy
) -> ExportRow:
    return ExportRow(
        id=m.rowid,
        guid=m.guid,
        chat_id=m.chat_id,
        chat=chats.get(m.chat_id, str(m.chat_id)),
        sender_id=m.sender,
        sender=names.get(m.sender, m.sender),
        time=iso(m.ts, tz),
        text=privacy.text(m.text),
        kind=m.kind,
        edited=m.edited,
        reply_to=m.reply_to,
        reactions=tuple((names.get(who, who), label) for who, label in m.reactions),
        attachments=tuple(name for name, _mime in m.attachments),
    )
