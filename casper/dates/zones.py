"""The one local time zone every command uses, and ISO rendering of UTC seconds in it.

Imports: stdlib, casper.errors; tzlocal inside the function that asks it (only when no zone is
set; it loads slowly).
"""

from __future__ import annotations

import hashlib
import io
import os
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from casper.errors import ConfigError


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
