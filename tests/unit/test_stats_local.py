"""The fast paths of casper.stats agree with the plain definitions they replace.

LocalClock must give exactly what datetime.fromtimestamp gives (DST days, half-hour zones,
the µs rounding at the end of an hour); StatsState folded in pieces must equal one pass.
"""

from __future__ import annotations

import json
import random
from datetime import datetime
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from casper.records import ME
from casper.stats import (
    Line,
    LocalClock,
    StatsState,
    compute_stats,
    conversations,
    emoji_field,
    reply_times,
    stats_from_rows,
)

ZONES = [
    ZoneInfo(name)
    for name in (
        "UTC",
        "America/Los_Angeles",
        "Europe/London",
        "Australia/Lord_Howe",  # 30-minute DST shift
        "Asia/Kathmandu",  # +05:45
        "America/St_Johns",  # -03:30 with DST
        "Pacific/Apia",  # skipped a whole day in 2011
    )
]
# 2010–2030, plus the instants around each zone's transitions in that range
STAMPS = st.floats(min_value=1_262_304_000, max_value=1_893_456_000, allow_nan=False)


def _transitions(tz: ZoneInfo) -> list[float]:
    out, prev = [], None
    for hour in range(1_262_304_000 // 3600, 1_893_456_000 // 3600, 6):
        offset = datetime.fromtimestamp(hour * 3600, tz).utcoffset()
        if prev is not None and offset != prev:
            out.append(hour * 3600.0)
        prev = offset
    return out


def _expected(ts: float, tz: ZoneInfo) -> tuple[int, int]:
    d = datetime.fromtimestamp(ts, tz)
    return d.year * 10000 + d.month * 100 + d.day, d.hour


@settings(max_examples=300, deadline=None)
@given(st.lists(STAMPS, min_size=1, max_size=40), st.sampled_from(ZONES))
def test_local_clock_matches_datetime(stamps: list[float], tz: ZoneInfo) -> None:
    clock = LocalClock(tz)
    days, hours = clock.day_hours(sorted(stamps))
    assert list(zip(days, hours, strict=True)) == [_expected(ts, tz) for ts in sorted(stamps)]
    assert [clock(ts) for ts in stamps] == [_expected(ts, tz) for ts in stamps]


def test_local_clock_around_transitions_and_hour_ends() -> None:
    rng = random.Random(7)
    for tz in ZONES:
        stamps: list[float] = []
        for t in _transitions(tz)[:40]:
            stamps += [t + d for d in range(-7200, 7200, 599)]
            stamps += [t - 1e-7, t - 4e-7, t - 6e-7, t, t + 1e-7]
        for _ in range(2000):  # the last microsecond of random hours
            hour_end = rng.randrange(1_262_304_000, 1_893_456_000, 3600) * 1.0
            stamps += [hour_end - rng.choice((1e-7, 3e-7, 4.9e-7, 5e-7, 5.1e-7, 1e-6, 0.5))]
        stamps.sort()
        clock = LocalClock(tz)
        expected = [_expected(ts, tz) for ts in stamps]
        assert list(zip(*clock.day_hours(stamps), strict=True)) == expected, tz
        assert [LocalClock(tz)(ts) for ts in stamps] == expected, tz


def _timeline(rng: random.Random, n: int, t0: float) -> list[Line]:
    lines, ts = [], t0
    for _ in range(n):
        ts += rng.choice((5.0, 60.0, 900.0, 3 * 3600.0, 4 * 3600.0, 13 * 3600.0, 0.25))
        text = rng.choice(("ok", "see you 🎉", "🇫🇷 trip", "", "naïve", "❤️❤️"))
        lines.append(Line(rng.choice((ME, "p_sam")), ts, rng.choice((1, 2)), text))
    return lines


def test_state_folded_in_pieces_equals_one_pass_and_survives_json() -> None:
    rng = random.Random(3)
    tz = ZoneInfo("America/Los_Angeles")
    clock = LocalClock(tz)
    for _ in range(30):
        lines = _timeline(rng, rng.randrange(0, 300), 1_700_000_000.0)
        group = [Line("p_sam", x.ts + 7, 9, x.text) for x in lines if rng.random() < 0.3]
        authored = [x for x in lines if x.sender != ME] + group

        def rows(xs: list[Line]) -> list:
            return [(x.sender, x.ts, *clock(x.ts), emoji_field(x.text)) for x in xs]

        whole = compute_stats("p_sam", lines, authored, tz)
        assert whole == stats_from_rows(rows(lines), rows(authored), clock)
        state, cut = StatsState(), rng.randrange(0, len(lines) + 1)
        state.add(
            rows(lines[:cut]),
            rows([x for x in authored if x.ts <= lines[cut - 1].ts] if cut else []),
            clock,
        )
        restored = StatsState.from_json(state.to_json())
        assert restored is not None and restored.to_json() == state.to_json()
        later = lines[cut:]
        assert restored.accepts(rows(later))
        restored.add(
            rows(later),
            rows(
                [x for x in authored if cut and x.ts > lines[cut - 1].ts]
                or (authored if not cut else [])
            ),
            clock,
        )
        assert json.loads(json.dumps(restored.result())) == json.loads(json.dumps(whole))


def test_state_matches_the_reference_definitions() -> None:
    rng = random.Random(11)
    lines = _timeline(rng, 500, 1_600_000_000.0)
    s = compute_stats("p_sam", lines, [x for x in lines if x.sender != ME], ZoneInfo("UTC"))
    starts = [conv[0].sender for conv in conversations(lines)]
    assert s["initiations"] == {"me": starts.count(ME), "them": len(starts) - starts.count(ME)}
    gaps = reply_times(lines)
    for side in ("me", "them"):
        values = sorted(gaps[side])
        mid = len(values) // 2
        median = (
            (values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2)
            if (values)
            else None
        )
        assert s["median_reply_s"][side] == median


def test_state_refuses_an_older_timeline_and_unknown_formats() -> None:
    clock = LocalClock(ZoneInfo("UTC"))
    state = StatsState()
    state.add([(ME, 100.0, None, None, None), ("p_sam", 200.0, None, None, None)], [], clock)
    assert not state.accepts([("p_sam", 150.0, None, None, None)])
    assert state.accepts([("p_sam", 200.0, None, None, None)])
    assert StatsState.from_json('{"v": 99}') is None
