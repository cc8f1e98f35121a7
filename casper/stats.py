"""PURE: per-person conversation statistics, with the definitions of CLI.md.

Inputs are plain rows; the time zone is passed in. StatsState holds what the figures are made
of, so an index run folds in new messages instead of re-reading a history; LocalClock turns
timestamps into local days/hours fast. Imports: stdlib, casper.records; regex and emoji inside
the functions that read emoji (the thin `stats` and `chats` paths load this module without them).
"""

from __future__ import annotations

import base64
import functools
import json
import re
import statistics
import struct
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import TypedDict, TypeGuard

from casper.records import ME

CONVERSATION_GAP_S = 4 * 3600  # silence that starts a new conversation
MAX_REPLY_S = 12 * 3600  # longer gaps are not replies

# A cheap first look: text without any of these has no emoji, and skips the grapheme split.
_MAYBE_EMOJI = re.compile(r"[\u00a9\u00ae\u203c-\u3299\U0001f000-\U0001faff\u20e3\ufe0f]")
# What makes an emoji span several code points: ZWJ, variation selector, keycap, skin tones,
# regional indicators (flags), tag characters (subdivision flags).
_JOINERS = re.compile(
    r"[\u200d\ufe0f\u20e3\U0001f3fb-\U0001f3ff\U0001f1e6-\U0001f1ff\U000e0020-\U000e007f]"
)
_SKIN_TONES = dict.fromkeys(range(0x1F3FB, 0x1F400))  # Fitzpatrick modifiers, for str.translate
_UNQUALIFIED = 4  # emoji.STATUS["unqualified"]: a text-style symbol without U+FE0F


@dataclass(frozen=True, slots=True)
class Line:
    """One countable message: who wrote it, when (UTC s), in which chat, and its text."""

    sender: str
    ts: float
    chat_id: int
    text: str = ""


# What the store keeps per message for stats: sender, ts (UTC s), local day as YYYYMMDD, local
# hour, and the emoji of its text (space-separated; None when there are none). The local fields
# may be None (not precomputed for this zone): stats_from_rows then derives them from ts.
StatRow = tuple[str, float, int | None, int | None, str | None]
_DAY_S = 86400
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_VARIES = float("nan")  # marks a UTC day with an offset change (DST): computed per timestamp
_NO_SPAN = (_VARIES, _VARIES, 0)  # no timestamp is inside it
_LAST_US = 3600 - 5e-7  # from here fromtimestamp's rounding to µs may carry into the next hour


def emoji_in(text: str) -> list[str]:
    """The emoji of a text, in order, one per grapheme cluster (so 🤷‍♂️, 👨‍👩‍👧, 🇬🇧 and 1️⃣ are
    one emoji each), skin tones folded to the base emoji (👍🏽 → 👍), each in its fully
    qualified form. A lone text-style symbol (©, ™, ↔, a ❤ without U+FE0F) is text, not emoji.
    """
    if not text or text.isascii() or not _MAYBE_EMOJI.search(text):
        return []
    if _JOINERS.search(text):  # sequences: split into grapheme clusters
        import regex  # the Unicode grapheme rules (\X); a dependency of dateparser too

        clusters = [c for c in regex.findall(r"\X", text) if len(c) > 1 or _MAYBE_EMOJI.match(c)]
    else:  # no joiner, selector, tone, flag or keycap: each candidate is its own cluster
        clusters = _MAYBE_EMOJI.findall(text)
    return [name for c in clusters for name in _emoji_names(c)]


@functools.lru_cache(maxsize=8192)
def _emoji_names(cluster: str) -> tuple[str, ...]:
    """One grapheme cluster → its emoji (skin tone folded, fully qualified), else ().

    A sequence no vendor draws as one picture (not in the Unicode emoji data) shows as its
    parts, so its parts are counted; gender signs and other text-style pieces never are.
    """
    import emoji  # the Unicode emoji data, maintained upstream

    folded = cluster.translate(_SKIN_TONES)
    names = []
    for found in emoji.emoji_list(folded):
        piece = found["emoji"]
        if len(piece) == 1 and emoji.EMOJI_DATA.get(piece, {}).get("status") == _UNQUALIFIED:
            continue
        names.append(emoji.emojize(emoji.demojize(piece)))  # ❤ and ❤️, 🤷‍♂ and 🤷‍♂️ are one
    return tuple(names)


