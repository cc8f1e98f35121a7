"""The date of a named holiday in a year, for the user's locale.

Public holidays come from the `holidays` package (its country calendars, in English), Easter
from `dateutil.easter`; only days that no library knows for a country stay here as rules:
Mother's and Father's Day outside the US, the fixed-date observances, and the US-only names
("Thanksgiving", "Memorial Day") when the country has no such day.
Imports: stdlib; holidays and dateutil inside the functions (only a holiday asked of a
calendar needs them; the cold search loads this module without them). Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import date, timedelta

# The names each key has in the `holidays` calendars (English), lower case.
_CALENDAR_NAMES: dict[str, frozenset[str]] = {
    "thanksgiving": frozenset({"thanksgiving day", "thanksgiving"}),
    "christmas": frozenset({"christmas day", "christmas"}),
    "christmas_eve": frozenset({"christmas eve"}),
    "new_year": frozenset({"new year's day"}),
    "new_years_eve": frozenset({"new year's eve"}),
    "independence_day": frozenset({"independence day"}),
    "memorial_day": frozenset({"memorial day"}),
    "labour_day": frozenset(
        {
            "labor day",
            "labour day",
            "may day",
            "worker's day",
            "workers' day",
            "workers day",
            "international workers' day",
        }
    ),  # fmt: skip
    "mothers_day": frozenset({"mother's day", "mothering sunday"}),
    "fathers_day": frozenset({"father's day"}),
    "valentines_day": frozenset({"valentine's day"}),
    "halloween": frozenset({"halloween"}),
}


def country_of(locale: str) -> str:
    """ "en_GB" → "GB"; a bare language ("en") → "US", the calendar the phrases come from."""
    parts = locale.replace("-", "_").split(".")[0].split("_")
    return parts[1].upper() if len(parts) > 1 and len(parts[1]) == 2 else "US"


def holiday_date(key: str, year: int, locale: str = "en_US") -> date:
    """The day `key` (a _CALENDAR_NAMES key or "easter") falls on in `year` where the user lives."""
    if key == "easter":
        return _easter(year)
    country = country_of(locale)
    found = _calendar(country, year).get(key)
    if found is not None:
        return found
    rule = _RULES[key]
    return rule(year, country)


@functools.lru_cache(maxsize=64)
def _calendar(country: str, year: int) -> dict[str, date]:
    """Key → day from the country's calendar in `holidays` ({} for a country it lacks)."""
    import holidays

    try:
        probe = holidays.country_holidays(country)
    except NotImplementedError:
        return {}
    language = "en_US" if "en_US" in (probe.supported_languages or ()) else None
    days = holidays.country_holidays(
        country, years=year, language=language, categories=probe.supported_categories
    )
    by_name = {
        name.lower(): day for day, names in sorted(days.items()) for name in names.split("; ")
    }
    out: dict[str, date] = {}
    for key, names in _CALENDAR_NAMES.items():
        hit = next((by_name[n] for n in names if n in by_name), None)
        if hit is not None:
            out[key] = hit
    return out


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th (1-based; -1 = last) `weekday` (Monday 0) of a month."""
    first = date(year, month, 1)
    if n > 0:
        return first + timedelta((weekday - first.weekday()) % 7 + 7 * (n - 1))
    nxt = date(year + month // 12, month % 12 + 1, 1)
    last = nxt - timedelta(1)
    return last - timedelta((last.weekday() - weekday) % 7)


def _easter(year: int) -> date:
    from dateutil.easter import easter

    return easter(year)


_SUNDAY, _MONDAY, _THURSDAY = 6, 0, 3


def _mothers_day(year: int, country: str) -> date:
    if country in ("GB", "IE", "NG"):  # Mothering Sunday: the fourth Sunday of Lent
        return _easter(year) - timedelta(21)
    if country in ("MX", "GT", "SV", "QA", "OM", "BH", "AE"):
        return date(year, 5, 10)
    if country in ("ES", "PT", "LT", "HU"):
        return nth_weekday(year, 5, _SUNDAY, 1)
    if country == "FR":  # last Sunday of May, moved a week when Pentecost falls on it
        day = nth_weekday(year, 5, _SUNDAY, -1)
        return day + timedelta(7) if day == _easter(year) + timedelta(49) else day
    if country == "AR":
        return nth_weekday(year, 10, _SUNDAY, 3)
    return nth_weekday(year, 5, _SUNDAY, 2)  # US, CA, AU, NZ, DE, IT, JP and most others


def _fathers_day(year: int, country: str) -> date:
    if country in ("AU", "NZ", "FJ", "PG"):
        return nth_weekday(year, 9, _SUNDAY, 1)
    if country in ("IT", "ES", "PT", "BE", "BO", "HR"):  # Saint Joseph's day
        return date(year, 3, 19)
    if country in ("DE", "AT", "CH"):  # Ascension Day (Vatertag)
        return _easter(year) + timedelta(39)
    return nth_weekday(year, 6, _SUNDAY, 3)  # US, GB, CA, FR, IN and most others


def _labour_day(year: int, country: str) -> date:
    if country in ("US", "CA"):
        return nth_weekday(year, 9, _MONDAY, 1)
    if country == "AU":  # set per state; October's is NSW's, ACT's and SA's (most people)
        return nth_weekday(year, 10, _MONDAY, 1)
    return date(year, 5, 1)  # most of the world; calendars that know better are asked first


_RULES: dict[str, Callable[[int, str], date]] = {
    # US names with no counterpart in the user's country: the American day is what is meant
    "thanksgiving": lambda y, c: nth_weekday(y, 11, _THURSDAY, 4),
    "memorial_day": lambda y, c: nth_weekday(y, 5, _MONDAY, -1),
    "independence_day": lambda y, c: date(y, 7, 4),
    "fourth_of_july": lambda y, c: date(y, 7, 4),  # a date, whatever the country
    "christmas": lambda y, c: date(y, 12, 25),
    "christmas_eve": lambda y, c: date(y, 12, 24),
    "new_year": lambda y, c: date(y, 1, 1),
    "new_years_eve": lambda y, c: date(y, 12, 31),
    "valentines_day": lambda y, c: date(y, 2, 14),
    "halloween": lambda y, c: date(y, 10, 31),
    "labour_day": _labour_day,
    "mothers_day": _mothers_day,
    "fathers_day": _fathers_day,
}
