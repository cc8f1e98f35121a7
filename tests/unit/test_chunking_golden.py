"""Chunker output pinned byte for byte: an index stores chunk ids and content hashes, so a
changed id, boundary, day or hash makes every existing index re-chunk and re-embed. The values
were taken from the chunker as it was before its fast path (commit ba0e4f6). A deliberate
change bumps CHUNKER_VERSION (the signature then forces a rebuild) and updates them.

What the chunker promises in general is checked by the properties in test_chunking_properties;
these pin the exact bytes those properties leave open."""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from casper.indexer.chunking import (
    ChunkOptions,
    _DayNames,
    chunk_chat,
    chunk_pieces,
    searchable_rows,
)
from casper.records import ME, ChatInfo, StoredMessage

# Saturday 30 March 2024, 22:50 UTC: Berlin springs forward that night
T0 = datetime(2024, 3, 30, 22, 50, tzinfo=UTC).timestamp()
GAP = 6 * 3600
CREW = ChatInfo(9, "chat-guid", "Trip crew", True, ("p_sam", "p_alex"))
NAMES = {"p_sam": "Sam", "p_alex": "Alex", ME: "me"}  # p_kim has no name: the id is the label
M = StoredMessage
# ties in one second (rowid order), a system event and a blank body, a silence of exactly the
# gap (kept together) and one a second longer (split), a 2,000-char line, emoji, an undated row
HISTORY = [
    M(30, "g30", 9, ME, T0, "dinner at 8?"),
    M(33, "g33", 9, "p_sam", T0 + 30, "寿司 🍣 tonight"),
    M(31, "g31", 9, "p_sam", T0 + 30, "  sure\n\nsee   you\tthere "),
    M(32, "g32", 9, "p_kim", T0 + 30, "who's in"),
    M(34, "g34", 9, ME, T0 + 60, "", kind="system", event="renamed"),
    M(35, "g35", 9, ME, T0 + 90, " \u00a0 "),
    M(36, "g36", 9, "p_alex", T0 + 30 + GAP, "exactly six hours later"),
    M(37, "g37", 9, ME, T0 + 31 + GAP, "photo", kind="attachment"),
    M(38, "g38", 9, "p_sam", T0 + 32 + 2 * GAP, "x" * 2000),
    M(39, "g39", 9, "p_alex", T0 + 33 + 2 * GAP, "ok"),
    M(40, "g40", 9, ME, T0 + 34 + 2 * GAP, "❤️ thanks 👍🏽"),
    M(5, "g5", 9, "p_sam", 0.0, "undated"),
]
S1, S2 = repr(T0), repr(T0 + 32 + 2 * GAP)
DINNER = "me: dinner at 8?\nSam: sure see you there\np_kim: who's in"
# (id, segment start, text, day in the embed text, content hash)
DEFAULT = [
    ("9:5:5:3x1", "0.0", "Sam: undated", "date unknown",
     "24462ac8fe041d08809416932244c50521360103"),
    ("9:30:32:3x1", S1, DINNER, "2024-03-30", "921132bdf32ef354bbb5a622f2ffa9b70f3d6906"),
    ("9:31:33:3x1", S1, "Sam: sure see you there\np_kim: who's in\nSam: 寿司 🍣 tonight",
     "2024-03-30", "ee9ba4b7866d08dd4d3109e33c4e67359a26f1b2"),
    ("9:32:36:3x1", S1, "p_kim: who's in\nSam: 寿司 🍣 tonight\nAlex: exactly six hours later",
     "2024-03-30", "c4406ae474e673bcf0bdbe34ef005492edaed82b"),
    ("9:33:37:3x1", S1, "Sam: 寿司 🍣 tonight\nAlex: exactly six hours later\nme: photo",
     "2024-03-30", "8982e03e0a9010a827dc7bedb2892f3571d6f734"),
    ("9:38:38:3x1", S2, f"Sam: {'x' * 1494}…", "2024-03-31",
     "53f4f90fa72c7d7c91c818a6dee3f392bb2348e8"),
    ("9:39:40:3x1", S2, "Alex: ok\nme: ❤️ thanks 👍🏽", "2024-03-31",
     "d729ae9ce83d5dee5ed56efe001b5280ee36ab2d"),
]  # fmt: skip
# 4x2 windows, at most 60 chars, days in Berlin: windows split by the cap, a piece ("33:33")
# that no window is, and 36's day already the next one in Berlin
BERLIN_60 = [
    ("9:5:5:4x2", "0.0", "Sam: undated", "date unknown",
     "24462ac8fe041d08809416932244c50521360103"),
    ("9:30:32:4x2", S1, DINNER, "2024-03-30", "921132bdf32ef354bbb5a622f2ffa9b70f3d6906"),
    ("9:32:33:4x2", S1, "p_kim: who's in\nSam: 寿司 🍣 tonight", "2024-03-30",
     "8113dcd573e6b45338c06e28cca681f44935c0a5"),
    ("9:33:33:4x2", S1, "Sam: 寿司 🍣 tonight", "2024-03-30",
     "60b68aab0854a1576c578d2ac5b2dbaeee915a3f"),
    ("9:36:37:4x2", S1, "Alex: exactly six hours later\nme: photo", "2024-03-31",
     "7b8090d9944aa8fa742b620553ca92fdfe9988e7"),
    ("9:38:38:4x2", S2, f"Sam: {'x' * 54}…", "2024-03-31",
     "c0ef45c1cf9e1750223b329245ffa1f81481bc0a"),
    ("9:39:40:4x2", S2, "Alex: ok\nme: ❤️ thanks 👍🏽", "2024-03-31",
     "d729ae9ce83d5dee5ed56efe001b5280ee36ab2d"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        ({}, DEFAULT),
        ({"size": 4, "stride": 2, "max_chars": 60, "tz_name": "Europe/Berlin"}, BERLIN_60),
    ],
    ids=["3x1-1500-utc", "4x2-60-berlin"],
)
def test_hand_written_chat_gives_the_pinned_chunks(keywords: dict, expected: list) -> None:
    got = chunk_chat(HISTORY, CREW, NAMES, **keywords)
    rows = [
        (c.id, c.extra["segment_start"], c.text, c.embed_text.split("\n", 1)[0], c.content_hash)
        for c in got
    ]
    assert rows == [(i, s, text, f"Trip crew — {day}", h) for i, s, text, day, h in expected]
    assert all(c.embed_text == c.embed_text.split("\n", 1)[0] + "\n" + c.text for c in got)


