"""Every date the docs show works: README.md and ../shared/design/CLI.md
examples of `--since`/`--until` and of the "Dates ..." sentence, read from the files."""

from __future__ import annotations

import re
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from casper.dates.ranges import date_range, parse_span
from tests.paths import REPO, SHARED

TZ = ZoneInfo("Europe/London")
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=TZ)  # a Sunday
DOCS = [REPO / "README.md", SHARED / "design" / "CLI.md"]

# what each example means on NOW: the first and last local day it names
EXPECTED = {
    "last March": ("2026-03-01", "2026-03-31"),
    "2 weeks ago": ("2026-11-08", "2026-11-08"),
    "2024-01-01": ("2024-01-01", "2024-01-01"),
    "2024-03-01": ("2024-03-01", "2024-03-01"),
}
# a quoted phrase or an unquoted date (prose such as "--until they are" is not an example)
_FLAG = re.compile(r"--(?:since|until)\s+(\"[^\"]+\"|'[^']+'|\d[\w-]*)")
_QUOTED = re.compile(r"\"([^\"]+)\"|`(\d{4}-\d{2}-\d{2})`")


def doc_examples() -> set[str]:
    """`--since X` / `--until X` values (not the `D` placeholder) and the dates quoted in
    the sentences that say which dates are accepted."""
    found: set[str] = set()
    for path in DOCS:
        text = path.read_text()
        for m in _FLAG.finditer(text):
            value = m.group(1).strip("\"'")
            found.add(value)
        for para in re.split(r"\n\s*\n", text):
            for sentence in re.split(r"(?<=\.)\s", para.replace("\n", " ")):
                if re.search(r"\bDates\b.*\baccept", sentence):
                    found |= {a or b for a, b in _QUOTED.findall(sentence)}
    return found


def test_the_docs_examples_are_found() -> None:
    assert set(EXPECTED) <= doc_examples()


@pytest.mark.parametrize("example", sorted(doc_examples()))
def test_every_documented_date_parses(example: str) -> None:
    first, last = parse_span(example, TZ, NOW)
    assert first <= last <= NOW.date()
    if example in EXPECTED:  # the value is known: check it exactly
        assert (first.isoformat(), last.isoformat()) == EXPECTED[example]
    since, until = date_range(example, example, TZ, NOW)
    assert since == datetime.combine(first, datetime.min.time(), TZ).timestamp()
    assert until is not None and until > since


@pytest.mark.parametrize(
    "month", ["january", "February", "march", "April", "may", "June", "july", "August",
              "september", "October", "november", "December"],
)  # fmt: skip
def test_every_last_month_works(month: str) -> None:
    first, last = parse_span(f"last {month}", TZ, NOW)
    number = datetime.strptime(month.title(), "%B").month
    year = 2026 if number < 11 else 2025  # "last November" in November is a year back
    assert first == date(year, number, 1)
    assert last.month == number and (last.replace(day=1) == first)


def test_until_a_month_includes_the_whole_month() -> None:
    _, end = date_range(None, "last March", TZ, NOW)
    assert end == datetime(2026, 4, 1, tzinfo=TZ).timestamp()
