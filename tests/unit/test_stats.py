"""Contact stats follow CLI.md's definitions (time zone, 4 h conversations, 12 h reply cap)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from casper.records import ME
from casper.stats import (
    Line,
    attribute_to_people,
    compute_stats,
    conversations,
    period_key,
    reply_times,
    volume_by_period,
)

LA = ZoneInfo("America/Los_Angeles")
SAM = "p_sam"


def at(text: str) -> float:
    """A UTC timestamp from 'YYYY-MM-DD HH:MM' read in Los Angeles time."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=LA).timestamp()


def test_reply_times_measure_side_switches_and_drop_gaps_over_12h() -> None:
    timeline = [
        Line(SAM, at("2024-01-01 10:00"), 1),
        Line(SAM, at("2024-01-01 10:01"), 1),
        Line(ME, at("2024-01-01 10:05"), 1),  # I reply 4 min after Sam's last message
        Line(SAM, at("2024-01-01 10:35"), 1),  # Sam replies after 30 min
        Line(ME, at("2024-01-02 00:00"), 1),  # 13.4 h later: not a reply
    ]
    times = reply_times(timeline)
    assert times == {"me": [240.0], "them": [1800.0]}


def test_conversations_split_at_four_hours_of_silence() -> None:
    timeline = [
        Line(ME, at("2024-01-01 08:00"), 1),
        Line(SAM, at("2024-01-01 11:59"), 1),  # 3 h 59 m: same conversation
        Line(SAM, at("2024-01-01 16:00"), 1),  # 4 h 1 m later: a new one, Sam started it
    ]
    assert [len(c) for c in conversations(timeline)] == [2, 1]


def test_compute_stats_counts_per_cli_definitions() -> None:
    one_to_one = [
        Line(ME, at("2024-03-01 23:30"), 1, "hey 🎉"),
        Line(SAM, at("2024-03-01 23:40"), 1, "hi 🎉🎉"),
        Line(SAM, at("2024-03-05 09:00"), 2, "new number! 😀"),  # second handle's chat
        Line(ME, at("2024-03-05 09:30"), 2, "ok"),
    ]
    in_group = [Line(SAM, at("2024-04-01 12:00"), 9, "group hello")]
    authored = [line for line in one_to_one if line.sender == SAM] + in_group
    s = compute_stats(SAM, one_to_one, authored, LA)
    assert s["sent"] == 2  # my messages in our 1:1 chats only
    assert s["received"] == 3  # Sam's messages anywhere, the group included
    assert s["active_days"] == 3  # local dates: 03-01, 03-05, 04-01
    assert s["initiations"] == {"me": 1, "them": 1}
    assert s["median_reply_s"] == {"me": 1800.0, "them": 600.0}
    assert s["top_emoji"][0] == ["🎉", 3]
    assert s["by_month"] == {"2024-03": 4, "2024-04": 1}
    assert s["first"] == at("2024-03-01 23:30") and s["last"] == at("2024-04-01 12:00")
    assert dict((h, n) for h, n in s["busiest_hours"])[23] == 2


def test_local_time_zone_decides_the_month_and_day() -> None:
    # 2024-03-31 23:30 in LA is already April 1st in UTC
    ts = at("2024-03-31 23:30")
    assert period_key(ts, "month", LA) == "2024-03"
    assert period_key(ts, "month", ZoneInfo("UTC")) == "2024-04"
    assert period_key(ts, "week", LA) == "2024-W13"
    with pytest.raises(ValueError):
        period_key(ts, "fortnight", LA)


def test_volume_ranks_people_per_period_and_credits_my_1to1_messages() -> None:
    lines = [
        Line(ME, at("2024-01-02 10:00"), 1),  # 1:1 with Sam → Sam
        Line(SAM, at("2024-01-02 10:01"), 1),
        Line("p_ana", at("2024-01-03 10:00"), 9),
        Line(ME, at("2024-01-03 10:01"), 9),  # my group message: nobody's
    ]
    pairs = attribute_to_people(lines, {1: SAM})
    assert sorted(pairs) == sorted([(SAM, lines[0].ts), (SAM, lines[1].ts), ("p_ana", lines[2].ts)])
    assert volume_by_period(pairs, "month", LA) == {"2024-01": [(SAM, 2), ("p_ana", 1)]}


def test_no_messages_gives_empty_stats_not_an_error() -> None:
    s = compute_stats(SAM, [], [], LA)
    assert (
        s["sent"] == 0 and s["first"] is None and s["median_reply_s"] == {"me": None, "them": None}
    )
