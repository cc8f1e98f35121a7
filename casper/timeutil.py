"""Local time zone, ISO rendering and `--since/--until` parsing (ISO dates or natural phrases).

Imports: stdlib; dateparser lazily (it is slow to import).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from casper.errors import CasperError, ConfigError

_AGO = re.compile(r"\bago\b", re.I)  # "2 weeks ago" is a point in time, not a period


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
    """UTC seconds → ISO-8601 with the local offset; None for no time or an unset one (0)."""
    if ts is None or ts <= 0:
        return None
    return datetime.fromtimestamp(ts, tz).isoformat(timespec="seconds")


def parse_span(
    text: str, tz: tzinfo, now: datetime | None = None, *, locale: str = "en_US"
) -> tuple[date, date]:
    """An ISO date or a phrase → the local days it names, first and last.

    A period ("last March", "March", "last summer", "easter 2024", "last week", "2023") is
    resolved by the same rules as questions (casper.agent.enrich), so `--since` starts on its
    first day and `--until` ends on its last; "2 weeks ago" and other points go to dateparser.
    """
    text = text.strip()
    try:
        day = date.fromisoformat(text)
        return day, day
    except ValueError:
        pass
    now = now.astimezone(tz) if now is not None and now.tzinfo else now or datetime.now(tz)
    if not _AGO.search(text):
        from casper.agent.enrich import phrase_span

        span = phrase_span(text, now.date(), tz, locale=locale)  # type: ignore[arg-type]
        if span:
            return span
    import dateparser

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
            f"cannot read the date {text!r}",
            hint='use YYYY-MM-DD or a phrase like "last March", "2 weeks ago", "last summer"',
        )
    return parsed.date(), parsed.date()


def parse_day(text: str, tz: tzinfo, now: datetime | None = None) -> date:
    """An ISO date or a natural phrase ("last March", "2 weeks ago") → its first local day."""
    return parse_span(text, tz, now)[0]


def days_to_utc(
    first: date | None, last: date | None, tz: tzinfo
) -> tuple[float | None, float | None]:
    """Local calendar days → UTC seconds: the start of `first`, the end of the whole `last` day.

    The one place a day range becomes timestamps (CLI options, the agent's date hints).
    """
    start = None if first is None else datetime.combine(first, time.min, tz).timestamp()
    end = None
    if last is not None:
        end = datetime.combine(last + timedelta(days=1), time.min, tz).timestamp()
    return start, end


def day_bounds(
    since: str | None,
    until: str | None,
    tz: tzinfo,
    now: datetime | None = None,
    *,
    locale: str = "en_US",
) -> tuple[float | None, float | None]:
    """`--since` (start of its first day) and `--until` (end of its last day) as UTC seconds."""
    return days_to_utc(*span_days(since, until, tz, now, locale=locale), tz)


def span_days(
    since: str | None,
    until: str | None,
    tz: tzinfo,
    now: datetime | None = None,
    *,
    locale: str = "en_US",
) -> tuple[date | None, date | None]:
    """The first day `since` names and the last day `until` names (None where not given)."""
    first = parse_span(since, tz, now, locale=locale)[0] if since else None
    last = parse_span(until, tz, now, locale=locale)[1] if until else None
    return first, last