# Seeded histories over five settings: ties, silences around both gaps, undated rows, system
# events and blank bodies, random rowids, 700-char lines, days around DST nights in four zones.
# Their chunks are folded into one digest, taken from the pre-fast-path chunker.
ANCHORS = [
    datetime(2024, 3, 31, 0, 30, tzinfo=UTC).timestamp(),
    datetime(2024, 11, 3, 5, 30, tzinfo=UTC).timestamp(),
    datetime(2024, 6, 30, 21, 59, 59, tzinfo=UTC).timestamp(),
    1.0,  # the first seconds of 1970: negative local days west of UTC
]
TEXTS = ["hi", "", "   ", "\u00a0", "dinner at 8?", "寿司 🍣 tonight", "a\n\nb\tc", "x" * 700]
TEXTS += ["❤️ thanks 👍🏽"]
STEPS = [0.0, 0.5, 59.9, 600.0, 1800.0, 3600.0, 6 * 3600.0, 7 * 3600.0, 26 * 3600.0]
SETTINGS = [
    (3, 1, 1500, 6 * 3600.0, None),
    (8, 4, 120, 1800.0, "Europe/Berlin"),
    (5, 2, 40, 6 * 3600.0, "America/New_York"),
    (4, 4, 1500, 1800.0, "Australia/Lord_Howe"),
    (3, 1, 120, 6 * 3600.0, "Asia/Kathmandu"),
]
DIGEST = "7aed5bb21d03986c7762a12e96ae45049627782b"


def _seeded_history(seed: int) -> list[StoredMessage]:
    rng = random.Random(seed)
    ts = rng.choice(ANCHORS)
    out = []
    for i in range(rng.randrange(60)):
        ts += rng.choice(STEPS)
        out.append(
            StoredMessage(
                rowid=rng.randrange(1, 10**6) if i % 7 == 6 else 100 + i,
                guid=f"g{i}",
                chat_id=7,
                sender=rng.choice([ME, "p_sam", "p_alex", "p_kim"]),
                ts=0.0 if rng.randrange(20) == 0 else ts,
                text=rng.choice(TEXTS),
                kind=rng.choice(["text", "text", "text", "system", "attachment"]),
            )
        )
    return out


def test_seeded_histories_give_the_pinned_digest() -> None:
    digest = hashlib.sha1()
    for seed in range(60):
        messages = _seeded_history(seed)
        size, stride, max_chars, gap_s, zone = SETTINGS[seed % len(SETTINGS)]
        chat = ChatInfo(7, "guid", "Trip crew", True, ("p_sam", "p_alex") if seed % 2 else ())
        options = ChunkOptions(size, stride, gap_s, max_chars, zone)
        pieces = chunk_pieces(searchable_rows(messages), chat, NAMES, options)
        for p in pieces:  # the date terms are derived beside the chunk (the index schema's)
            digest.update(repr(tuple(getattr(p, f) for f in p._fields if f != "dates")).encode())
        keywords = dict(size=size, stride=stride, gap_s=gap_s, max_chars=max_chars, tz_name=zone)
        chunks = chunk_chat(messages, chat, NAMES, **keywords)
        assert [(c.id, c.content_hash) for c in chunks] == [(p.id, p.content_hash) for p in pieces]
    assert digest.hexdigest() == DIGEST


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
def test_day_names_match_datetime_through_a_year_of_transitions(zone: str) -> None:
    tz = ZoneInfo(zone)
    days = _DayNames(tz)
    start = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    # every 17 minutes and 0.37 s for a year, plus a hair before each local midnight (where
    # fromtimestamp's rounding to microseconds tips the day)
    stamps = [start + i * 1020.37 for i in range(31_000)]
    midnights = [datetime(2024, 1, 1, tzinfo=tz) + timedelta(days=d) for d in range(1, 366)]
    stamps += [m.timestamp() - 0.0000004 for m in midnights]
    for ts in stamps:
        assert days(ts) == datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d"), ts
    assert days(0.0) == days(-5.0) == "date unknown"
