"""Local time zone, ISO rendering and `--since/--until` parsing (ISO dates or natural phrases).

Imports: stdlib; dateparser lazily (it is slow to import).
"""

from __future__ import annotations

import os
from datetime import date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from casper.errors import CasperError, ConfigError


def local_tz(name: str | None = None) -> tzinfo:
    """The configured zone, else $TZ, else the machine's local zone."""
    for candidate in (name, os.environ.get("TZ")):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                if candidate == name:
                    raise ConfigError(f"unknown time zone {name!r}") from exc
    try:
        link = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in link:
            return ZoneInfo(link.split("zoneinfo/", 1)[1])
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    return datetime.now().astimezone().tzinfo or ZoneInfo("UTC")


def iso(ts: float | None, tz: tzinfo) -> str | None:
    """UTC seconds → ISO-8601 with the local offset."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz).isoformat(timespec="seconds")


def parse_day(text: str, tz: tzinfo, now: datetime | None = None) -> date:
    """An ISO date or a natural phrase ("last March", "2 weeks ago") → a local calendar day."""
    text = text.strip()
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    import dateparser

    now = now or datetime.now(tz)
    parsed = dateparser.parse(
        text,
        settings={
            "PREFER_DATES_FROM": "past",
            "RELATIVE_BASE": now.replace(tzinfo=None),
            "PREFER_DAY_OF_MONTH": "first",
        },
    )
    if parsed is None:
        raise CasperError(
            f"cannot read the date {text!r}", hint="use YYYY-MM-DD or a phrase like 'last March'"
        )
    return parsed.date()


def day_bounds(
    since: str | None, until: str | None, tz: tzinfo, now: datetime | None = None
) -> tuple[float | None, float | None]:
    """`--since` (start of that day) and `--until` (end of that whole day) as UTC seconds."""
    start = end = None
    if since:
        start = datetime.combine(parse_day(since, tz, now), time.min, tz).timestamp()
    if until:
        end_day = parse_day(until, tz, now) + timedelta(days=1)
        end = datetime.combine(end_day, time.min, tz).timestamp()
    return start, end
