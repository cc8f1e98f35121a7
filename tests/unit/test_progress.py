"""Index progress: plain lines off a terminal (start, every few seconds, done) with rate + ETA."""

from __future__ import annotations

import io

from casper.cli.progress import PlainProgress, fmt_duration, stage_bars


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_every_few_seconds_with_rate_and_eta() -> None:
    out, clock = io.StringIO(), Clock()
    bars = PlainProgress(out, every_s=5.0, clock=clock)
    bars("embed", 0, 1000)
    for done in range(100, 1000, 100):  # 100 chunks a second
        clock.now += 1.0
        bars("embed", done, 1000)
    clock.now += 1.0
    bars("embed", 1000, 1000)
    lines = out.getvalue().splitlines()
    assert lines[0] == "casper index: embedding chunks …"
    # one line after 5 s (not one per update), with the rate and the time left
    assert lines[1] == (
        "casper index: embedding chunks: 500/1,000 (50%) · 100 chunks/s · eta 5s · 5s elapsed"
    )
    assert lines[-1] == "casper index: embedding chunks: done, 1,000 chunks in 10s"
    assert len(lines) == 3


def test_a_stage_of_unknown_size_is_announced_and_closed_by_the_next() -> None:
    out, clock = io.StringIO(), Clock()
    bars = PlainProgress(out, clock=clock)
    bars("load", 0, None)
    clock.now += 31
    bars("chunk", 1, 9)  # the model load never said "done": the next stage ends it
    text = out.getvalue()
    assert "casper index: loading embedder …" in text
    assert "casper index: loading embedder: done in 31s" in text
    assert text.index("loading embedder: done") < text.index("chunking chats")


def test_stage_bars_off_a_terminal_writes_plain_lines_to_the_stream() -> None:
    out = io.StringIO()
    with stage_bars(stream=out) as bars:
        bars("read", 10, 10)
    assert out.getvalue() == (
        "casper index: reading chat.db …\ncasper index: reading chat.db: done, 10 rows in 0s\n"
    )


def test_durations_read_like_a_clock() -> None:
    assert [fmt_duration(s) for s in (4.4, 65, 3720)] == ["4s", "1m05s", "1h02m"]


def test_a_silent_stage_gets_a_line_every_few_seconds() -> None:
    out, clock = io.StringIO(), Clock()
    bars = PlainProgress(out, every_s=5.0, clock=clock)
    bars("load", 0, None)
    clock.now += 3
    bars.tick()  # too soon
    clock.now += 3
    bars.tick()
    clock.now += 1
    bars.tick()  # too soon again
    bars("load", 1, 1)
    assert out.getvalue().splitlines() == [
        "casper index: loading embedder …",
        "casper index: loading embedder: still working, 6s",
        "casper index: loading embedder: done in 7s",
    ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_json_mode_is_quiet_off_a_terminal_and_shows_bars_on_one() -> None:
    piped = io.StringIO()
    with stage_bars(stream=piped, plain=False) as bars:
        bars("chunk", 5, 10)
        bars("chunk", 10, 10)
    assert piped.getvalue() == ""
    terminal = _Terminal()
    with stage_bars(stream=terminal, plain=False) as bars:
        bars("chunk", 10, 10)
    assert "chunking chats" in terminal.getvalue()


def test_the_lexical_stages_read_as_words_with_a_rate_in_messages() -> None:
    out, clock = io.StringIO(), Clock()
    bars = PlainProgress(out, every_s=5.0, clock=clock)
    bars("chunk", 0, 90_000)
    clock.now += 6
    bars("chunk", 60_000, 90_000)
    bars("write", 0, None)
    bars("optimize", 0, None)
    bars("optimize", 1, 1)
    lines = out.getvalue().splitlines()
    assert lines[1] == (
        "casper index: chunking chats: 60,000/90,000 (67%) · 10,000 messages/s · eta 3s"
        " · 6s elapsed"
    )
    assert lines[2] == "casper index: chunking chats: done, 90,000 messages in 6s"
    assert "casper index: writing index …" in lines
    assert lines[-1] == "casper index: indexing text: done in 0s"
