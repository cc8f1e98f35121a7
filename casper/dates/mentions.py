"""PURE: the dates a message mentions ("tmrw", "next fri", "feb 10th", "in '17"), resolved
against the day it was sent, as search terms; and the terms the dates a question names are
searched with.

People text about a day long before or after it: "booked flights!! lisbon the 8th of july"
(texted in May), "still not over that final in '17" (texted in 2024). A question naming the
event's date ("Where am I going on 8 July?", "What match did Mum watch in 2017?") shares no day
with the texts, and BM25 cannot match "'17" with "2017". So the indexer stores, per chunk, terms
for the absolute dates its messages mention:

    d20240708   a day                    md0708   that day in any year
    m202407     a month                  y2024    a year

A day gives its month and year terms too, and a month its year term, so a question naming
July 2024 finds the message that planned the 8th. Durations ("for 3 days", "2 weeks long")
are not dates and give nothing.

Rules only, no dateparser (it costs milliseconds a message: minutes over a history). A
message's yearless day is the nearest one from a few weeks back onwards (plans look ahead);
"next fri" is both the coming Friday and next week's (people mean either).

Imports: stdlib, casper.dates.rules (names of months, weekdays, numbers), casper.dates.holidays
(Easter, lazily through it).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date, timedelta

from casper.dates.holidays import holiday_date

# how far back a yearless "feb 10th" in a message may point before it means next year's
LOOKBACK_DAYS = 45
_MONTH_WORDS = {
    **{m.lower(): i for i, m in enumerate(calendar.month_name) if m},
    **{m.lower(): i for i, m in enumerate(calendar.month_abbr) if m},
    "sept": 9,
}
_MONTH_RE = "|".join(sorted(_MONTH_WORDS, key=len, reverse=True))
_WEEKDAY_WORDS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tues": 1, "tue": 1, "wednesday": 2, "weds": 2,
    "wed": 2, "thursday": 3, "thurs": 3, "thur": 3, "thu": 3, "friday": 4, "fri": 4,
    "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}  # fmt: skip
_FULL_WEEKDAYS = {w for w in _WEEKDAY_WORDS if w.endswith("day")}
_WEEKDAY_RE = "|".join(sorted(_WEEKDAY_WORDS, key=len, reverse=True))
_ORD = r"(\d{1,2})(?:st|nd|rd|th)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR4 = r"((?:19|20)\d\d)"
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SOUTHERN = ("Australia/", "Antarctica/", "Pacific/Auckland", "America/Argentina/",
             "America/Sao_Paulo", "America/Santiago", "America/Montevideo",
             "Africa/Johannesburg")  # fmt: skip
_FIXED_HOLIDAYS = {  # day and month
    "christmas eve": (24, 12), "xmas eve": (24, 12), "christmas": (25, 12), "xmas": (25, 12),
    "boxing day": (26, 12), "new year's eve": (31, 12), "new years eve": (31, 12),
    "nye": (31, 12), "new year's day": (1, 1), "new years day": (1, 1), "halloween": (31, 10),
    "valentine's day": (14, 2), "valentines day": (14, 2), "valentine's": (14, 2),
    "valentines": (14, 2), "bonfire night": (5, 11),
}  # fmt: skip
_HOLIDAY_RE = "|".join(sorted([*map(re.escape, _FIXED_HOLIDAYS), "easter"], key=len, reverse=True))

_LETTERS = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")
_MONTHS = frozenset(_MONTH_WORDS)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WEEKDAYS = frozenset(_WEEKDAY_WORDS)
_UNITS = _words(
    "sec secs second seconds min mins minute minutes hr hrs hour hours day days "
    "night nights week weeks wk wks month months year years yr yrs"
)
_COUNT_WORDS = _words(
    "a an one two three four five six seven eight nine ten eleven twelve couple few several"
)
_RELATIVE = _words("tomorrow tmrw tmr tomoz moro mrw yesterday night weekend month year")
_HOLIDAY_WORDS = _words(
    "christmas xmas eve nye new halloween valentine valentines easter boxing bonfire"
)
# "for 3 days", "2 weeks long", "a 10 minute walk", "3 days till payday": a length of time
_DURATION = re.compile(
    r"\b(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|"
    r"few|several)[\s-]+(?:sec(?:ond)?|min(?:ute)?|h(?:ou)?r|day|night|week|wk|month|year|"
    r"yr)s?\b(?!\s+ago)",
    re.I,
)
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
           "couple of": 2, "a couple of": 2, "few": 3, "a few": 3}  # fmt: skip
_COUNT_RE = r"\d{1,2}|" + "|".join(sorted(_COUNTS, key=len, reverse=True))
# Read before durations are set aside: "in 2 weeks" and "3 days ago" are dates.
_OFFSETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ago", re.compile(rf"\b({_COUNT_RE})\s+(day|week|month|year)s?\s+ago\b", re.I)),
    (
        "in_n",
        re.compile(
            rf"\bin\s+({_COUNT_RE})\s+(day|week|month)s?(?!\s+(?:time|from))\b"
            r"|\bin\s+(a|one)\s+(week|month)(?:'s|s)?\s+time\b",
            re.I,
        ),
    ),
)
_UNITS_AFTER = (
    r"(?!\s*(?:steps|words|calories|cals|kcal|miles|km|metres|meters|ft|feet|"
    r"people|quid|pounds|dollars|euros|followers|likes|views|points|pts|mah|ml|mg|"
    r"kg|lbs|k|m|g)\b)"
)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.I))
    for kind, pattern in (
        # ISO 2024-02-10
        ("iso", r"\b((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})\b"),
        # 10th (of) feb(ruary) (2024), feb(ruary) (the) 10th (2024)
        ("day_month", rf"\b{_DAY}\s+(?:of\s+)?({_MONTH_RE})\b\.?(?:,?\s+{_YEAR4}\b)?"),
        ("month_day", rf"\b({_MONTH_RE})\.?\s+(?:the\s+)?{_DAY}\b(?:,?\s+{_YEAR4}\b)?"),
        # sat the 14th, thurs 13th
        ("weekday_day", rf"\b({_WEEKDAY_RE})\.?\s+(?:the\s+)?{_ORD}\b"),
        # on the 7th, the 19th!!  (not "my 30th birthday", "the 3rd time")
        (
            "day",
            rf"\b(?:on\s+the|the|on)\s+{_ORD}\b(?!\s+(?:time|floor|row|place|century|"
            r"birthday|anniversary|go|attempt|one|day|week|month|year|of\b))",
        ),
        # next fri, this saturday, on monday, last sun
        ("weekday", rf"\b(?:(next|this|coming|on|last)\s+)?({_WEEKDAY_RE})\b(?:\s+(night))?"),
        ("holiday", rf"\b(?:(last|this|next)\s+)?({_HOLIDAY_RE})(?:\s+{_YEAR4})?\b"),
        # summer 2015, last summer, next winter
        (
            "season",
            rf"\b(?:(last|this|next|the)\s+)?(spring|summer|autumn|fall|winter)"
            rf"(?:\s+(?:of\s+)?{_YEAR4}\b)?",
        ),
        # in june, next march, end of may 2021, july 2023
        (
            "month",
            rf"\b(?:(in|by|until|till|since|from|next|last|this|early|mid|late|end of|"
            rf"start of|beginning of)\s+)?({_MONTH_RE})\b(?:,?\s+(?:of\s+)?{_YEAR4}\b)?",
        ),
        (
            "relative",
            r"\b(the day after tomorrow|day after tomorrow|tomorrow|tmrw?|tomoz|2moro|"
            r"2mrw|yesterday|last night|(?:this|next|last) weekend|next month|"
            r"last month|next year|last year)\b",
        ),
        # in 2017, since 2015, '16 (an apostrophe year), 2019
        (
            "year",
            r"(?<![\d£$€#.,:/])(?:((?:19|20)\d\d)(?![\d%:.,]\d)|(?<![\w])['’](\d\d))\b"
            + _UNITS_AFTER,
        ),
    )
)


def message_terms(text: str, sent: date, zone: str = "") -> tuple[str, ...]:
    """The date terms of one message sent on local day `sent` (in the zone named `zone`,
    whose hemisphere decides the seasons); () for most messages."""
    found = _spans(text, sent, zone, ahead=True)
    return tuple(dict.fromkeys(_terms(found))) if found else ()


def question_terms(
    text: str, today: date, zone: str = "", covered_years: Sequence[int] = ()
) -> tuple[str, ...]:
    """The terms that find messages mentioning the dates `text` names: a day with a year is
    that day, one without a year that day in any year, a month without a year that month in
    each `covered_years`; relative phrases ("last summer") count back from `today`."""
    out: list[str] = []
    for found in _spans(text, today, zone, ahead=False, yearless=True):
        kind = found[0]
        if kind == "d":  # the most specific term only: "2023" would find every plan that year
            out.append(f"d{found[1]:%Y%m%d}")
        elif kind == "md":
            out.append(f"md{found[1]:02d}{found[2]:02d}")
        elif kind == "m":
            out.append(f"m{found[1]}{found[2]:02d}")
        elif kind == "mo":
            out += [f"m{year}{found[1]:02d}" for year in covered_years]
        else:
            out.append(f"y{found[1]}")
    return tuple(dict.fromkeys(out))


def range_terms(start: date, end: date) -> tuple[str, ...]:
    """Terms for an inclusive range of days: its years when whole, else its months when whole
    (or longer than two weeks), else its days."""
    if start > end:
        return ()
    if start == date(start.year, 1, 1) and end == date(end.year, 12, 31):
        return tuple(f"y{y}" for y in range(start.year, end.year + 1))
    if (end - start).days >= 14:
        months: list[str] = []
        y, m = start.year, start.month
        while (y, m) <= (end.year, end.month) and len(months) < 24:
            months.append(f"m{y}{m:02d}")
            y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        return tuple(months)
    return tuple(f"d{(start + timedelta(i)):%Y%m%d}" for i in range((end - start).days + 1))


def is_duration(phrase: str) -> bool:
    """True when `phrase` names a length of time ("3 days", "for 2 weeks"), not a date."""
    return bool(_DURATION.search(phrase)) and not re.search(r"\bago\b", phrase, re.I)


# ---- resolution ---------------------------------------------------------------------------
# A found date: ("d", day) | ("m", year, month) | ("y", year) | ("md", month, day) (no year,
# questions only) | ("mo", month) (a month without a year, questions only)
Found = tuple


def _terms(found: Iterable[Found]) -> Iterable[str]:
    for f in found:
        if f[0] == "d":
            day: date = f[1]
            yield from (f"d{day:%Y%m%d}", f"md{day:%m%d}", f"m{day:%Y%m}", f"y{day.year}")
        elif f[0] == "m":
            yield from (f"m{f[1]}{f[2]:02d}", f"y{f[1]}")
        elif f[0] == "y":
            yield f"y{f[1]}"


def _spans(text: str, ref: date, zone: str, *, ahead: bool, yearless: bool = False) -> list[Found]:
    """Every date in `text`, most specific pattern first; a span one pattern read is not read
    again by a later one. `ahead`: yearless days and bare weekdays look forward from `ref` (a
    message's plans) rather than back (a question). Only the patterns whose words the text
    has are tried: most messages have none (a long message costs microseconds, not a
    regex scan per pattern)."""
    lower = text.lower()
    if _MAYBE.search(lower) is None:  # one scan in C decides for most messages
        return []
    words = set(_LETTERS.findall(lower))
    digit = _DIGIT.search(lower) is not None
    if not digit and "'" not in lower and "’" not in lower and not (words & _ANY_WORD):
        return []
    taken: list[tuple[int, int]] = []
    out: list[Found] = []
    for kind, pattern in _ORDER:
        if not _TRIGGERS[kind](words, digit):
            continue
        for m in pattern.finditer(lower):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            if kind == "duration":  # set aside: no later pattern reads a length of time
                taken.append(m.span())
                continue
            found = _READERS[kind](m, ref, zone, ahead, yearless)
            if found:
                taken.append(m.span())
                out += found
    return out


def _ago(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    return [] if yearless else _offset(ref, -_count(m[1]), m[2].lower())


def _in_n(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    if yearless:
        return []
    return _offset(ref, _count(m[1] or m[3]), (m[2] or m[4]).lower())


def _offset(ref: date, n: int, unit: str) -> list[Found]:
    if unit == "day":
        return [("d", ref + timedelta(n))]
    if unit == "week":
        return [("d", ref + timedelta(7 * n))]
    if unit == "month":
        month = _add_months(ref.replace(day=1), n)
        return [("m", month.year, month.month)]
    return [("y", ref.year + n)]


def _count(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _COUNTS.get(word, 1)


def _iso(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    day = _date(int(m[1]), int(m[2]), int(m[3]))
    return [("d", day)] if day else []


def _day_month(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    return _dated(int(m[1]), _MONTH_WORDS[m[2].lower()], m[3], ref, yearless)


def _month_day(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    return _dated(int(m[2]), _MONTH_WORDS[m[1].lower()], m[3], ref, yearless)


def _dated(day: int, month: int, year: str | None, ref: date, yearless: bool) -> list[Found]:
    if not 1 <= day <= 31 or _date(2000, month, day) is None:  # 2000: a leap year
        return []
    if year:
        when = _date(int(year), month, day)
        return [("d", when)] if when else []
    if yearless:
        return [("md", month, day)]
    when = _nearest(ref, month, day)
    return [("d", when)] if when else []


def _weekday_day(
    m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool
) -> list[Found]:
    weekday, day = _WEEKDAY_WORDS[m[1].lower()], int(m[2])
    if not 1 <= day <= 31 or yearless:
        return []
    when = _day_of_month(ref, day)
    for _ in range(14):  # the next month whose `day` falls on that weekday
        if when is None or when.weekday() == weekday:
            break
        when = _day_of_month(_add_months(when.replace(day=1), 1), day)
    return [("d", when)] if when and when.weekday() == weekday else []


def _day(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    day = int(m[1])
    if yearless or not ahead or not 1 <= day <= 31:
        return []
    when = _day_of_month(ref, day)
    return [("d", when)] if when else []


def _weekday(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    word, name, night = (m[1] or "").lower(), m[2].lower(), m[3]
    if not word and not night and name not in _FULL_WEEKDAYS:
        return []  # "sat", "sun", "wed" alone are words, not days
    if yearless:
        return []  # a weekday in a question is relative to when it is asked: the date rules
    weekday = _WEEKDAY_WORDS[name]
    coming = ref + timedelta((weekday - ref.weekday()) % 7 or 7)
    if word == "last":
        return [("d", coming - timedelta(7))]
    if word == "next":
        following = ref - timedelta(ref.weekday()) + timedelta(7 + weekday)  # next week's
        return [("d", coming)] + ([("d", following)] if following != coming else [])
    if not word and not ahead:
        return []
    return [("d", coming)]


def _holiday(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    word, name, year = (m[1] or "").lower(), m[2].lower(), m[3]

    def on(y: int) -> date | None:
        if name == "easter":
            return holiday_date("easter", y)
        day, month = _FIXED_HOLIDAYS.get(name.replace("’", "'"), (0, 0))
        return _date(y, month, day)

    if year:
        when = on(int(year))
        return [("d", when)] if when else []
    if yearless and word not in ("last", "this", "next"):
        return []
    candidates = [d for y in (ref.year - 1, ref.year, ref.year + 1) if (d := on(y))]
    if word == "last":
        past = [d for d in candidates if d < ref]
        return [("d", past[-1])] if past else []
    floor = ref - timedelta(14 if ahead and word != "next" else 0)
    later = [d for d in candidates if d >= floor and (word != "next" or d > ref)]
    return [("d", later[0])] if later else []


def _season(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    word, name, year = (m[1] or "").lower(), m[2].lower(), m[3]
    start = _SEASONS[name]
    if zone.startswith(_SOUTHERN):
        start = (start + 5) % 12 + 1
    if year:
        first = int(year) - (1 if start == 12 else 0)
    elif word in ("last", "this", "next") and (ahead or word != "next"):
        current = ref.year - (1 if start == 12 and ref.month < 3 else 0)
        begun = (ref.year, ref.month) >= (current, start)
        if word == "last":
            first = current - (0 if begun and _add_months(date(current, start, 1), 3) <= ref
                               else 1)  # fmt: skip
        elif word == "next":
            first = current + (1 if begun else 0)
        else:
            first = current
    else:
        return []
    month_one = date(first, start, 1)
    return [("m", d.year, d.month) for d in (_add_months(month_one, i) for i in range(3))]


def _month(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    word, name, year = (m[1] or "").lower(), m[2].lower(), m[3]
    month = _MONTH_WORDS[name]
    if year:
        return [("m", int(year), month)]
    if not word:
        return []  # "march", "may", "jan" alone are words or names
    if yearless:
        if word in ("last", "next", "this"):
            return []  # relative to when it is asked: the question's date rules read it
        return [("mo", month)]
    if word in ("last", "since"):
        y = ref.year if month < ref.month or (word == "since" and month == ref.month) else (
            ref.year - 1)  # fmt: skip
    elif word == "next":
        y = ref.year if month > ref.month else ref.year + 1
    else:
        y = ref.year if month >= ref.month or (ref.month - month) * 30 <= LOOKBACK_DAYS else (
            ref.year + 1)  # fmt: skip
    return [("m", y, month)]


def _relative(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    if yearless:
        return []  # relative to when a question is asked: the question's date rules read it
    phrase = " ".join(m[1].lower().split())
    if phrase.endswith("day after tomorrow"):
        return [("d", ref + timedelta(2))]
    if phrase in ("yesterday", "last night"):
        return [("d", ref - timedelta(1))]
    if phrase.endswith("weekend"):
        # this weekend's Saturday: the coming one on a weekday, else the one just begun
        saturday = ref + timedelta(5 - ref.weekday())
        if phrase.startswith("last"):
            saturdays = [saturday - timedelta(7)]
        elif phrase.startswith("next"):  # on a weekday people mean the coming one or the next
            saturdays = [saturday + timedelta(7)] + ([saturday] if ref.weekday() < 5 else [])
        else:
            saturdays = [saturday]
        return [("d", s + timedelta(i)) for s in saturdays for i in (0, 1)]
    if phrase.endswith("month"):
        month = _add_months(ref.replace(day=1), 1 if phrase.startswith("next") else -1)
        return [("m", month.year, month.month)]
    if phrase.endswith("year"):
        return [("y", ref.year + (1 if phrase.startswith("next") else -1))]
    return [("d", ref + timedelta(1))]  # tomorrow, tmrw, 2moro...


def _year(m: re.Match[str], ref: date, zone: str, ahead: bool, yearless: bool) -> list[Found]:
    if m[1]:
        year = int(m[1])
    else:
        short = int(m[2])
        year = 2000 + short if short <= (ref.year % 100) + 5 else 1900 + short
    return [("y", year)] if 1950 <= year <= ref.year + 10 else []


_ORDER = (*_OFFSETS, ("duration", _DURATION), *_PATTERNS)
_ANY_WORD = _MONTHS | _WEEKDAYS | _RELATIVE | _HOLIDAY_WORDS | frozenset(_SEASONS) | {"ago"}
# What a text needs for any date in it (the test at the top of `_spans` in one regex): a digit,
# an apostrophe, or one of those words as a whole run of letters. Set-building every message's
# words cost 40 % of the 1M-message lexical step's chunking (docs/performance.md); this search
# lets the ~90 % of messages with none of them through in one scan.
_MAYBE = re.compile(
    r"\d|'|’|(?<![a-z])(?:"
    + "|".join(re.escape(w) for w in sorted(_ANY_WORD, key=len, reverse=True))
    + r")(?![a-z])"
)


def maybe_dated(text: str) -> bool:
    """False when `text` cannot mention a date (no digit, apostrophe or date word): then
    `message_terms` is () without reading it further."""
    return _MAYBE.search(text.lower()) is not None


Trigger = Callable[[set[str], bool], bool]
_TRIGGERS: dict[str, Trigger] = {  # what a text must have for a pattern to be tried
    "ago": lambda w, d: "ago" in w,
    "in_n": lambda w, d: "in" in w and bool(w & _UNITS),
    "duration": lambda w, d: bool(w & _UNITS) and (d or bool(w & _COUNT_WORDS)),
    "iso": lambda w, d: d,
    "day_month": lambda w, d: d and bool(w & _MONTHS),
    "month_day": lambda w, d: d and bool(w & _MONTHS),
    "weekday_day": lambda w, d: d and bool(w & _WEEKDAYS),
    "day": lambda w, d: d and bool(w & {"the", "on"}),
    "weekday": lambda w, d: bool(w & _WEEKDAYS),
    "holiday": lambda w, d: bool(w & _HOLIDAY_WORDS),
    "season": lambda w, d: bool(w & _SEASONS.keys()),
    "month": lambda w, d: bool(w & _MONTHS),
    "relative": lambda w, d: bool(w & _RELATIVE),
    "year": lambda w, d: d,
}
_READERS = {
    "ago": _ago, "in_n": _in_n, "iso": _iso, "day_month": _day_month, "month_day": _month_day,
    "weekday_day": _weekday_day, "day": _day, "weekday": _weekday, "holiday": _holiday,
    "season": _season, "month": _month, "relative": _relative, "year": _year,
}  # fmt: skip


# ---- calendar helpers ---------------------------------------------------------------------
def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _nearest(ref: date, month: int, day: int) -> date | None:
    """The first `month`/`day` from LOOKBACK_DAYS before `ref` on."""
    floor = ref - timedelta(LOOKBACK_DAYS)
    for year in (ref.year - 1, ref.year, ref.year + 1, ref.year + 2):
        when = _date(year, month, day)
        if when is not None and when >= floor:
            return when
    return None


def _day_of_month(ref: date, day: int) -> date | None:
    """The `day`th of this month when it is today or later, else of the next month that has
    one."""
    month = ref.replace(day=1)
    if day < ref.day:
        month = _add_months(month, 1)
    for _ in range(3):
        when = _date(month.year, month.month, day)
        if when is not None:
            return when
        month = _add_months(month, 1)
    return None


def _add_months(first: date, n: int) -> date:
    index = first.year * 12 + first.month - 1 + n
    return date(index // 12, index % 12 + 1, 1)
