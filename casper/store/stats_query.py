"""Stats read paths shared by the CLI and the agent's tools: precomputed or for a date range.

Imports: casper.store, casper.stats.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import cast

from casper.records import ME
from casper.stats import (
    ChatSplit,
    Line,
    LocalClock,
    PersonStats,
    attribute_to_people,
    compute_stats,
    stats_from_rows,
    volume_by_period,
    zone_id,
)
from casper.store.db import Store


def person_stats(
    store: Store, person_id: str, tz: tzinfo, start: float | None = None, end: float | None = None
) -> PersonStats:
    """All-time figures come precomputed; a range is computed from the store, same definitions."""
    if start is None and end is None:
        cached = store.stats(person_id)
        if cached is not None:  # the JSON of a StatsState.result() (casper.indexer.stats_update)
            return cast("PersonStats", cached)
    chats = store.one_to_one_chat_ids(person_id)
    indexed_for = store.get_meta("local_tz")
    if indexed_for is None:  # not (re)indexed by this version: per-message fields may be unset
        timeline = [Line(s, ts, c, t) for s, c, ts, t in store.texts_for_person(chats, start, end)]
        authored = [Line(s, ts, c, t) for s, c, ts, t in store.sent_by(person_id, start, end)]
        return compute_stats(person_id, timeline, authored, tz)
    # the stored local day/hour hold for the zone the index was built in; others are derived
    same_zone = indexed_for == zone_id(tz)
    rows = store.stat_rows(person_id, chats, start, end, local=same_zone)
    return stats_from_rows(*rows, LocalClock(tz))


def message_volume(
    store: Store,
    tz: tzinfo,
    start: float | None,
    end: float | None,
    *,
    period: str = "month",
    person_id: str | None = None,
    top_n: int = 5,
) -> dict[str, list[tuple[str, int]]]:
    """Per period, the people I exchanged the most messages with (optionally one person)."""
    pairs = _credited(store, start, end)
    if person_id is not None:
        pairs = [(p, ts) for p, ts in pairs if p == person_id]
    pairs = [(p, ts) for p, ts in pairs if p != ME]
    return volume_by_period(pairs, period, tz, top_n)


def top_people(
    store: Store, tz: tzinfo, start: float | None, end: float | None, top_n: int = 5
) -> list[tuple[str, int]]:
    """The people with the most messages exchanged in a range (for "who…most" questions).

    Same crediting as `message_volume` (author; my 1:1 messages to the other side; my group
    messages to nobody), counted by SQLite per (sender, chat) instead of message by message.
    """
    owner = {c.id: c.members[0] for c in store.chats() if not c.is_group and len(c.members) == 1}
    counts: dict[str, int] = {}
    for sender, chat_id, n in store.message_counts(start, end):
        person = sender if sender != ME else owner.get(chat_id)
        if person is not None:
            counts[person] = counts.get(person, 0) + n
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]


def _credited(store: Store, start: float | None, end: float | None) -> list[tuple[str, float]]:
    """(person, ts) for every countable message in a range, my 1:1 messages credited to them."""
    owner = {c.id: c.members[0] for c in store.chats() if not c.is_group and len(c.members) == 1}
    lines = [Line(s, ts, c) for s, c, ts, _kind in store.activity(start, end)]
    return attribute_to_people(lines, owner)


def chat_split(
    store: Store, person_id: str, start: float | None = None, end: float | None = None
) -> ChatSplit:
    """Countable messages with one person, one-to-one and in shared groups, in a range."""
    chats = store.chats()
    one = [c.id for c in chats if not c.is_group and c.members == (person_id,)]
    groups = [c.id for c in chats if c.is_group and person_id in c.members]

    def count(chat_ids: list[int], sender: str) -> int:
        if not chat_ids:
            return 0
        where = " AND ts >= ?" * (start is not None) + " AND ts < ?" * (end is not None)
        bounds = [b for b in (start, end) if b is not None]
        sql = (
            "SELECT count(*) FROM messages WHERE kind != 'system' AND sender = ? AND chat_id IN "
            f"({','.join('?' * len(chat_ids))}){where}"
        )
        return int(store.conn.execute(sql, [sender, *chat_ids, *bounds]).fetchone()[0])

    return {
        "sent_one_to_one": count(one, ME),
        "received_one_to_one": count(one, person_id),
        "sent_in_groups": count(groups, ME),
        "received_in_groups": count(groups, person_id),
    }


def sent_in_groups(store: Store) -> dict[str, int]:
    """person id → the owner's countable messages in the group chats that person is in (one
    GROUP BY over the sender index, then summed per member)."""
    by_chat = dict(
        store.conn.execute(
            "SELECT chat_id, count(*) FROM messages WHERE sender = ? AND kind != 'system' "
            "GROUP BY chat_id",
            (ME,),
        ).fetchall()
    )
    out: dict[str, int] = {}
    for chat in store.chats():
        if chat.is_group and by_chat.get(chat.id):
            for member in chat.members:
                out[member] = out.get(member, 0) + by_chat[chat.id]
    return out