def emoji_field(text: str) -> str | None:
    """The emoji of a text as one space-separated string (what the store keeps), else None."""
    return " ".join(emoji_in(text)) or None


def zone_id(tz: tzinfo) -> str:
    """A stable name for a time zone: precomputed local fields are valid only for this zone.

    A ZoneInfo's key (the same all year round); for a fixed offset its repr, which is fixed too.
    """
    key = getattr(tz, "key", None)
    return key if isinstance(key, str) and key else repr(tz)


def _local(ts: float, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(ts, tz)


class LocalClock:
    """(YYYYMMDD, hour) of UTC timestamps in one zone, as `datetime.fromtimestamp` gives them.

    The UTC offset is looked up once per UTC day; a timestamp inside the local day seen last
    costs a subtraction and a division (no datetime). Local days that contain a DST change,
    and the last half microsecond of an hour (which fromtimestamp rounds up), go the slow way.
    """

    __slots__ = ("tz", "_offsets", "_days")

    def __init__(self, tz: tzinfo) -> None:
        self.tz = tz
        self._offsets: dict[float, float] = {}  # UTC day number → offset s (NaN: it changes)
        self._days: dict[float, int] = {}  # local day number → YYYYMMDD

    def day_hours(self, stamps: Iterable[float]) -> tuple[list[int], list[int]]:
        """`self(ts)` for many timestamps, as (days, hours) lists: the ingest hot path."""
        days: list[int] = []
        hours: list[int] = []
        add_day, add_hour = days.append, hours.append
        start, end, day = _NO_SPAN
        for ts in stamps:
            if not start <= ts < end:
                start, end, day = self._span(ts)
            if start <= ts < end:
                since = ts - start  # exact: both are close, and start is whole seconds
                hour = int(since // 3600)
                if since - hour * 3600 < _LAST_US:
                    add_day(day)
                    add_hour(hour)
                    continue
            day_, hour_ = self(ts)
            add_day(day_)
            add_hour(hour_)
        return days, hours

    def __call__(self, ts: float) -> tuple[int, int]:
        start, end, day = self._span(ts)
        if start <= ts < end and (ts - start) % 3600 < _LAST_US:
            return day, int((ts - start) // 3600)
        d = datetime.fromtimestamp(ts, self.tz)
        return d.year * 10000 + d.month * 100 + d.day, d.hour

    def _span(self, ts: float) -> tuple[float, float, int]:
        """[start, end) in UTC seconds of the local day holding `ts`, and its YYYYMMDD; or an
        empty span when the offset changes within that day."""
        offset = self._offset(ts // _DAY_S)
        if offset != offset:  # NaN: this UTC day has a transition
            return _NO_SPAN
        local_day = (ts + offset) // _DAY_S
        start = local_day * _DAY_S - offset
        end = start + _DAY_S
        # the local day may straddle two UTC days: one offset must hold across it (NaN != NaN)
        if self._offset(start // _DAY_S) != offset or self._offset((end - 1) // _DAY_S) != offset:
            return _NO_SPAN
        day = self._days.get(local_day)
        if day is None:
            d = date.fromordinal(int(local_day) + _EPOCH_ORDINAL)
            day = self._days[local_day] = d.year * 10000 + d.month * 100 + d.day
        return start, end, day

    def _offset(self, utc_day: float) -> float:
        offset = self._offsets.get(utc_day)
        if offset is None:
            start = utc_day * _DAY_S
            first = datetime.fromtimestamp(start, self.tz).utcoffset()
            last = datetime.fromtimestamp(start + _DAY_S - 1, self.tz).utcoffset()
            # one offset all day, or NaN: zone transitions fall on whole seconds
            offset = first.total_seconds() if first is not None and first == last else _VARIES
            self._offsets[utc_day] = offset
        return offset


def _all_known(values: list[int | None]) -> TypeGuard[list[int]]:
    return None not in values


def timeline_head(timeline: Sequence[StatRow]) -> tuple[float, bool] | None:
    """(ts, from me) of a sorted 1:1 timeline's first dated message: what `StatsState.extend`
    needs to join it to the messages before it."""
    return next(((r[1], r[0] == ME) for r in timeline if r[1] > 0), None)


def conversations(timeline: Sequence[Line]) -> list[list[Line]]:
    """Split a 1:1 timeline into conversations at ≥4 h of silence."""
    convs: list[list[Line]] = []
    last_ts: float | None = None
    for line in timeline:
        if last_ts is None or line.ts - last_ts >= CONVERSATION_GAP_S:
            convs.append([])
        convs[-1].append(line)
        last_ts = line.ts
    return convs


class ChatSplit(TypedDict):
    """A person's messages counted apart by where they were written: their one-to-one chats
    with the owner, and the group chats both are in (the stats' `sent` is one-to-one only;
    their `received` counts the person's messages everywhere)."""

    sent_one_to_one: int
    received_one_to_one: int
    sent_in_groups: int  # the owner's messages in group chats the person is in
    received_in_groups: int


class PersonStats(TypedDict):
    """One person's figures, in CLI.md's `stats` shape (`first`/`last`: UTC seconds here, local
    ISO timestamps in the `stats --json` document)."""

    sent: int
    received: int
    first: float | None
    last: float | None
    active_days: int
    median_reply_s: dict[str, float | None]  # "me", "them": seconds
    initiations: dict[str, int]  # "me", "them": conversations started
    top_emoji: list[list[str | int]]  # [emoji, count], the five most used
    busiest_hours: list[list[int]]  # [local hour, messages], the five busiest
    by_month: dict[str, int]  # "2024-03": messages


def reply_times(timeline: Sequence[Line]) -> dict[str, list[float]]:
    """Seconds from one side's last message to the other side's next one, keyed by replier."""
    out: dict[str, list[float]] = {"me": [], "them": []}
    prev: Line | None = None
    for line in timeline:
        if prev is not None and (line.sender == ME) != (prev.sender == ME):
            gap = line.ts - prev.ts
            if 0 <= gap <= MAX_REPLY_S:
                out["me" if line.sender == ME else "them"].append(gap)
        prev = line
    return out


def compute_stats(
    person_id: str, one_to_one: Sequence[Line], authored: Sequence[Line], tz: tzinfo
) -> PersonStats:
    """Stats for one person.

    `one_to_one`: every countable message in the 1:1 chats with the person (both sides).
    `authored`: every countable message the person wrote, in any chat (groups included).
    """
    clock = LocalClock(tz)

    def row(line: Line) -> StatRow:
        day, hour = clock(line.ts)
        return (line.sender, line.ts, day, hour, emoji_field(line.text))

    timeline = sorted(one_to_one, key=lambda line: line.ts)  # stable: ties keep their order
    return stats_from_rows([row(x) for x in timeline], [row(x) for x in authored], clock)


def stats_from_rows(
    one_to_one: Sequence[StatRow], authored: Sequence[StatRow], clock: LocalClock
) -> PersonStats:
    """`compute_stats` on StatRows, `one_to_one` in (ts, rowid) order (as the store gives it)."""
    state = StatsState()
    state.add(one_to_one, authored, clock)
    return state.result()


@dataclass(slots=True)
class StatsState:
    """Everything the stats are made of, so new messages can be folded in without the old.

    Valid while messages are only added, and in time order within the 1:1 chats: `accepts`
    tells whether a timeline continues this one. Deletions and edits need a fresh state.
    """

    sent: int = 0
    received: int = 0
    first: float | None = None
    last: float | None = None
    days: set[int] = field(default_factory=set)
    hours: Counter[int] = field(default_factory=Counter)
    months: Counter[int] = field(default_factory=Counter)  # YYYYMM
    emoji: Counter[str] = field(default_factory=Counter)
    starts: dict[str, int] = field(default_factory=lambda: {"me": 0, "them": 0})
    replies: dict[str, list[float]] = field(default_factory=lambda: {"me": [], "them": []})
    tail: tuple[float, bool] | None = None  # (ts, from me) of the 1:1 timeline's last message

    def accepts(self, timeline: Sequence[StatRow]) -> bool:
        """Does `timeline` (sorted) start at or after this state's last 1:1 message?"""
        first = next((r[1] for r in timeline if r[1] > 0), None)  # undated rows sort first
        return first is None or self.tail is None or first >= self.tail[0]

    def add(
        self, timeline: Sequence[StatRow], authored: Sequence[StatRow], clock: LocalClock
    ) -> None:
        """Fold in more rows: 1:1 `timeline` in (ts, rowid) order, after `tail`; `authored`."""
        counted = [r for r in timeline if r[0] == ME]
        self.sent += len(counted)
        self.received += len(authored)
        counted += authored
        if not counted and not timeline:
            return
        self.emoji.update([e for r in counted if r[4] for e in r[4].split()])
        # an unset chat.db date (ts 0) has no day: it counts as a message, not as a time
        dated = [r for r in counted if r[1] > 0]
        stored_days = [r[2] for r in dated]
        stored_hours = [r[3] for r in dated]
        if _all_known(stored_days) and _all_known(stored_hours):
            days, hours = stored_days, stored_hours
        else:  # not precomputed for this zone
            days, hours = clock.day_hours([r[1] for r in dated])
        if dated:
            stamps = [r[1] for r in dated]
            low, high = min(stamps), max(stamps)
            self.first = low if self.first is None else min(self.first, low)
            self.last = high if self.last is None else max(self.last, high)
        self.days.update(days)
        self.hours.update(hours)
        self.months.update([d // 100 for d in days])
        self._walk([r for r in timeline if r[1] > 0])

    def extend(self, later: StatsState, head: tuple[float, bool] | None) -> bool:
        """Fold in `later`, the state of rows that come after this state's (another ROWID
        range, read on its own): what `add` with those rows would give. `head` is (ts, from
        me) of later's first dated 1:1 message; the conversation start and the reply it may
        make across the boundary are settled here. False, with nothing changed, when later's
        1:1 messages do not all come after this state's (the rows must then be re-read).

        The counters come out equal, their key order (in `to_json`) may differ."""
        if head is not None and self.tail is not None and head[0] < self.tail[0]:
            return False
        self.sent += later.sent
        self.received += later.received
        if later.first is not None:
            self.first = later.first if self.first is None else min(self.first, later.first)
        if later.last is not None:
            self.last = later.last if self.last is None else max(self.last, later.last)
        self.days |= later.days
        self.hours.update(later.hours)
        self.months.update(later.months)
        self.emoji.update(later.emoji)
        starts = dict(later.starts)
        if head is not None and self.tail is not None:
            ts, me = head
            side, gap = ("me" if me else "them"), ts - self.tail[0]
            if gap < CONVERSATION_GAP_S:
                starts[side] -= 1  # later counted its first message as a start: it continues
            if me is not self.tail[1] and 0 <= gap <= MAX_REPLY_S:
                self.replies[side].append(gap)
        for side in ("me", "them"):
            self.starts[side] += starts[side]
            self.replies[side] += later.replies[side]
        if later.tail is not None:
            self.tail = later.tail
        return True

    def _walk(self, timeline: Sequence[StatRow]) -> None:
        """`conversations` (who starts each) and `reply_times`, continued from `tail`."""
        starts, replies = self.starts, self.replies
        prev_ts, prev_me = self.tail if self.tail is not None else (None, False)
        for row in timeline:
            ts, me = row[1], row[0] == ME
            side = "me" if me else "them"
            if prev_ts is None:
                starts[side] += 1
            else:
                gap = ts - prev_ts
                if gap >= CONVERSATION_GAP_S:
                    starts[side] += 1
                if me is not prev_me and 0 <= gap <= MAX_REPLY_S:
                    replies[side].append(gap)
            prev_ts, prev_me = ts, me
        if prev_ts is not None:
            self.tail = (prev_ts, prev_me)

    def result(self) -> PersonStats:
        """The stats, in CLI.md's shape."""
        return {
            "sent": self.sent,
            "received": self.received,
            "first": self.first,
            "last": self.last,
            "active_days": len(self.days),
            "median_reply_s": {
                side: (statistics.median(v) if v else None) for side, v in self.replies.items()
            },
            "initiations": dict(self.starts),
            "top_emoji": _top5(self.emoji),
            "busiest_hours": _top5(self.hours),
            "by_month": {
                f"{m // 100:04d}-{m % 100:02d}": n for m, n in sorted(self.months.items())
            },
        }

    def to_json(self) -> str:
        """Compact JSON: the long number lists (days, reply gaps) as base64 arrays."""
        return json.dumps(
            {
                "v": 1, "sent": self.sent, "received": self.received, "first": self.first,
                "last": self.last, "days": _pack("q", sorted(self.days)),
                "hours": list(self.hours.items()), "months": list(self.months.items()),
                "emoji": list(self.emoji.items()), "starts": self.starts,
                "replies": {side: _pack("d", gaps) for side, gaps in self.replies.items()},
                "tail": self.tail,
            }
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> StatsState | None:
        """The state `to_json` wrote; None for one in an unknown format."""
        d = json.loads(text)
        if d.get("v") != 1:
            return None
        tail = d["tail"]
        return cls(
            sent=d["sent"], received=d["received"], first=d["first"], last=d["last"],
            days=set(_unpack("q", d["days"])), hours=Counter(dict(d["hours"])),
            months=Counter(dict(d["months"])), emoji=Counter(dict(d["emoji"])),
            starts=d["starts"],
            replies={side: _unpack("d", packed) for side, packed in d["replies"].items()},
            tail=(tail[0], tail[1]) if tail else None,
        )  # fmt: skip


def _pack(code: str, values: Sequence[float]) -> str:
    """Numbers → base64 of their little-endian binary form: exact, and fast to (de)code."""
    return base64.b64encode(struct.pack(f"<{len(values)}{code}", *values)).decode("ascii")


def _unpack(code: str, text: str) -> list:
    raw = base64.b64decode(text)
    return list(struct.unpack(f"<{len(raw) // struct.calcsize(code)}{code}", raw))


def _top5(counts: Counter) -> list[list]:
    """The five largest counts, ties by key: [[key, n], ...]."""
    return [[k, n] for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]


def period_key(ts: float, period: str, tz: tzinfo) -> str:
    """The local calendar bucket of a timestamp: day, ISO week, month or year."""
    d = _local(ts, tz)
    if period == "day":
        return d.strftime("%Y-%m-%d")
    if period == "week":
        year, week, _ = d.isocalendar()
        return f"{year}-W{week:02d}"
    if period == "month":
        return d.strftime("%Y-%m")
    if period == "year":
        return d.strftime("%Y")
    raise ValueError(f"unknown period {period!r} (day, week, month or year)")


def volume_by_period(
    lines: Iterable[tuple[str, float]], period: str, tz: tzinfo, top_n: int = 5
) -> dict[str, list[tuple[str, int]]]:
    """(person id, ts) pairs → per period, the top people by message count (ties by id)."""
    buckets: dict[str, Counter[str]] = {}
    for person, ts in lines:
        if ts <= 0:  # an unset date belongs to no period
            continue
        buckets.setdefault(period_key(ts, period, tz), Counter())[person] += 1
    return {
        key: sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]
        for key, counter in sorted(buckets.items())
    }


def attribute_to_people(
    lines: Iterable[Line], one_to_one_owner: dict[int, str]
) -> list[tuple[str, float]]:
    """Credit each message to a person: its author, or for my 1:1 messages the other side.

    My messages in group chats belong to no single person and are left out.
    """
    out: list[tuple[str, float]] = []
    for line in lines:
        if line.sender != ME:
            out.append((line.sender, line.ts))
        elif line.chat_id in one_to_one_owner:
            out.append((one_to_one_owner[line.chat_id], line.ts))
    return out
