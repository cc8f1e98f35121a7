"""What a person reads: message text is never markup, digits are never auto-coloured, long
messages keep their indent, each message appears once, query terms stand out, ids never cut."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from casper.cli.render import (
    citations_view,
    console,
    contacts_table,
    hits_view,
    match_bar,
    month_bars,
    query_terms,
)
from casper.protocols import Hit, HitMessage

T0 = datetime(2024, 3, 2, 18, 4, tzinfo=UTC).timestamp()


def msg(rowid: int, text: str, sender: str = "Sam", minutes: int = 0) -> HitMessage:
    return HitMessage(rowid, f"g{rowid}", T0 + 60 * minutes, sender, text)


def hit(n: int, score: float, *messages: HitMessage) -> Hit:
    return Hit(f"c:{n}", "Sam", score, messages[0].ts, messages[-1].ts, ("Sam",), messages)


def render(renderable, width: int = 60, color: bool = False) -> str:  # noqa: ANN001
    out = io.StringIO()
    product = console(
        file=out, width=width, force_terminal=color, color_system="truecolor" if color else None
    )
    product.print(renderable)
    return out.getvalue()


def test_message_text_is_printed_as_typed_not_as_markup() -> None:
    text = render(hits_view([hit(1, 0.03, msg(1, "[bold]not bold[/bold] [link=x]y[/link]"))], UTC))
    assert "[bold]not bold[/bold] [link=x]y[/link]" in text


def test_digits_in_timestamps_are_not_coloured_but_query_terms_are() -> None:
    ansi = render(hits_view([hit(1, 0.03, msg(7, "the Dentist at 8"))], UTC, "dentist"), 80, True)
    assert "18:04" in ansi and "2024-03-02" in ansi  # no escape codes inside times and dates
    assert "#7" in ansi
    line = next(x for x in ansi.splitlines() if "#7" in x)
    before, after = line.split("Dentist")
    assert before.endswith("m") and "\x1b[" in before[-12:]  # a style opens right before the term
    assert "\x1b[0m" in after[:6]  # and closes right after it
    assert " 8" in after and "\x1b[" not in after.split(" 8")[0][-3:]


def test_long_messages_wrap_under_their_own_column() -> None:
    long = "we should book the cabin before the prices go up again next week, right?"
    lines = render(hits_view([hit(1, 0.03, msg(1, long))], UTC), 60).splitlines()
    first = next(i for i, x in enumerate(lines) if "we should" in x)
    column = lines[first].index("we should")
    continuation = lines[first + 1]
    assert continuation[:column].strip() == ""  # a hanging indent, not column 0
    assert continuation[column:].strip()


def test_each_message_is_shown_once_across_hits() -> None:
    a, b, c = msg(1, "first"), msg(2, "second", minutes=1), msg(3, "third", minutes=2)
    text = render(hits_view([hit(1, 0.03, a, b), hit(2, 0.02, b, c)], UTC), 80)
    assert text.count("second") == 1
    assert "+ 1 message shown under 1" in text


def test_the_bar_is_the_share_of_the_searched_words_a_hit_contains_not_its_rank() -> None:
    assert match_bar(2, 2) == "▰▰▰▰▰"
    assert match_bar(1, 2) in ("▰▰▱▱▱", "▰▰▰▱▱")
    assert match_bar(1, 9) == "▰▱▱▱▱"  # one word is never drawn as none
    assert match_bar(0, 1) == "▱▱▱▱▱"  # the best hit of a search for a word nobody wrote
    best = hit(1, 0.0327, msg(1, "x"))
    text = render(hits_view([_with_words(best, [])], UTC, "birthday", words=["birthday"]), 80)
    assert "▱▱▱▱▱" in text and "▰" not in text and "0.03" not in text
    text = render(hits_view([_with_words(best, [])], UTC, "x"), 80)
    assert "▱" not in text  # no searched words (a vector search): no bar at all


def _with_words(h: Hit, words: list[str]) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(**{f: getattr(h, f) for f in h.__dataclass_fields__},
                           matched_words=words)  # fmt: skip


def test_stopwords_are_not_highlighted() -> None:
    assert query_terms("what did Sam say about the dentist?") == ["sam", "say", "dentist"]


def test_contacts_ids_are_whole_at_60_columns() -> None:
    rows = [
        {"id": f"p_{i:08x}", "name": "Priya Natarajan-Whitfield", "last": "2024-10-22",
         "handles": ["+442079460958", "priya.natarajan@example.com"], "sent": 1200,
         "received": 3400}
        for i in range(3)
    ]  # fmt: skip
    text = render(contacts_table(rows, 60), 60)
    assert max(len(x) for x in text.splitlines()) <= 60
    for i in range(3):
        assert f"p_{i:08x}" in text
    assert "+442079460958" in text  # one handle a line, not folded mid-number


def test_citations_wrap_and_escape() -> None:
    cites = [{"id": 12, "time": "2024-03-02T18:04:00+00:00", "sender": "Sam", "text": "[red]hi"}]
    text = render(citations_view(cites), 60)
    assert "#12 2024-03-02 18:04 Sam" in " ".join(text.split())
    assert "[red]hi" in text


def test_month_bars_fit_the_width_and_scale_to_the_busiest_month() -> None:
    lines = month_bars({"2024-01": 10, "2024-02": 40}, columns=60)
    assert lines[1].startswith("2024-02  ") and lines[1].endswith(" 40")
    assert all(4 + len(x) <= 60 for x in lines)
    assert lines[0].count("█") * 4 <= lines[1].count("█") + 4


def test_plain_lines_are_never_auto_highlighted() -> None:
    out = io.StringIO()
    console(file=out, force_terminal=True, color_system="truecolor").print(
        "sent 12 · first 2024-03-02 18:04 · #5201"
    )
    assert "\x1b[" not in out.getvalue()


def test_narrow_citations_put_the_text_under_its_header() -> None:
    long = "it was supposed to be Tuesday the 13th, now it's Thursday the 15th at 3:30"
    cites = [{"id": 1848, "time": "2023-06-12T04:21:00", "sender": "Priya Natarajan", "text": long}]
    lines = render(citations_view(cites, (), 60), 60).splitlines()
    assert lines[0].split() == ["#1848", "2023-06-12", "04:21", "Priya", "Natarajan"]
    assert lines[1].startswith("    it was") and lines[2].startswith("    ")  # hanging indent
    wide = render(citations_view(cites, (), 120), 120).splitlines()
    assert len(wide) == 1 and wide[0].rstrip().endswith("3:30")  # one row when it fits


def test_first_names_only_when_unambiguous() -> None:
    from casper.cli.render import short_names

    got = short_names(["Priya Natarajan", "Sam Rivera", "Sam Lee", "me", "+13125550177"])
    assert got == {"Priya Natarajan": "Priya", "Sam Rivera": "Sam Rivera", "Sam Lee": "Sam Lee",
                   "me": "me", "+13125550177": "+13125550177"}  # fmt: skip
