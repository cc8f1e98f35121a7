"""The terminal view and the PNG of `stats` on made-up scopes: what each cell stands for, and a
group of hundreds of people, an empty range and one message drawing without error."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text

from casper.app.documents import stats_json
from casper.app.stats_series import scope_stats, series
from casper.cli.stats_view import column_cells, heat_level, stats_view
from casper.records import ME
from casper.stats import LocalClock

CLOCK = LocalClock(UTC)


def make_doc(rows: list) -> dict:
    names = {str(r[0]): f"Person {r[0]}" for r in rows}
    return stats_json(
        None,
        scope_stats(rows, [rows], CLOCK),
        {"since": None, "until": None},
        UTC,
        scope={"kind": "chat", "id": "9", "name": "Big group", "members": len(names)},
        series=series(rows, [rows], CLOCK, today=None),
        names=names,
        zone="UTC",
    )  # type: ignore[return-value]


def big_group(people: int = 300) -> list:
    start = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    return [(ME if i % 7 == 0 else f"p{i % people}", start + i * 5 * 3600, None, None, None)
            for i in range(people * 3)]  # fmt: skip


def test_cells_stack_sent_under_received() -> None:
    assert column_cells([0, 0], 10, rows=2) == [None, None]
    assert column_cells([10, 0], 10, rows=2) == [(0, 8), (0, 8)]
    assert column_cells([5, 5], 10, rows=2) == [(0, 8), (1, 8)]
    assert column_cells([0, 3], 12, rows=2) == [(1, 4), None]  # a quarter: half the bottom cell
    # a person's three parts: sent, received one-to-one, theirs in groups
    assert column_cells([4, 4, 4], 12, rows=3) == [(0, 8), (1, 8), (2, 8)]
    assert column_cells([1, 1, 10], 12, rows=2) == [(2, 8), (2, 8)]  # each cell: what fills most
    assert [heat_level(n, 8) for n in (0, 1, 2, 3, 4, 5, 8)] == [0, 1, 1, 2, 2, 3, 4]


def test_a_group_of_hundreds_draws(tmp_path: Path) -> None:
    doc = make_doc(big_group())
    lines = [t.plain for t in stats_view(doc, 100, Text)]  # type: ignore[arg-type]
    text = "\n".join(lines)
    assert "Big group" in text and "most: " in text
    most = next(x for x in lines if "most: " in x).split("most: ")[1]
    assert most.count("Person ") == 5  # the five who started most, of 300
    rows = [x for x in lines if x.strip()[:3] in {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}]
    assert sum(int(x.split()[-1]) for x in rows) == len(big_group())
    from casper.cli.charts import write_png

    out = write_png(doc, tmp_path / "big.png", tmp_path)  # type: ignore[arg-type]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_empty_and_one_message_draw(tmp_path: Path) -> None:
    from casper.cli.charts import write_png

    for rows in ([], [("p1", datetime(2024, 5, 1, tzinfo=UTC).timestamp(), None, None, None)]):
        doc = make_doc(rows)
        text = "\n".join(t.plain for t in stats_view(doc, 80, Text))  # type: ignore[arg-type]
        assert ("no messages in this range" in text) == (not rows)
        write_png(doc, tmp_path / f"{len(rows)}.png", tmp_path)  # type: ignore[arg-type]
