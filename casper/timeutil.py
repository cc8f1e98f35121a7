"""Local time zone, ISO rendering and `--since/--until` parsing (ISO dates or natural phrases).

Imports: stdlib; dateparser lazily (it is slow to import).
"""

from __future__ import annotations

import hashlib
import io
import os
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from casper.errors import CasperError, ConfigError


def local_tz(name: str | None = None) -> ZoneInfo:
    """The one zone every command uses: the configured one, else $TZ, else the machine's.

    Always a ZoneInfo, never a fixed offset: an offset taken "now" changes at each DST switch,
    which would make stats precomputed for the zone look stale twice a year.
    """
    for candidate in (name, os.environ.get("TZ", "").lstrip(":")):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                if candidate == name:
                    raise ConfigError(
                        f"unknown time zone {name!r}",
                        hint='use an IANA name such as "Europe/London" for `timezone`',
                    ) from exc
    return _machine_zone()


LOCALTIME = Path("/etc/localtime")  # the machine's zone rules (macOS and Linux)


def _machine_zone() -> ZoneInfo:
    """The machine's zone by IANA name (tzlocal reads the platform's settings), else the rules
    in /etc/localtime under a name made from its content, else UTC."""
    try:
        import tzlocal

        return ZoneInfo(tzlocal.get_localzone_name())
    except Exception:  # noqa: BLE001 - tzlocal raises assorted errors on odd setups
        pass
    try:
        data = LOCALTIME.read_bytes()
        key = "localtime-" + hashlib.sha256(data).hexdigest()[:12]
        return ZoneInfo.from_file(io.BytesIO(data), key=key)
    except (OSError, ValueError):
        return ZoneInfo("UTC")


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
