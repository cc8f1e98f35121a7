"""One time zone for every command: always a named ZoneInfo, never a fixed
offset, so nothing precomputed for the zone goes stale at a daylight-saving change."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import casper.dates.zones as timeutil
from casper.dates.zones import local_tz
from casper.errors import ConfigError
from casper.stats import LocalClock, zone_id

WINTER = datetime(2024, 3, 30, 12, 0, tzinfo=UTC).timestamp()  # GMT, UTC+0
SUMMER = datetime(2024, 4, 1, 12, 0, tzinfo=UTC).timestamp()  # BST, UTC+1 since 31 March


def _zone_file(name: str) -> Path:
    import tzdata

    return Path(tzdata.__file__).parent / "zoneinfo" / name


@pytest.fixture
def machine_without_zone_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A machine whose zone has no name anywhere (no $TZ, tzlocal fails): only the rules in
    /etc/localtime, here London's."""
    import tzlocal

    def no_name() -> str:
        raise LookupError("no zone name on this machine")

    monkeypatch.delenv("TZ", raising=False)
    monkeypatch.setattr(tzlocal, "get_localzone_name", no_name)
    localtime = tmp_path / "localtime"
    shutil.copy(_zone_file("Europe/London"), localtime)
    monkeypatch.setattr(timeutil, "LOCALTIME", localtime)
    return localtime


def test_configured_zone_wins_then_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", ":America/New_York")  # POSIX's leading colon is allowed
    assert local_tz().key == "America/New_York"
    assert local_tz("Asia/Tokyo").key == "Asia/Tokyo"


def test_an_unknown_configured_zone_is_an_error_with_a_hint() -> None:
    with pytest.raises(ConfigError) as err:
        local_tz("Mars/Olympus")
    assert "Mars/Olympus" in err.value.message and "Europe/London" in (err.value.hint or "")


def test_fallback_zone_keeps_dst_and_one_id_all_year(machine_without_zone_name: Path) -> None:
    tz = local_tz()
    assert isinstance(tz, ZoneInfo)
    # the rules, not today's offset: winter and summer differ by the DST hour
    assert datetime.fromtimestamp(WINTER, tz).utcoffset().total_seconds() == 0
    assert datetime.fromtimestamp(SUMMER, tz).utcoffset().total_seconds() == 3600
    # the id stats are stored under is the same either side of the change, and run to run
    assert zone_id(tz) == zone_id(local_tz()) == tz.key
    assert tz.key.startswith("localtime-")
    assert LocalClock(tz)(WINTER) == (20240330, 12)
    assert LocalClock(tz)(SUMMER) == (20240401, 13)


def test_a_named_zone_id_does_not_change_at_dst() -> None:
    tz = local_tz("Europe/London")
    assert zone_id(tz) == "Europe/London"
    assert LocalClock(tz)(WINTER) == (20240330, 12)
    assert LocalClock(tz)(SUMMER) == (20240401, 13)


def test_ask_uses_the_zone_index_uses(machine_without_zone_name: Path, tmp_path: Path) -> None:
    from casper.app.handlers import zone
    from casper.app.runtime import Runtime
    from casper.config import load_config

    cfg = load_config(tmp_path / "home")
    asked = zone(Runtime(cfg))  # the zone `ask` answers in, in-process or in the service
    assert zone_id(asked) == zone_id(local_tz(cfg.timezone))
    assert asked.utcoffset(datetime(2024, 7, 1)).total_seconds() == 3600  # not UTC
