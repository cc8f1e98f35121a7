"""PURE: per-person conversation statistics, with the definitions of CLI.md.

Inputs are plain rows; the time zone is passed in. Imports: stdlib, casper.records.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from casper.records import ME

CONVERSATION_GAP_S = 4 * 3600  # silence that starts a new conversation
MAX_REPLY_S = 12 * 3600  # longer gaps are not replies

# Pictographs, dingbats, flags and the like; skin tones/ZWJ sequences are counted by base emoji.
_EMOJI = re.compile(
    "[\U0001f1e6-\U0001f1ff]{2}|[\U0001f300-\U0001faff\u2600-\u27bf\u2b50\u2b55\u2764\u203c]"
)


@dataclass(frozen=True, slots=True)
class Line:
    """One countable message: who wrote it, when (UTC s), in which chat, and its text."""

    sender: str
    ts: float
    chat_id: int
    text: str = ""


def emoji_in(text: str) -> list[str]:
    """The emoji characters in a text, in order."""
    return _EMOJI.findall(text)


def _local(ts: float, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(ts, tz)


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
) -> dict[str, object]:
    """Stats for one person.

    `one_to_one`: every countable message in the 1:1 chats with the person (both sides).
    `authored`: every countable message the person wrote, in any chat (groups included).
    """
    mine = [line for line in one_to_one if line.sender == ME]
    counted = sorted([*mine, *authored], key=lambda line: line.ts)
    timeline = sorted(one_to_one, key=lambda line: line.ts)
    starts = Counter(
        "me" if conv[0].sender == ME else "them" for conv in conversations(timeline)
    )
    replies = reply_times(timeline)
    days: set[tuple[int, int, int]] = set()
    hours: Counter[int] = Counter()
    months: Counter[str] = Counter()
    emoji: Counter[str] = Counter()
    for line in counted:  # one local-time conversion per message: this loop is the hot path
        d = _local(line.ts, tz)
        days.add((d.year, d.month, d.day))
        hours[d.hour] += 1
        months[f"{d.year:04d}-{d.month:02d}"] += 1
        if line.text and not line.text.isascii():
            emoji.update(_EMOJI.findall(line.text))
    return {
        "sent": len(mine),
        "received": len(authored),
        "first": counted[0].ts if counted else None,
        "last": counted[-1].ts if counted else None,
        "active_days": len(days),
        "median_reply_s": {
            side: (statistics.median(v) if v else None) for side, v in replies.items()
        },
        "initiations": {"me": starts.get("me", 0), "them": starts.get("them", 0)},
        "top_emoji": [[e, n] for e, n in sorted(emoji.items(), key=lambda kv: (-kv[1], kv[0]))[:5]],
        "busiest_hours": [[h, n] for h, n in sorted(hours.items(), key=lambda kv: (-kv[1], kv[0]))[:5]],
        "by_month": dict(sorted(months.items())),
    }


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
