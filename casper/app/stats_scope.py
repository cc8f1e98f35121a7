"""What `stats` is about (a person, a chat or group, or the owner overall) and its document:
the figures and the series of casper.app.stats_series, read from the store for a range.

A person's figures are `stats`' own (casper.store.stats_query.person_stats, precomputed for
all time); their series come from the same rows, so both agree. A chat counts every message in
it; the owner overall counts every message in every chat. Imports: store, stats, dates, documents.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING

from casper.app.documents import stats_json
from casper.app.stats_series import scope_stats, series
from casper.dates.ranges import days_to_utc
from casper.errors import AmbiguousChat, AmbiguousPerson, CasperError, PersonNotFound
from casper.records import ME, Person
from casper.stats import LocalClock, StatRow, zone_id
from casper.store.stats_query import person_stats

if TYPE_CHECKING:
    from casper.app.documents import Days, StatsDoc, StatsScope
    from casper.app.stats_series import Series
    from casper.records import ChatInfo
    from casper.stats import PersonStats
    from casper.store.db import Store

OWNER_WORDS = ("me", "myself")  # `stats me`: the owner overall, never a contact


@dataclass(frozen=True, slots=True)
class Scope:
    kind: str  # person | chat | me
    person: Person | None = None
    chat: ChatInfo | None = None


def resolve_scope(store: Store, who: str | None, chat: str | None) -> Scope:
    """`stats NAME` → a person or a group chat of that name; `--chat` → a chat by id or name;
    nothing or "me" → the owner overall.

    An exact name (a person's, or the label `casper chats` prints) wins over a partial one; a
    name that fits several lists them all, people and chats alike."""
    if chat is not None:
        return Scope("chat", chat=store.resolve_chat(chat))
    if who is None or who.strip().lower() in OWNER_WORDS:
        return Scope("me")
    exact, partial = store.people_matching(who)
    labelled = [c for c in store.chats_labelled(who) if _group(c)]
    if exact and labelled:
        raise _person_or_chat(who, exact, labelled)
    for people in (exact, [] if labelled else partial):
        if len(people) > 1:
            raise AmbiguousPerson(who, [(p.id, p.name) for p in people])
        if people:
            return Scope("person", person=people[0])
    groups = labelled or [c for c in store.find_chats(who) if _group(c)]
    if len(groups) > 1:
        raise AmbiguousChat(who, [(c.id, c.name) for c in groups])
    if groups:
        return Scope("chat", chat=groups[0])
    raise PersonNotFound(
        f"no contact or group chat matches '{who}'",
        hint="`casper contacts` and `casper chats` list them; --chat ID picks a chat by id",
    )


def _group(chat: ChatInfo) -> bool:
    """A chat `stats NAME` may open by its name: a group (a 1:1 chat is its person's)."""
    return chat.is_group or not chat.members


def _person_or_chat(who: str, people: list[Person], chats: list[ChatInfo]) -> CasperError:
    listed = [f"{p.name} ({p.id})" for p in people] + [f"{c.name} (chat {c.id})" for c in chats]
    return CasperError(
        f"'{who}' matches {len(listed)} people and chats: {', '.join(listed)}",
        hint=f"pass the person's id, or --chat {chats[0].id} for the chat",
    )


def scope_rows(
    store: Store, scope: Scope, tz: tzinfo, start: float | None, end: float | None
) -> tuple[list[StatRow], list[list[StatRow]]]:
    """(counted, timelines) of a scope in a range: what its figures count, and each chat's
    messages in time order (where starts and replies are read)."""
    local = store.get_meta("local_tz") == zone_id(tz)  # stored day/hour hold for that zone
    if scope.kind == "person":
        assert scope.person is not None
        chats = store.one_to_one_chat_ids(scope.person.id)
        timeline, authored = store.stat_rows(scope.person.id, chats, start, end, local=local)
        return [r for r in timeline if r[0] == ME] + authored, [timeline]
    ids = [scope.chat.id] if scope.chat is not None else None
    timelines: dict[int, list[StatRow]] = {}
    for chat_id, row in store.chat_stat_rows(ids, start, end, local=local):
        timelines.setdefault(chat_id, []).append(row)
    return [r for rows in timelines.values() for r in rows], list(timelines.values())


def drawn_days(
    store: Store, tz: tzinfo, span: tuple[date | None, date | None]
) -> tuple[date | None, date | None]:
    """The days a chart over time runs: from --since and to --until, within the days the
    history holds (no bars for days before it began or after its last message); None where
    the range is open (the scope's own first or last message)."""
    first, last = store.coverage()
    if first is None or last is None:
        return None, None
    held = datetime.fromtimestamp(first, tz).date(), datetime.fromtimestamp(last, tz).date()
    since = max(span[0], held[0]) if span[0] else None
    until = min(span[1], held[1]) if span[1] else None
    return since, until


def today_for(tz: tzinfo, last: date | None, now: datetime | None = None) -> int:
    """The local day a current streak must reach: today, or the range's last day before it."""
    day = (now or datetime.now(tz)).astimezone(tz).date()
    if last is not None and last < day:
        day = last
    return day.year * 10000 + day.month * 100 + day.day


def stats_document(
    store: Store,
    scope: Scope,
    tz: tzinfo,
    span: tuple[date | None, date | None],
    *,
    period: str | None = None,
    now: datetime | None = None,
) -> StatsDoc:
    """`stats --json` of a scope for the local days `span` (inclusive; None: open)."""
    start, end = days_to_utc(*span, tz)
    counted, timelines = scope_rows(store, scope, tz, start, end)
    clock = LocalClock(tz)
    figures: PersonStats
    if scope.person is not None:
        figures = person_stats(store, scope.person.id, tz, start, end)
    else:
        figures = scope_stats(counted, timelines, clock)
    drawn: Series = series(counted, timelines, clock, today=today_for(tz, span[1], now),
                           period=period, bounds=drawn_days(store, tz, span),
                           person=scope.person.id if scope.person else None)  # fmt: skip
    days: Days = {"since": span[0].isoformat() if span[0] else None,
                  "until": span[1].isoformat() if span[1] else None}  # fmt: skip
    names = store.names()
    mentioned = {str(s) for s, _n in drawn["starters"]["by_sender"]}
    mentioned |= {g["back"] for g in drawn["gaps"]["longest"]}
    shown = {pid: names.get(pid, pid) for pid in sorted(mentioned)}
    head: StatsScope
    if scope.kind == "person":
        assert scope.person is not None
        head = {"kind": "person", "id": scope.person.id, "name": scope.person.name, "members": 1}
    elif scope.chat is not None:
        head = {"kind": "chat", "id": str(scope.chat.id), "name": scope.chat.name,
                "members": len(store.chat_people(scope.chat))}  # fmt: skip
    else:
        owner = store.owner()
        head = {"kind": "me", "id": ME, "name": owner.name if owner else "me",
                "members": len(store.people())}  # fmt: skip
    return stats_json(scope.person, figures, days, tz, scope=head, series=drawn, names=shown,
                      zone=zone_id(tz))  # fmt: skip
