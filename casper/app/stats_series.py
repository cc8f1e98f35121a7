"""PURE: the series behind `stats` pictures: messages over time, the hour × weekday heatmap,
streaks, reply-time trend, who starts conversations, quiet gaps and who ended them.

Works on any scope (a person, a chat, the owner overall) given two views of its messages:
`counted` (every message the scope's figures count; sent = the owner's) and `timelines` (the
conversations, one time-ordered list per chat, where starts and replies are read). For a
person these are the rows `stats` reads (casper.store.stats_query.person_stats), so every
series sums to the same figures. Definitions are casper.stats' (4 h starts a conversation, a
reply is within 12 h). Imports: stdlib, casper.records, casper.stats.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from datetime import date, timedelta
from typing import NotRequired, TypedDict

from casper.records import ME
from casper.stats import (
    CONVERSATION_GAP_S,
    MAX_REPLY_S,
    LocalClock,
    PersonStats,
    StatRow,
    StatsState,
)

QUIET_DAYS = 14  # a silence this long (whole local days without a message) is a quiet gap
SHOWN_GAPS = 5  # the longest gaps listed
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


class PeriodCount(TypedDict):
    period: str  # "2024-03" (month) or "2024-W09" (ISO week)
    sent: int
    received: int
    in_groups: NotRequired[int]  # a person's: what of `received` they wrote outside our 1:1 chats


class Streak(TypedDict):
    days: int
    first: str | None  # ISO local day
    last: str | None


class Streaks(TypedDict):
    longest: Streak
    current: Streak  # the run that reaches `today` (or the day before); 0 days when none


class ReplyPeriod(TypedDict):
    period: str  # "2024-03"; every month of the range, one without a reply too (None, None)
    me: float | None  # median seconds I took to answer, that month
    them: float | None


class Replies(TypedDict):
    median_s: dict[str, float | None]  # "me", "them": the whole range
    by_month: list[ReplyPeriod]


class Starters(TypedDict):
    me: int
    them: int
    by_sender: list[list[str | int]]  # [person id or "me", conversations started], most first


class Gap(TypedDict):
    first: str  # the last active local day before the silence
    last: str  # the day it ended
    days: int  # whole days without a message in between
    back: str  # who wrote first after it: a person id or "me"


class Gaps(TypedDict):
    min_days: int
    count: int
    longest: list[Gap]  # the longest, at most SHOWN_GAPS, longest first
    reconnected: dict[str, int]  # "me", "them": who ended the silences


class Series(TypedDict):
    period: str  # "week" | "month": the over_time buckets
    over_time: list[PeriodCount]  # every period of the range (`bounds`), empty ones too
    heatmap: list[list[int]]  # 7 rows (Monday first) × 24 local hours: messages
    streaks: Streaks
    replies: Replies
    starters: Starters
    gaps: Gaps


def _day(yyyymmdd: int) -> date:
    return date(yyyymmdd // 10000, yyyymmdd // 100 % 100, yyyymmdd % 100)


def local_fields(rows: Sequence[StatRow], clock: LocalClock) -> list[tuple[int, int]]:
    """(YYYYMMDD, hour) of each dated row: the stored fields, else derived from ts."""
    dated = [r for r in rows if r[1] > 0]
    days, hours = [r[2] for r in dated], [r[3] for r in dated]
    if None in days or None in hours:
        derived = clock.day_hours([r[1] for r in dated])
        return list(zip(*derived, strict=True))
    return [(d, h) for d, h in zip(days, hours, strict=True) if d is not None and h is not None]


def period_of(day: date, period: str) -> str:
    if period == "week":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    return f"{day.year:04d}-{day.month:02d}"


def _periods(first: date, last: date, period: str) -> list[str]:
    """Every period key from the one holding `first` to the one holding `last`."""
    keys: list[str] = []
    step = timedelta(days=7 if period == "week" else 1)
    day = first - timedelta(days=first.weekday()) if period == "week" else first.replace(day=1)
    while day <= last:
        key = period_of(day, period)
        if not keys or keys[-1] != key:
            keys.append(key)
        if period == "week":
            day += step
        else:  # the first of next month
            day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return keys


def auto_period(first: int | None, last: int | None) -> str:
    """Weeks for a range up to 26 weeks, months beyond (and when there is nothing)."""
    if first is None or last is None:
        return "month"
    return "week" if (_day(last) - _day(first)).days <= 26 * 7 else "month"


def streaks(days: set[int], today: int | None) -> Streaks:
    """The longest run of consecutive active local days, and the run still going on `today`
    (a run that ended yesterday still counts: today is not over)."""
    ordered = sorted(_day(d) for d in days)
    longest: Streak = {"days": 0, "first": None, "last": None}
    runs: list[tuple[date, date]] = []
    for day in ordered:
        if runs and day - runs[-1][1] == timedelta(days=1):
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    for start, end in runs:  # the earliest of equal runs wins: a stable answer
        length = (end - start).days + 1
        if length > longest["days"]:
            longest = {"days": length, "first": start.isoformat(), "last": end.isoformat()}
    current: Streak = {"days": 0, "first": None, "last": None}
    if runs and today is not None and 0 <= (_day(today) - runs[-1][1]).days <= 1:
        start, end = runs[-1]
        current = {"days": (end - start).days + 1, "first": start.isoformat(),
                   "last": end.isoformat()}  # fmt: skip
    return {"longest": longest, "current": current}


def walk(timelines: Sequence[Sequence[StatRow]]) -> tuple[Counter[str], dict[str, list]]:
    """Conversation starts per sender and reply gaps per side, over each chat's timeline.

    Reply gaps come as (row, seconds) so they can be bucketed by month. A reply is a change
    between the owner and anyone else (casper.stats.reply_times): in a group, "them" is
    whoever answered me first."""
    starts: Counter[str] = Counter()
    replies: dict[str, list[tuple[StatRow, float]]] = {"me": [], "them": []}
    for timeline in timelines:
        prev: StatRow | None = None
        for row in timeline:
            if row[1] <= 0:  # an unset date has no place in time
                continue
            if prev is None or row[1] - prev[1] >= CONVERSATION_GAP_S:
                starts[row[0]] += 1
            if prev is not None and (row[0] == ME) != (prev[0] == ME):
                gap = row[1] - prev[1]
                if 0 <= gap <= MAX_REPLY_S:
                    replies["me" if row[0] == ME else "them"].append((row, gap))
            prev = row
    return starts, replies


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def quiet_gaps(rows: Sequence[tuple[int, str]]) -> Gaps:
    """Silences of at least QUIET_DAYS whole local days between two active days, from
    (YYYYMMDD, sender) pairs in time order, and who wrote first after each."""
    found: list[Gap] = []
    back: dict[str, int] = {"me": 0, "them": 0}
    prev: date | None = None
    last = -1
    for yyyymmdd, sender in rows:
        if yyyymmdd == last:  # the same day as the message before: no silence
            continue
        last = yyyymmdd
        day = _day(yyyymmdd)
        if prev is not None and (day - prev).days - 1 >= QUIET_DAYS:
            found.append({"first": prev.isoformat(), "last": day.isoformat(),
                          "days": (day - prev).days - 1, "back": sender})  # fmt: skip
            back["me" if sender == ME else "them"] += 1
        if prev is None or day > prev:
            prev = day
    longest = sorted(found, key=lambda g: (-g["days"], g["first"]))[:SHOWN_GAPS]
    return {"min_days": QUIET_DAYS, "count": len(found), "longest": longest, "reconnected": back}


def series(
    counted: Sequence[StatRow],
    timelines: Sequence[Sequence[StatRow]],
    clock: LocalClock,
    *,
    today: int | None,
    period: str | None = None,
    bounds: tuple[date | None, date | None] = (None, None),
    person: str | None = None,
) -> Series:
    """Every series of one scope. `counted` in any order; `timelines` each in time order;
    `today`: the local day the current streak must reach (YYYYMMDD); `period`: "week",
    "month", or None to pick by the range's length; `bounds`: the local days the range runs
    over (None: from the first message, to the last), so the bars start at `--since` and end
    at `--until`; `person`: the person a scope is about, whose messages outside our 1:1 chats
    (`timelines`) are counted apart in each period (`in_groups`)."""
    ordered = sorted((r for r in counted if r[1] > 0), key=lambda r: r[1])
    local = local_fields(ordered, clock)
    days = {d for d, _h in local}
    first = bounds[0] or (_day(min(days)) if days else None)
    last = bounds[1] or (_day(max(days)) if days else None)
    chosen = period or auto_period(*(_yyyymmdd(d) if d else None for d in (first, last)))
    buckets: dict[str, list[int]] = {}
    heat = [[0] * 24 for _ in WEEKDAYS]
    weekday: dict[int, int] = {}
    keys: dict[int, str] = {}
    for row, (d, h) in zip(ordered, local, strict=True):
        key = keys.get(d)
        if key is None:  # once per local day, not per message
            day = _day(d)
            key = keys[d] = period_of(day, chosen)
            weekday[d] = day.weekday()
        bucket = buckets.setdefault(key, [0, 0])
        bucket[0 if row[0] == ME else 1] += 1
        heat[weekday[d]][h] += 1
    direct = _direct(timelines, person, clock, chosen) if person is not None else None
    over_time: list[PeriodCount] = []
    if days and first is not None and last is not None:
        for key in _periods(first, last, chosen):
            sent, received = buckets.get(key, [0, 0])
            counts: PeriodCount = {"period": key, "sent": sent, "received": received}
            if direct is not None:
                counts["in_groups"] = received - direct.get(key, 0)
            over_time.append(counts)
    starts, gaps = walk(timelines)
    by_month: dict[str, dict[str, list[float]]] = {}
    if days and first is not None and last is not None:
        by_month = {key: {"me": [], "them": []} for key in _periods(first, last, "month")}
    for side, pairs in gaps.items():
        if not pairs:
            continue
        months = local_fields([r for r, _g in pairs], clock)
        for (d, _h), (_r, gap) in zip(months, pairs, strict=True):
            key = f"{d // 10000:04d}-{d // 100 % 100:02d}"
            by_month.setdefault(key, {"me": [], "them": []})[side].append(gap)
    return {
        "period": chosen,
        "over_time": over_time,
        "heatmap": heat,
        "streaks": streaks(days, today),
        "replies": {
            "median_s": {side: _median([g for _r, g in v]) for side, v in gaps.items()},
            "by_month": [
                {"period": k, "me": _median(v["me"]), "them": _median(v["them"])}
                for k, v in sorted(by_month.items())
            ],
        },
        "starters": {
            "me": starts.get(ME, 0),
            "them": sum(n for s, n in starts.items() if s != ME),
            "by_sender": [
                [s, n] for s, n in sorted(starts.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
        },
        "gaps": quiet_gaps([(d, row[0]) for row, (d, _h) in zip(ordered, local, strict=True)]),
    }


def _yyyymmdd(day: date) -> int:
    return day.year * 10000 + day.month * 100 + day.day


def _direct(
    timelines: Sequence[Sequence[StatRow]], person: str, clock: LocalClock, period: str
) -> Counter[str]:
    """How many of `person`'s messages each period holds in `timelines` (our 1:1 chats)."""
    theirs = [r for timeline in timelines for r in timeline if r[0] == person and r[1] > 0]
    return Counter(period_of(_day(d), period) for d, _h in local_fields(theirs, clock))


def scope_stats(
    counted: Sequence[StatRow], timelines: Sequence[Sequence[StatRow]], clock: LocalClock
) -> PersonStats:
    """The `stats` figures of any scope, with casper.stats' definitions: the counters as
    StatsState keeps them for a person, starts and replies read over each chat's timeline."""
    state = StatsState()
    mine = [r for r in counted if r[0] == ME]
    state.add(mine, [r for r in counted if r[0] != ME], clock)
    starts, gaps = walk(timelines)
    state.starts = {"me": starts.get(ME, 0), "them": sum(n for s, n in starts.items() if s != ME)}
    state.replies = {side: [g for _r, g in pairs] for side, pairs in gaps.items()}
    return state.result()
