"""Rows of one ingest run: ingest's MessageRow / ReactionRow → the store's row tuples, and what
those rows touch (dirty chats, watermarks, each person's new StatRows for the stats).

Imports: casper.records, casper.stats, ingest.records, ingest.columns. Split from
`casper.indexer.pipeline` (the hot loop lives here; the run's control flow there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import itemgetter

from casper.records import ME, StoredMessage
from casper.stats import LocalClock, StatRow, StatsState, emoji_field
from ingest.columns import NAMES as CARRIED
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
        carried=tuple(zip(CARRIED, m.carried, strict=True)),
    )


_TS = itemgetter(1)  # of a StatRow


def store_rows(
    msgs: list[MessageRow], handle_person: dict[int, str], clock: LocalClock, acc: Accumulator
) -> tuple[list[tuple], list[tuple]]:
    """Message tuples → store rows (FULL_COLS, PLAIN_COLS), noting what they touch in `acc`."""
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
            add_plain((t.rowid, t.guid, chat, sender, ts, text, day, hour, *t.carried))
        else:
            atts = t.attachments
            add_full(
                (t.rowid, t.guid, chat, sender, ts, text, t.kind, int(t.edited),
                 t.reply_to_guid, json.dumps([(a.name, a.mime) for a in atts]) if atts else None,
                 t.event, day, hour, emoji, *t.carried)
            )  # fmt: skip
            max_edit = max(max_edit, t.date_edited or 0.0, t.date_retracted or 0.0)
            if t.kind == "system":
                continue  # not counted in stats
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
    # Read by worker processes, the rows stay there: each person's stats state over their new
    # rows instead, with (ts, from me) of its first dated 1:1 message (`fold`); None otherwise
    states: dict[str, tuple[StatsState, tuple[float, bool] | None]] | None = None
    reread: set[str] = field(default_factory=set)  # their ranges interleave in time: re-read

    def __post_init__(self) -> None:
        self.timelines = {pid: [] for pid in self.owner.values()}

    def fold(self, pid: str, state: StatsState, head: tuple[float, bool] | None) -> None:
        """Take one ROWID range's state of a person (ranges come in ROWID order)."""
        if self.states is None:
            self.states = {}
        if pid in self.reread:
            return
        have = self.states.get(pid)
        if have is None:
            self.states[pid] = (state, head)
        elif not have[0].extend(state, head):
            self.reread.add(pid)
            del self.states[pid]
        elif have[1] is None:
            self.states[pid] = (have[0], head)

    def touched(self) -> set[str]:
        """Everyone with a new countable message (in their 1:1 chats, or written by them)."""
        if self.states is not None:
            return set(self.states) | self.reread
        return {pid for pid, rows in self.timelines.items() if rows} | self.authored.keys()

    def in_order(self) -> NewRows:
        """Timelines sorted by time: rows come in ROWID order, so ties stay as the store's
        `ORDER BY ts, rowid` has them."""
        for rows in self.timelines.values():
            rows.sort(key=_TS)
        return self
