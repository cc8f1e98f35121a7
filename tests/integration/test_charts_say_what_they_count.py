"""Every chart says what it counts. A person's `sent` is one-to-one and their `received` every
chat: a chart of the two puts their group messages apart and says so, in the terminal, the PNG
and the review alike; the review's top people and "who do I text most" say the same. Reply
times are drawn from zero with months without a reply left as gaps; the bars over time start
at --since and end at --until (within the history); a week chart's months carry their year; a
chat's people are everyone who wrote there, not only who is in it now."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import DemoCorpus
from tests.helpers import demo_home_in_its_zone, use_fake_search_models

runner = CliRunner()


@pytest.fixture(scope="module")
def home(demo_corpus: DemoCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_home_in_its_zone(tmp_path_factory.mktemp("charts_say") / "home", demo_corpus)


def run(home: Path, *args: str) -> str:
    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result.stdout


def doc(home: Path, *args: str) -> dict:
    return json.loads(run(home, "stats", *args, "--json"))


def sql(home: Path, query: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(home / "casper.sqlite")
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def person_id(home: Path, name: str) -> str:
    return sql(home, "SELECT id FROM people WHERE name = ?", name)[0][0]


def one_to_one(home: Path, pid: str) -> list[int]:
    return [c for c, members in sql(home, "SELECT id, members FROM chats WHERE is_group = 0")
            if json.loads(members) == [pid]]  # fmt: skip


def drawn_figure(data: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The matplotlib figure `stats --png` draws for `data` (kept open to be read)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from casper.cli.charts import write_png

    kept: list[Any] = []
    monkeypatch.setattr(plt, "close", kept.append)
    write_png(data, tmp_path / "chart.png", tmp_path / "data")  # type: ignore[arg-type]
    assert len(kept) == 1
    return kept[0]


def test_a_persons_received_is_one_to_one_plus_groups_and_agrees_with_sql(home: Path) -> None:
    """Alex left the climbing group but wrote there: those messages are theirs in groups."""
    for name in ("Sam Rivera", "Alex Chen", "Priya Natarajan", "Mom"):
        pid = person_id(home, name)
        d = doc(home, name)
        chats = one_to_one(home, pid)
        holes = ",".join("?" * len(chats))
        theirs_1to1, theirs_all = (
            sql(home, "SELECT count(*) FROM messages WHERE kind != 'system' AND sender = ? "
                f"AND chat_id IN ({holes})", pid, *chats)[0][0],
            sql(home, "SELECT count(*) FROM messages WHERE kind != 'system' AND sender = ?",
                pid)[0][0],
        )  # fmt: skip
        split = d["chats"]
        assert d["received"] == theirs_all
        assert split["received_one_to_one"] == theirs_1to1
        assert split["received_in_groups"] == theirs_all - theirs_1to1, name
        assert sum(p.get("in_groups", 0) for p in d["series"]["over_time"]) == (
            theirs_all - theirs_1to1
        )


def test_the_terminal_chart_of_a_person_says_what_it_counts(home: Path) -> None:
    lines = run(home, "stats", "Sam").splitlines()
    at = next(i for i, line in enumerate(lines) if "messages by" in line)
    heading = " ".join(lines[at : at + 2])  # the title, and its legend when it has a line
    assert "one-to-one" in heading and "in groups" in heading, heading


def test_the_png_of_a_person_keeps_group_messages_apart(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = doc(home, "Sam")
    fig = drawn_figure(d, tmp_path, monkeypatch)
    over_time = fig.axes[0]
    legend = [t.get_text() for t in over_time.get_legend().get_texts()]
    split = d["chats"]
    assert any("one-to-one" in t and f"{split['sent_one_to_one']:,}" in t for t in legend), legend
    assert any(f"{split['received_one_to_one']:,}" in t for t in legend), legend
    assert any("in groups" in t and f"{split['received_in_groups']:,}" in t for t in legend)
    assert not any(f"({d['received']})" in t or f"({d['received']:,})" in t for t in legend)
    heights = [sum(bar.get_height() for bar in bars) for bars in over_time.containers]
    assert sorted(heights) == sorted([split["sent_one_to_one"], split["received_one_to_one"],
                                      split["received_in_groups"]])  # fmt: skip


def test_reply_times_start_at_zero_and_leave_months_without_replies_as_gaps(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = doc(home, "Climbing crew")
    months = d["series"]["replies"]["by_month"]
    periods = [p["period"] for p in months]
    first, last = periods[0], periods[-1]
    expected, y, m = [], int(first[:4]), int(first[5:])
    while f"{y:04d}-{m:02d}" <= last:
        expected.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    assert periods == expected  # every month, a month without a reply too
    quiet = [p for p in months if p["me"] is None and p["them"] is None]
    assert quiet  # the crew has months nobody answered anyone: what this test is about
    fig = drawn_figure(d, tmp_path, monkeypatch)
    replies = fig.axes[-1]
    assert replies.get_ylim()[0] == 0
    for line in replies.get_lines():
        ys = list(line.get_ydata())
        assert len(ys) == len(months)
        for p, value in zip(months, ys, strict=True):
            side = p["me" if line.get_label() == "me" else "them"]
            assert (side is None) == math.isnan(value)


def test_weekly_bars_start_at_since_and_months_end_at_until(home: Path) -> None:
    # Sam wrote nothing from 2024-01-04 to 2024-01-17: the chart still starts at --since
    weeks = doc(home, "Sam", "--since", "2024-01-04", "--until", "2024-03-31", "--by", "week")
    drawn = [p["period"] for p in weeks["series"]["over_time"]]
    assert drawn[0] == "2024-W01" and drawn[-1] == "2024-W13"
    # the group's last message is in June; the history goes on to October
    group = next(c for c in json.loads(run(home, "chats", "--json")) if "&" in c["name"])
    months = doc(home, "--chat", str(group["id"]), "--since", "2024-04-01", "--until",
                 "2024-08-31", "--by", "month")  # fmt: skip
    drawn = [p["period"] for p in months["series"]["over_time"]]
    assert drawn == ["2024-04", "2024-05", "2024-06", "2024-07", "2024-08"]


def test_a_week_chart_across_new_year_says_the_year(home: Path) -> None:
    from rich.console import Console
    from rich.text import Text

    from casper.cli.stats_view import stats_view

    d = doc(home, "Sam", "--since", "2023-11-01", "--until", "2024-02-29", "--by", "week")
    console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    for part in stats_view(d, 100, Text):  # type: ignore[arg-type]
        console.print(part)
    screen = console.export_text()
    chart = screen[screen.index("messages by week") : screen.index("when:")]
    assert "2023" in chart and "2024" in chart, chart


def test_a_chats_people_are_everyone_who_wrote_there(home: Path) -> None:
    crew = doc(home, "Climbing crew")
    query = ("SELECT count(DISTINCT sender) FROM messages WHERE chat_id = ? AND sender != 'me' "
             "AND kind != 'system'")  # fmt: skip
    wrote = sql(home, query, int(crew["scope"]["id"]))[0][0]
    assert crew["scope"]["members"] == wrote
    out = run(home, "stats", "Climbing crew")
    assert f"me and {wrote} others" in out.splitlines()[0]


def test_the_reviews_top_people_say_what_they_count(home: Path, tmp_path: Path) -> None:
    review = json.loads(run(home, "review", "2023", "--json"))
    for p in review["top_people"]:
        person = doc(home, p["id"], "--since", "2023-01-01", "--until", "2023-12-31")
        split = person["chats"]
        assert p["one_to_one"] == split["sent_one_to_one"] + split["received_one_to_one"]
        assert p["in_groups"] == split["received_in_groups"]
        assert p["messages"] == p["one_to_one"] + p["in_groups"]
    out = tmp_path / "2023.html"
    summary = run(home, "review", "2023", "-o", str(out))
    top = review["top_people"][0]
    assert re.search(rf"1\. {top['name']} {top['messages']:,} \({top['one_to_one']:,} one-to-one",
                     summary), summary  # fmt: skip
    html = out.read_text(encoding="utf-8")
    table = html[html.index("<table") : html.index("</table>")]
    assert "one-to-one" in table and "in groups" in table


def test_who_do_i_text_most_says_what_it_counts(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    answer = json.loads(run(home, "ask", "who do I text most?", "--no-llm", "--json"))["answer"]
    assert "one-to-one" in answer and "in groups" in answer, answer
