"""StatsState.extend joins the states of two consecutive runs of rows (two ROWID ranges read by
different worker processes) into exactly the state one `add` over all the rows gives."""

from __future__ import annotations

import random
from zoneinfo import ZoneInfo

from casper.records import ME
from casper.stats import (
    CONVERSATION_GAP_S,
    MAX_REPLY_S,
    LocalClock,
    StatRow,
    StatsState,
    timeline_head,
)

CLOCK = LocalClock(ZoneInfo("Europe/Berlin"))
GAPS = [0, 30, 600, CONVERSATION_GAP_S - 1, CONVERSATION_GAP_S, MAX_REPLY_S, MAX_REPLY_S + 1]


def _rows(seed: int, n: int = 60) -> tuple[list[StatRow], list[StatRow]]:
    """A 1:1 timeline with both sides (gaps on every threshold, ties, an undated row) and the
    other side's messages elsewhere too."""
    rng = random.Random(seed)
    ts = 1_700_000_000.0
    timeline: list[StatRow] = []
    for i in range(n):
        ts += rng.choice(GAPS)
        sender = ME if rng.random() < 0.5 else "p1"
        when = 0.0 if i == 7 else ts
        day, hour = CLOCK(when) if when > 0 else (None, None)
        timeline.append((sender, when, day, hour, rng.choice([None, "😂", "👍 ❤️"])))
    timeline.sort(key=lambda r: r[1])
    authored = [r for r in timeline if r[0] == "p1"]
    return timeline, authored


def _state(timeline: list[StatRow], authored: list[StatRow]) -> StatsState:
    state = StatsState()
    state.add(timeline, authored, CLOCK)
    return state


def test_joined_states_equal_one_pass_at_every_split() -> None:
    for seed in range(8):
        timeline, authored = _rows(seed)
        whole = _state(timeline, authored)
        for k in range(len(timeline) + 1):
            first, later = timeline[:k], timeline[k:]
            state = _state(first, [r for r in first if r[0] == "p1"])
            assert state.extend(
                _state(later, [r for r in later if r[0] == "p1"]), timeline_head(later)
            )
            assert state == whole, (seed, k)
            assert state.result() == whole.result()


def test_three_ranges_and_an_empty_one() -> None:
    timeline, authored = _rows(99, 90)
    parts = [timeline[:30], [], timeline[30:61], timeline[61:]]
    state = StatsState()
    for part in parts:
        assert state.extend(_state(part, [r for r in part if r[0] == "p1"]), timeline_head(part))
    assert state == _state(timeline, authored)


def test_a_later_range_with_earlier_messages_is_refused() -> None:
    timeline, _ = _rows(5)
    late, early = timeline[30:], timeline[:30]
    state = _state(late, [])
    before = state.to_json()
    assert not state.extend(_state(early, []), timeline_head(early))
    assert state.to_json() == before  # unchanged: the caller re-reads the rows instead
