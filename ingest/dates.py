"""Apple's 2001-01-01 UTC epoch (seconds or nanoseconds) to and from Unix seconds. Pure."""

from __future__ import annotations

import math

APPLE_EPOCH_OFFSET = 978307200  # seconds from 1970-01-01 to 2001-01-01, both UTC
NS_PER_SECOND = 1_000_000_000
# Seconds-since-2001 stays below 1e11 until the year 5170, while any nanosecond value past
# 2001-01-01T00:01:40Z is above it, so the magnitude tells the two units apart.
NS_THRESHOLD = 100_000_000_000  # 1e11, as an int: compares exactly with int columns


def apple_to_unix(value: int | float | None) -> float | None:
    """Apple epoch value (ns since High Sierra, s before and in some columns) → Unix seconds."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value == 0 or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if abs(value) > NS_THRESHOLD:
        if isinstance(value, int):
            whole, rest = divmod(value, NS_PER_SECOND)
            return whole + APPLE_EPOCH_OFFSET + rest / NS_PER_SECOND
        return value / NS_PER_SECOND + APPLE_EPOCH_OFFSET
    return float(value) + APPLE_EPOCH_OFFSET


def unix_to_apple_ns(ts: float) -> int:
    """Unix seconds → nanoseconds since 2001-01-01 UTC, as modern chat.db `date` columns store."""
    micros = round(ts * 1_000_000)  # a float Unix time carries no more than microseconds
    return (micros - APPLE_EPOCH_OFFSET * 1_000_000) * 1_000


def unix_to_apple_seconds(ts: float) -> float:
    """Unix seconds → seconds since 2001-01-01 UTC (attachment dates, edit times, old DBs)."""
    return ts - APPLE_EPOCH_OFFSET
