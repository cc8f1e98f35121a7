"""The series behind `stats` pictures (casper.app.stats_series): each chart's numbers on hand-made
timelines, and agreement with casper.stats' own figures."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from casper.app.stats_series import auto_period, quiet_gaps, scope_stats, series, streaks
from casper.records import ME
from casper.stats import Line, LocalClock, compute_stats

UTC_CLOCK = LocalClock(UTC)


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def row(sender: str, when: str) -> tuple[str, float, None, None, None]:
    return (sender, at(when), None, None, None)


TIMELINE = [
    row(ME, "2024-03-04 09:00"),  # Monday: starts
    row("p1", "2024-03-04 09:10"),  # them reply in 10 min
    row(ME, "2024-03-04 09:40"),  # me reply in 30 min
    row("p1", "2024-03-05 20:00"),  # Tuesday, a new conversation (≥ 4 h): they start
    row("p1", "2024-03-06 20:30"),  # Wednesday
    row(ME, "2024-04-10 08:00"),  # 34 quiet days, I end the silence; a reply? no (> 12 h)
]


def test_over_time_heatmap_and_sums() -> None:
    s = series(TIMELINE, [TIMELINE], UTC_CLOCK, today=20240410, period="month")
    assert s["over_time"] == [
        {"period": "2024-03", "sent": 2, "received": 3},
        {"period": "2024-04", "sent": 1, "received": 0},
    ]
    heat = s["heatmap"]
    assert heat[0][9] == 3 and heat[1][20] == 1 and heat[2][20] == 1 and heat[2][8] == 1
    assert sum(map(sum, heat)) == len(TIMELINE)


def test_weeks_are_zero_filled() -> None:
    s = series(TIMELINE, [TIMELINE], UTC_CLOCK, today=None, period="week")
    weeks = [p["period"] for p in s["over_time"]]
    assert weeks[0] == "2024-W10" and weeks[-1] == "2024-W15" and len(weeks) == 6
    assert [p["sent"] + p["received"] for p in s["over_time"]] == [5, 0, 0, 0, 0, 1]


def test_streaks_longest_and_current() -> None:
    s = streaks({20240304, 20240305, 20240306, 20240410}, today=20240411)
    assert s["longest"] == {"days": 3, "first": "2024-03-04", "last": "2024-03-06"}
    assert s["current"] == {"days": 1, "first": "2024-04-10", "last": "2024-04-10"}
    assert streaks({20240304}, today=20240310)["current"]["days"] == 0
    assert streaks(set(), today=20240310)["longest"]["days"] == 0


def test_replies_starters_and_gaps() -> None:
    s = series(TIMELINE, [TIMELINE], UTC_CLOCK, today=None)
    assert s["replies"]["median_s"] == {"me": 1800.0, "them": 600.0}
    assert s["replies"]["by_month"] == [  # every month of the range: April had no reply
        {"period": "2024-03", "me": 1800.0, "them": 600.0},
        {"period": "2024-04", "me": None, "them": None},
    ]
    assert s["starters"]["me"] == 2 and s["starters"]["them"] == 2
    assert s["starters"]["by_sender"] == [["me", 2], ["p1", 2]]
    g = s["gaps"]
    assert g["count"] == 1 and g["reconnected"] == {"me": 1, "them": 0}
    assert g["longest"] == [{"first": "2024-03-06", "last": "2024-04-10", "days": 34, "back": ME}]


def test_quiet_gap_threshold_is_whole_days() -> None:
    rows = [(20240101, "p1"), (20240116, ME), (20240130, "p1")]  # 14 days, then 13 days
    g = quiet_gaps(rows)
    assert g["count"] == 1 and g["longest"][0]["days"] == 14


def test_group_starters_by_sender() -> None:
    group = [row("a", "2024-01-01 10:00"), row("b", "2024-01-01 10:05"),
             row("b", "2024-01-02 10:00"), row(ME, "2024-01-03 10:00")]  # fmt: skip
    s = series(group, [group], UTC_CLOCK, today=None)
    assert s["starters"]["by_sender"] == [["a", 1], ["b", 1], ["me", 1]]
    assert s["starters"]["them"] == 2


def test_local_zone_moves_hours_and_days() -> None:
    tz = ZoneInfo("America/Los_Angeles")
    late = [row(ME, "2024-03-05 03:00")]  # Tuesday 03:00 UTC is Monday 19:00 in LA
    s = series(late, [late], LocalClock(tz), today=None)
    assert s["heatmap"][0][19] == 1


def test_empty_range_and_one_message() -> None:
    empty = series([], [], UTC_CLOCK, today=20240101)
    assert empty["over_time"] == [] and sum(map(sum, empty["heatmap"])) == 0
    assert empty["streaks"]["longest"]["days"] == 0 and empty["gaps"]["count"] == 0
    one = series([row("p1", "2024-01-01 12:00")], [[row("p1", "2024-01-01 12:00")]],
                 UTC_CLOCK, today=20240101)  # fmt: skip
    assert one["over_time"] == [{"period": "2024-W01", "sent": 0, "received": 1}]
    assert one["streaks"]["current"]["days"] == 1


def test_auto_period() -> None:
    assert auto_period(20240101, 20240601) == "week"
    assert auto_period(20240101, 20241001) == "month"
    assert auto_period(None, None) == "month"


def test_scope_stats_of_a_one_to_one_chat_equals_person_stats() -> None:
    """A 1:1 chat's figures, computed as a scope, are the person's `stats` figures."""
    lines = [Line(s, ts, 1, "hi 👍" if s == ME else "ok") for s, ts, *_ in TIMELINE]
    person = compute_stats("p1", lines, [x for x in lines if x.sender != ME], UTC)
    scope = scope_stats(TIMELINE, [TIMELINE], UTC_CLOCK)
    for key in ("sent", "received", "first", "last", "active_days", "median_reply_s",
                "initiations", "busiest_hours", "by_month"):  # fmt: skip
        assert scope[key] == person[key], key  # type: ignore[literal-required]
