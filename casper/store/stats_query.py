"""Stats read paths shared by the CLI and the agent's tools: precomputed or for a date range.

Imports: casper.store, casper.stats.
"""

from __future__ import annotations

from collections.abc import Collection
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
    """The people with the most messages exchanged in a range (for "who…most" questions):
    both sides of our 1:1 chats plus what they wrote anywhere else (`exchanged`), which is
    `stats NAME`'s sent + received. Same crediting as `message_volume`."""
    ranked = ((p, direct + groups) for p, (direct, groups) in exchanged(store, start, end).items())
    return sorted(ranked, key=lambda kv: (-kv[1], kv[0]))[:top_n]


def exchanged(store: Store, start: float | None, end: float | None) -> dict[str, tuple[int, int]]:
    """person id → (one-to-one, in groups) in a range: the messages of our 1:1 chats, both
    sides, and theirs in every other chat (groups, ones they have left too). My messages in a
    group are no one's. Counted by SQLite per (sender, chat), not message by message."""
    owner = {c.id: c.members[0] for c in store.chats() if not c.is_group and len(c.members) == 1}
    counts: dict[str, tuple[int, int]] = {}
    for sender, chat_id, n in store.message_counts(start, end):
        person = sender if sender != ME else owner.get(chat_id)
        if person is None:
            continue
        direct, groups = counts.get(person, (0, 0))
        if owner.get(chat_id) == person:
            counts[person] = (direct + n, groups)
        else:
            counts[person] = (direct, groups + n)
    return counts


def _credited(store: Store, start: float | None, end: float | None) -> list[tuple[str, float]]:
    """(person, ts) for every countable message in a range, my 1:1 messages credited to them."""
    owner = {c.id: c.members[0] for c in store.chats() if not c.is_group and len(c.members) == 1}
    lines = [Line(s, ts, c) for s, c, ts, _kind in store.activity(start, end)]
    return attribute_to_people(lines, owner)


def chat_split(
    store: Store, person_id: str, start: float | None = None, end: float | None = None
) -> ChatSplit:
    """Countable messages with one person in a range: in our 1:1 chats, and in the groups we
    share — the groups they are in or wrote in (one they left still holds what they wrote
    there). Theirs in groups is everything they wrote outside our 1:1 chats, so their
    one-to-one and group messages add up to `stats NAME`'s received."""
    one = store.one_to_one_chat_ids(person_id)
    groups = shared_groups(store, person_id).get(person_id, set())
    bounds = [b for b in (start, end) if b is not None]
    where = " AND ts >= ?" * (start is not None) + " AND ts < ?" * (end is not None)

    def count(sender: str, chat_ids: Collection[int], *, inside: bool = True) -> int:
        if inside and not chat_ids:
            return 0
        holes = ",".join("?" * len(chat_ids))
        pick = f" AND chat_id {'IN' if inside else 'NOT IN'} ({holes})" if chat_ids else ""
        sql = f"SELECT count(*) FROM messages WHERE kind != 'system' AND sender = ?{pick}{where}"
        return int(store.conn.execute(sql, [sender, *chat_ids, *bounds]).fetchone()[0])

    return {
        "sent_one_to_one": count(ME, one),
        "received_one_to_one": count(person_id, one),
        "sent_in_groups": count(ME, sorted(groups)),
        "received_in_groups": count(person_id, one, inside=False),
    }


def shared_groups(store: Store, person_id: str | None = None) -> dict[str, set[int]]:
    """person id → the group chats we share: the ones they are in now, and the ones they
    wrote in (a member who left is gone from the chat's list, not from its messages); one
    person's (an index lookup) or everyone's (one walk of the sender index)."""
    out: dict[str, set[int]] = {}
    groups = {c.id: c for c in store.chats() if c.is_group}
    for chat in groups.values():
        for member in chat.members:
            if person_id is None or member == person_id:
                out.setdefault(member, set()).add(chat.id)
    who, args = ("sender = ?", (person_id,)) if person_id else ("sender != ?", (ME,))
    for sender, chat_id in store.conn.execute(
        f"SELECT DISTINCT sender, chat_id FROM messages WHERE {who} AND kind != 'system'", args
    ):
        if chat_id in groups:
            out.setdefault(sender, set()).add(chat_id)
    return out


def sent_in_groups(store: Store) -> dict[str, int]:
    """person id → the owner's countable messages in the group chats we share (`shared_groups`:
    one GROUP BY over the sender index, then summed per person)."""
    by_chat = dict(
        store.conn.execute(
            "SELECT chat_id, count(*) FROM messages WHERE sender = ? AND kind != 'system' "
            "GROUP BY chat_id",
            (ME,),
        ).fetchall()
    )
    sums = {
        pid: sum(by_chat.get(c, 0) for c in chats) for pid, chats in shared_groups(store).items()
    }
    return {pid: n for pid, n in sums.items() if n}
