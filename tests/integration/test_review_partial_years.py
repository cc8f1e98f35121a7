"""`casper review` on years the history only partly covers (the demo runs 2022-03-02 →
2024-10-28): a partial year is compared with the same dates of the other year, and says so; a
year with no history to compare with is not compared; a year outside the history is an error,
not an empty page; a tie for the busiest day shows every day of it; `--share` never labels a
person like a rank."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import demo_home_in_its_zone

runner = CliRunner()


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_home_in_its_zone(tmp_path_factory.mktemp("partial_years") / "home", demo_corpus)


def run(home: Path, *args: str) -> str:
    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result.stdout


def review(home: Path, year: str) -> dict:
    return json.loads(run(home, "review", year, "--json"))


def total(home: Path, since: str, until: str) -> tuple[int, int, int]:
    """(sent, received, active days) of the owner over those days, as `stats me` counts them."""
    d = json.loads(run(home, "stats", "me", "--since", since, "--until", until, "--json"))
    return d["sent"], d["received"], d["active_days"]


def history(home: Path) -> tuple[str, str]:
    """The first and last local day with a message, read from the store with plain SQL."""
    conn = sqlite3.connect(home / "casper.sqlite")
    first, last = conn.execute(
        "SELECT min(lday), max(lday) FROM messages WHERE kind != 'system'"
    ).fetchone()
    conn.close()
    return tuple(f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d}" for d in (first, last))  # type: ignore[return-value]


def figures(y: dict) -> tuple[int, int, int]:
    return y["sent"], y["received"], y["active_days"]


def test_the_demo_history_is_what_these_tests_assume(home: Path) -> None:
    assert history(home) == ("2022-03-02", "2024-10-28")


def test_a_year_the_history_ends_inside_is_compared_over_the_same_dates(
    home: Path, tmp_path: Path
) -> None:
    doc = review(home, "2024")
    assert doc["history"] == {"first": "2022-03-02", "last": "2024-10-28"}
    compared = doc["compared"]
    assert compared["days"] == ["01-01", "10-28"] and compared["whole_year"] is False
    assert figures(compared["this"]) == total(home, "2024-01-01", "2024-10-28")
    assert figures(doc["before"]) == total(home, "2023-01-01", "2023-10-28")
    # the year's own figures stay the whole year as the history holds it
    assert figures(doc["this"]) == total(home, "2024-01-01", "2024-12-31")

    out = tmp_path / "2024.html"
    summary = run(home, "review", "2024", "-o", str(out))
    sent, received, _days = total(home, "2023-01-01", "2023-10-28")
    assert f"2023: {sent + received:,}" in summary  # the same dates, not all of 2023
    assert "same dates" in summary and "2024-10-28" in summary
    html = out.read_text(encoding="utf-8")
    assert "same dates" in html
    assert "Last message of the year" not in html  # the history's last, not the year's
    assert "history ends" in html


def test_months_outside_the_history_are_not_drawn_as_empty_bars(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "2024.html"
    run(home, "review", "2024", "-o", str(out))
    html = out.read_text(encoding="utf-8")
    months = html[html.index("<svg") : html.index("</svg>")]
    totals = re.findall(r">(\d[\d,]*)</text>", months)
    assert len(totals) == 10  # January to October; November and December hold no history


def test_a_year_before_a_partial_one_is_compared_over_the_dates_both_cover(home: Path) -> None:
    doc = review(home, "2023")  # 2022 is held from 2022-03-02 on
    compared = doc["compared"]
    assert compared["days"] == ["03-02", "12-31"] and compared["whole_year"] is False
    assert figures(compared["this"]) == total(home, "2023-03-02", "2023-12-31")
    assert figures(doc["before"]) == total(home, "2022-03-02", "2022-12-31")
    summary = run(home, "review", "2023", "--json")
    assert json.loads(summary)["new_people"] is not None  # 2022 is in the history: new is known


def test_a_year_the_history_starts_inside_is_not_compared_with_nothing(
    home: Path, tmp_path: Path
) -> None:
    doc = review(home, "2022")
    assert doc["before"] is None and doc["compared"] is None
    assert doc["new_people"] is None  # everyone's first message is 2022: nobody is known new
    assert all(p["rank_before"] is None for p in doc["top_people"])
    out = tmp_path / "2022.html"
    summary = run(home, "review", "2022", "-o", str(out))
    assert "2021: 0" not in summary
    assert "(new" not in summary and "new this year" not in summary
    assert "history starts 2022-03-02" in summary
    html = out.read_text(encoding="utf-8")
    assert "new in the top" not in html and "New this year" not in html
    assert "First message of the year" not in html
    assert "history starts" in html


@pytest.mark.parametrize("year", ["2021", "1999", "2031"])
def test_a_year_outside_the_history_is_an_error(home: Path, tmp_path: Path, year: str) -> None:
    out = tmp_path / f"{year}.html"
    for args in (["-o", str(out)], ["--json"]):
        result = runner.invoke(app, ["review", year, *args, "--home", str(home)])
        assert result.exit_code == 1, result.output
        assert "error:" in result.output
        assert "2022-03-02" in result.output and "2024-10-28" in result.output
        assert not result.stdout.strip().startswith("{")
    assert not out.exists()


def test_a_tie_for_the_busiest_day_shows_every_day_of_it(home: Path, tmp_path: Path) -> None:
    conn = sqlite3.connect(home / "casper.sqlite")
    per_day = conn.execute(
        "SELECT lday, count(*) FROM messages WHERE kind != 'system' "
        "AND lday BETWEEN 20230101 AND 20231231 GROUP BY lday"
    ).fetchall()
    conn.close()
    most = max(n for _d, n in per_day)
    tied = sorted(
        f"{d // 10000}-{d // 100 % 100:02d}-{d % 100:02d}" for d, n in per_day if n == most
    )
    assert len(tied) >= 2  # the demo has one: what this test is about
    doc = review(home, "2023")
    assert doc["busiest_day"]["days"] == tied and doc["busiest_day"]["messages"] == most
    assert doc["busiest_day"]["day"] == tied[0]
    out = tmp_path / "2023.html"
    summary = run(home, "review", "2023", "-o", str(out))
    html = out.read_text(encoding="utf-8")
    for day in tied:
        assert day in summary and day in html


def test_a_shared_review_names_nobody_like_a_rank(home: Path, tmp_path: Path) -> None:
    shared = json.loads(run(home, "review", "2024", "--share", "--json"))
    names = [p["name"] for p in shared["top_people"]]
    assert len(set(names)) == len(names)
    for name in names:  # "#1" beside rank #1 reads as a rank: a person's label has letters
        assert not name.startswith("#") and re.search(r"[A-Za-z]", name), name
    summary = run(home, "review", "2024", "--share", "-o", str(tmp_path / "shared.html"))
    assert not re.search(r"\d\. #\d", summary)
