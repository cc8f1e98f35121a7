"""Apple-epoch conversions against the dates recorded in the real fixture databases."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.dates import APPLE_EPOCH_OFFSET, apple_to_unix, unix_to_apple_ns, unix_to_apple_seconds
from tests.paths import CHATDB_FIXTURES


def _db_messages() -> list[dict[str, Any]]:
    data = json.loads((CHATDB_FIXTURES / "derived" / "expected.json").read_text("utf-8"))
    return [m for db in data["databases"] for m in db["messages"]]


def _utc(ts: float | None) -> str:
    assert ts is not None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_epoch_offset_is_2001_utc() -> None:
    assert datetime(2001, 1, 1, tzinfo=UTC).timestamp() == APPLE_EPOCH_OFFSET


def test_known_message_date() -> None:
    assert _utc(apple_to_unix(706018963580999808)) == "2023-05-17T12:22:43Z"
    assert apple_to_unix(706018963580999808) == pytest.approx(1684326163.581, abs=1e-6)


@pytest.mark.parametrize("msg", _db_messages(), ids=lambda m: str(m["ROWID"]))
def test_fixture_database_dates(msg: dict[str, Any]) -> None:
    assert _utc(apple_to_unix(msg["date_raw"])) == msg["date_utc"]


def test_seconds_era_values() -> None:
    # attachment.created_date is in seconds, next to a message date of 706020175298411392 ns
    assert _utc(apple_to_unix(706020175)) == "2023-05-17T12:42:55Z"
    assert apple_to_unix(706020175) == pytest.approx(apple_to_unix(706020175298411392), abs=1)
    # message_summary_info edit times are float seconds
    assert _utc(apple_to_unix(690513474.2725511)) == "2022-11-19T01:17:54Z"
    # a pre-High-Sierra `date` in seconds: 2016-06-01T00:00:00Z
    assert apple_to_unix(486432000) == datetime(2016, 6, 1, tzinfo=UTC).timestamp()


def test_nanoseconds_before_2001() -> None:
    ns = -(86400 * 366) * 10**9  # 2000 was a leap year
    assert _utc(apple_to_unix(ns)) == "2000-01-01T00:00:00Z"


@pytest.mark.parametrize("value", [None, 0, 0.0, True, False, "706018963", math.nan, math.inf])
def test_unset_or_invalid_values_give_none(value: Any) -> None:
    assert apple_to_unix(value) is None


def test_writer_round_trip() -> None:
    assert unix_to_apple_ns(1684326163.581) == 706018963581000000
    assert unix_to_apple_ns(APPLE_EPOCH_OFFSET + 1) == 10**9
    assert unix_to_apple_seconds(1684326163.5) == 706018963.5


@given(st.floats(min_value=1.0e9, max_value=4.0e9, allow_nan=False))
def test_ns_round_trip_property(ts: float) -> None:
    back = apple_to_unix(unix_to_apple_ns(ts))
    assert back is not None and abs(back - ts) < 1e-6


@given(st.integers(min_value=10**15, max_value=2 * 10**18))
def test_integer_nanoseconds_are_exact_to_the_microsecond(ns: int) -> None:
    ts = apple_to_unix(ns)
    assert ts is not None and unix_to_apple_ns(ts) == pytest.approx(ns, abs=1000)
