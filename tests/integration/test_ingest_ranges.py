"""A history read in ROWID ranges (as worker processes read it) gives exactly what one reader
gives: the same messages and reactions, counters, and legacy SMS reactions matched to the same
message even when the quoted text sits in an earlier range — or no longer in the buffer."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import Capabilities, open_chat_db
from ingest.messages import ReadCounters, iter_pages
from ingest.ranges import RangeReader
from ingest.reactions import RecentTexts, resolve
from ingest.records import DeferredReaction, ReactionRow
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.writer import ChatDbWriter

T0 = 1_600_000_000.0


def _legacy_db(path: Path) -> Path:
    """Two chats; legacy reactions quoting texts 1, 10, 255, 256 and 300 texts back (the
    buffer holds 256 per chat), texts that repeat (the newest must win), an ellipsis quote,
    and a quote of the other chat's text (never matched)."""
    with ChatDbWriter(path, seed=3) as w:
        ha, hb = w.add_handle("+14155550101"), w.add_handle("+14155550102")
        a, b = w.add_chat([ha]), w.add_chat([hb])
        handle = {a: ha, b: hb}
        t = T0

        def say(chat: int, text: str) -> None:
            nonlocal t
            t += 60
            w.add_message(chat, text, from_me=False, handle=handle[chat], ts=t, body="both")

        def react(chat: int, quoted: str) -> None:
            nonlocal t
            t += 60
            w.add_legacy_reaction(chat, "Loved", quoted, handle=handle[chat], ts=t)

        say(b, "only in chat b")
        for i in range(320):
            say(a, f"text {i}" if i % 50 else "again")
            if i % 37 == 0:
                say(b, f"b side {i}")
            if i in (40, 200, 300):
                react(a, f"text {i - 1}")
                react(a, f"text {i - 10}")
                react(a, "again")
            if i == 310:
                for back in (255, 256, 300):
                    react(a, f"text {i - back}")
                react(a, "text 29…")
                react(a, "only in chat b")
        react(b, "b side 296")
    return path


def _single(conn, caps) -> tuple[list, list, ReadCounters]:  # noqa: ANN001
    stats = ReadCounters()
    msgs, reacts = [], []
    for m, r in iter_pages(conn, caps, stats=stats, page_size=64):
        msgs += m
        reacts += r
    return msgs, reacts, stats


def _in_ranges(conn, caps, cuts: list[int], end: int) -> tuple[list, list, ReadCounters]:  # noqa: ANN001
    """Read (0, c1], (c1, c2], …, (ck, end] and settle deferred reactions in ROWID order, as
    the parallel reader's main process does."""
    stats = ReadCounters()
    carry = RecentTexts()
    msgs, reacts = [], []
    bounds = [0, *cuts, end]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        part = ReadCounters()
        reader = RangeReader(conn, caps, lo, hi, part, page_size=64)
        for m, r in reader.pages():
            msgs += m
            reacts += r
        found = [x for d in reader.deferred if (x := resolve(carry, d)) is not None]
        part.legacy_unmatched += len(reader.deferred) - len(found)
        part.legacy_reactions += len(found)
        part.reactions += len(found)
        reacts += found
        carry.extend(reader.tails())
        stats.add(part)
    reacts.sort(key=lambda r: r.rowid)
    return msgs, reacts, stats


def test_every_cut_point_gives_the_single_readers_result(tmp_path: Path) -> None:
    conn = open_chat_db(_legacy_db(tmp_path / "chat.db"))
    caps = Capabilities.probe(conn)
    end = conn.execute("SELECT max(ROWID) FROM message").fetchone()[0]
    want = _single(conn, caps)
    assert want[2].legacy_reactions >= 10 and want[2].legacy_unmatched >= 2  # both outcomes
    for cut in range(1, end):
        assert _in_ranges(conn, caps, [cut], end) == want, f"cut after ROWID {cut}"
    assert _in_ranges(conn, caps, list(range(7, end, 7)), end) == want  # many small ranges


@pytest.mark.parametrize("ranges", [2, 5, 40])
def test_demo_corpus_in_ranges(tmp_path: Path, ranges: int) -> None:
    corpus = build_demo_corpus(tmp_path / "demo")
    conn = open_chat_db(corpus.chat_db)
    caps = Capabilities.probe(conn)
    end = conn.execute("SELECT max(ROWID) FROM message").fetchone()[0]
    cuts = [end * i // ranges for i in range(1, ranges)]
    want = _single(conn, caps)
    assert want[2].legacy_reactions and want[2].reactions and want[2].events
    assert _in_ranges(conn, caps, cuts, end) == want


def test_resolve_looks_only_at_what_the_buffer_still_held() -> None:
    carry = RecentTexts(per_chat=4)
    carry.extend([(1, "a", "g1"), (1, "b", "g2"), (1, "a", "g3"), (1, "c", "g4")])
    row = ReactionRow(9, "r9", "", 2000, False, 1, T0, "❤️")
    assert resolve(carry, DeferredReaction(row, 1, "a", seen=0)).target_guid == "g3"  # newest
    assert resolve(carry, DeferredReaction(row, 1, "a", seen=2)).target_guid == "g3"
    assert resolve(carry, DeferredReaction(row, 1, "b", seen=2)) is None  # pushed out by 2 newer
    assert resolve(carry, DeferredReaction(row, 1, "b", seen=1)).target_guid == "g2"
    assert resolve(carry, DeferredReaction(row, 2, "a", seen=0)) is None  # another chat
