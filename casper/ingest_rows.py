"""Rows of one ingest run: ingest's MessageRow / ReactionRow → the store's row tuples, and what
those rows touch (dirty chats, watermarks, each person's new StatRows for the stats).

Imports: casper.records, casper.stats, ingest.records. Split from `casper.pipeline` (the hot loop
lives here; the run's control flow there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import itemgetter

from casper.records import ME, StoredMessage
from casper.stats import LocalClock, StatRow, emoji_field
from ingest.records import Message, MessageRow, ReactionRow

UNKNOWN_SENDER = "unknown"


def to_stored(m: Message, handle_person: dict[int, str]) -> StoredMessage:
    sender = ME if m.is_from_me else handle_person.get(m.handle_rowid or -1, UNKNOWN_SENDER)
    return StoredMessage(
        rowid=m.rowid,
        guid=m.guid,
        chat_id=m.chat_rowid or 0,
        sender=sender,
        ts=m.ts,
        text=m.text,
        kind=m.kind,
        edited=m.edited,
        reply_to=m.reply_to_guid,
        attachments=tuple((a.name, a.mime) for a in m.attachments),
        event=m.event,
    )


_TS = itemgetter(1)  # of a StatRow


def store_rows(
    msgs: list[MessageRow],
    handle_person: dict[int, str],
    clock: LocalClock,
    acc: Accumulator,
    *,
    collect: bool = True,
) -> tuple[list[tuple], list[tuple]]:
    """Message tuples → store rows (FULL_COLS, PLAIN_COLS), noting what they touch in `acc`
    (without `collect`, not their StatRows: the caller reads those back from the store)."""
    full: list[tuple] = []
    plain: list[tuple] = []
    add_full, add_plain, person = full.append, plain.append, handle_person.get
    max_date, max_edit = acc.max_date, acc.max_edit
    new = acc.new
    owner, timelines, authored = new.owner.get, new.timelines, new.authored
    for t, day, hour in zip(msgs, *clock.day_hours([t.ts for t in msgs]), strict=True):
        ts, text, chat = t.ts, t.text, t.chat_rowid or 0
        sender = ME if t.is_from_me else person(t.handle_rowid or -1, UNKNOWN_SENDER)
        if ts > max_date:
            max_date = ts
        emoji = None if text.isascii() else emoji_field(text)
        if t.kind == "text" and not (
            t.edited or t.reply_to_guid or t.attachments or t.event or emoji
        ):
            add_plain((t.rowid, t.guid, chat, sender, ts, text, day, hour))
        else:
            atts = t.attachments
            add_full(
                (t.rowid, t.guid, chat, sender, ts, text, t.kind, int(t.edited),
                 t.reply_to_guid, json.dumps([(a.name, a.mime) for a in atts]) if atts else None,
                 t.event, day, hour, emoji)
            )  # fmt: skip
            max_edit = max(max_edit, t.date_edited or 0.0, t.date_retracted or 0.0)
            if t.kind == "system":
                continue  # not counted in stats
        if not collect:
            continue
        row = (sender, ts, day, hour, emoji)  # a StatRow, filed under who it counts for
        if sender is not ME:
            rows = authored.get(sender)
            if rows is None:
                rows = authored[sender] = []
            rows.append(row)
        pid = owner(chat)
        if pid is not None:
            timelines[pid].append(row)
    acc.max_date, acc.max_edit = max_date, max_edit
    acc.dirty.update({t.chat_rowid or 0 for t in msgs})
    return full, plain


def reaction_rows(reacts: list[ReactionRow], handle_person: dict[int, str]) -> list[tuple]:
    """ReactionRows → (guid, target_guid, sender, kind, emoji, ts) store rows."""
    person = handle_person.get
    return [
        (r.guid, r.target_guid,
         ME if r.is_from_me else person(r.handle_rowid or -1, UNKNOWN_SENDER),
         r.kind, r.emoji, r.ts)
        for r in reacts
    ]  # fmt: skip


class PlainStats:
    """StatRows of the bulk read's rows, filed in ROWID order as `store_rows` files them.

    `local` is the store's per-row SQL function for plain rows: it returns the local
    YYYYMMDD * 100 + hour and notes the row's StatRow; `add_stored` notes the store rows
    `store_rows` built for the rest of the page; `file_page` files both, merged by ROWID
    (ties in time keep ROWID order, as the row reader and the store's `ORDER BY ts, rowid`).
    """

    def __init__(self, clock: LocalClock, new: NewRows) -> None:
        self.key, self.new = clock.key, new
        self.page: list[tuple[int, str, int, StatRow]] = []
        self._plain_only = True
        self._emoji: tuple[int, str | None] = (-1, None)  # (rowid, emoji) noted last

    def local(self, rowid: int, ts: float, sender: str, chat: int, text: str) -> int:
        k = self.key(ts)
        emoji = None if text.isascii() else emoji_field(text)
        if emoji is not None:
            self._emoji = (rowid, emoji)
        self.page.append((rowid, sender, chat, (sender, ts, k // 100, k % 100, emoji)))
        return k

    def emoji(self, rowid: int, text: str) -> str | None:
        """The emoji field of the row `local` just saw (not searched for twice)."""
        noted_rowid, emoji = self._emoji
        if noted_rowid == rowid:
            return emoji
        return None if text.isascii() else emoji_field(text)

    def add_stored(self, full: list[tuple], plain: list[tuple]) -> None:
        """Rows laid out as FULL_COLS / PLAIN_COLS (system rows are not counted)."""
        add = self.page.append
        for r in full:
            if r[6] != "system":
                add((r[0], r[3], r[2], (r[3], r[4], r[11], r[12], r[13])))
        for r in plain:
            add((r[0], r[3], r[2], (r[3], r[4], r[6], r[7], None)))
        self._plain_only = self._plain_only and not (full or plain)

    def file_page(self) -> None:
        page = self.page
        if not self._plain_only:
            page.sort(key=_FIRST)  # two runs in ROWID order: one merge
        owner, timelines, authored = self.new.owner.get, self.new.timelines, self.new.authored
        for _, sender, chat, row in page:
            if sender != ME:
                rows = authored.get(sender)
                if rows is None:
                    rows = authored[sender] = []
                rows.append(row)
            pid = owner(chat)
            if pid is not None:
                timelines[pid].append(row)
        page.clear()
        self._plain_only = True


_FIRST = itemgetter(0)


@dataclass(slots=True)
class Accumulator:
    """What the rows of one run touched, and the new watermarks."""

    max_rowid: int
    max_date: float
    max_edit: float
    dirty: set[int] = field(default_factory=set)
    new: NewRows = field(default_factory=lambda: NewRows({}))


@dataclass(slots=True)
class NewRows:
    """The countable messages a run adds, as StatRows per person (stats fold them in)."""

    owner: dict[int, str]  # 1:1 chat id → the person on the other side
    timelines: dict[str, list[StatRow]] = field(init=False)  # their 1:1 chats (in_order sorts)
    authored: dict[str, list[StatRow]] = field(default_factory=dict)  # what they wrote anywhere

    def __post_init__(self) -> None:
        self.timelines = {pid: [] for pid in self.owner.values()}

    def in_order(self) -> NewRows:
        """Timelines sorted by time: rows come in ROWID order, so ties stay as the store's
        `ORDER BY ts, rowid` has them."""
        for rows in self.timelines.values():
            rows.sort(key=_TS)
        return self
