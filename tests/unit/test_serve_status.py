"""`casper serve --status`'s auto-index lines: whether it is on, how current the index is, the
last automatic run and its duration, and a failing run with its error, hint and next try."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from casper.cli.serve import auto_index_lines

TZ = ZoneInfo("Europe/London")
AT = datetime(2026, 11, 26, 9, 30, 5, tzinfo=UTC).timestamp()


def run(**changes: object) -> dict[str, object]:
    base = {"at": AT, "duration_s": 2.5, "outcome": "indexed", "messages_new": 3, "deleted": 0,
            "error": None, "hint": None, "no_access": False}  # fmt: skip
    return {**base, **changes}


def test_on_and_current_shows_indexed_through_lag_and_the_last_run() -> None:
    auto = {"enabled": True, "state": "watching", "indexed_through": AT - 60, "lag_s": 0.0,
            "last_run": run(), "failures": 0, "retry_in_s": None}  # fmt: skip
    assert auto_index_lines(auto, TZ) == [
        "auto-index: watching · indexed through 2026-11-26 09:29:05 · lag 0 s",
        "  last run 09:30:05 (indexed, 3 new) took 2.50 s",
    ]


def test_a_failing_run_says_how_often_when_it_tries_again_and_how_to_fix_it() -> None:
    failed = run(outcome="failed", messages_new=0, error="chat.db [gone]", hint="plug it in")
    auto = {"enabled": True, "state": "backing off", "indexed_through": AT, "lag_s": 900.0,
            "last_run": failed, "failures": 3, "retry_in_s": 40.0}  # fmt: skip
    lines = auto_index_lines(auto, TZ)
    assert lines[0].endswith("lag 15 min") and "backing off" in lines[0]
    assert "took 2.50 s" in lines[1] and "3 new" not in lines[1]
    # the error is shown as written (rich markup escaped), with its hint
    assert "failing (3 in a row; next try in 40 s): chat.db \\[gone]" in lines[2]
    assert "hint: plug it in" in lines[3]


def test_off_says_why() -> None:
    off = {"enabled": False, "off_reason": "auto_index = false", "state": "off"}
    assert auto_index_lines(off, TZ) == ["auto-index: off (auto_index = false)"]
