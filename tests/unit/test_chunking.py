"""Chunking: windows, gaps, char caps, stable ids across re-chunking, the CJK/emoji residue."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from casper.index.chunk_text import unsegmented_text
from casper.indexer.chunking import (
    CHUNKER_VERSION,
    chunk_chat,
    chunker_signature,
    segments,
    window_bounds,
)
from casper.records import ME, ChatInfo, StoredMessage, segment_start

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC).timestamp()
CHAT = ChatInfo(7, "chat-guid", "Sam", False, ("p_sam",))
NAMES = {"p_sam": "Sam", ME: "me"}


def msgs(n: int, *, start: int = 1, step: float = 60.0, t0: float = T0) -> list[StoredMessage]:
    return [
        StoredMessage(
            rowid=i,
            guid=f"g{i}",
            chat_id=7,
            sender=ME if i % 2 else "p_sam",
            ts=t0 + (i - start) * step,
            text=f"message number {i}",
        )  # fmt: skip
        for i in range(start, start + n)
    ]


@pytest.mark.parametrize(
    ("count", "size", "stride", "expected"),
    [
        (0, 8, 4, []),
        (3, 8, 4, [(0, 3)]),
        (8, 8, 4, [(0, 8)]),
        (9, 8, 4, [(0, 8), (4, 9)]),
        (12, 8, 4, [(0, 8), (4, 12)]),
        (13, 8, 4, [(0, 8), (4, 12), (8, 13)]),
        (5, 3, 1, [(0, 3), (1, 4), (2, 5)]),
        (2, 3, 1, [(0, 2)]),
        (7, 4, 4, [(0, 4), (4, 7)]),
    ],
)
def test_window_bounds(count: int, size: int, stride: int, expected: list[tuple[int, int]]) -> None:
    assert window_bounds(count, size, stride) == expected


def test_window_bounds_rejects_bad_unit() -> None:
    with pytest.raises(ValueError):
        window_bounds(5, 0, 1)


def test_windows_cover_every_message_in_order() -> None:
    chunks = chunk_chat(msgs(10), CHAT, NAMES, size=8, stride=4)
    assert [c.id for c in chunks] == ["7:1:8:8x4", "7:5:10:8x4"]
    assert chunks[0].rowids == tuple(range(1, 9))
    assert chunks[1].guids == tuple(f"g{i}" for i in range(5, 11))
    assert chunks[0].start == T0 and chunks[0].end == T0 + 7 * 60
    assert set().union(*(c.rowids for c in chunks)) == set(range(1, 11))


def test_passage_unit_ids() -> None:
    chunks = chunk_chat(msgs(5), CHAT, NAMES, size=3, stride=1)
    assert [c.id for c in chunks] == ["7:1:3:3x1", "7:2:4:3x1", "7:3:5:3x1"]


def test_long_gap_starts_a_new_segment() -> None:
    early = msgs(3)
    late = msgs(3, start=4, t0=T0 + 7 * 3600)
    chunks = chunk_chat(early + late, CHAT, NAMES, gap_s=6 * 3600)
    assert [c.rowids for c in chunks] == [(1, 2, 3), (4, 5, 6)]
    assert segment_start(chunks[1]) == late[0].ts
    assert len(segments(early + late, gap_s=8 * 3600)) == 1


def test_skips_system_events_and_empty_messages_and_never_shows_reactions() -> None:
    base = msgs(4)
    base[1] = StoredMessage(2, "g2", 7, ME, base[1].ts, "", kind="system", event="renamed")
    base[2] = StoredMessage(3, "g3", 7, "p_sam", base[2].ts, "   ")
    base[3] = StoredMessage(4, "g4", 7, "p_sam", base[3].ts, "see you", reactions=(("me", "❤️"),))
    (chunk,) = chunk_chat(base, CHAT, NAMES)
    assert chunk.rowids == (1, 4)
    assert chunk.text == "me: message number 1\nSam: see you"
    assert "❤" not in chunk.embed_text


def test_fields_participants_members_and_embed_text() -> None:
    group = ChatInfo(9, "g", "Trip crew", True, ("p_sam", "p_alex"))
    messages = [
        StoredMessage(1, "a", 9, "p_alex", T0, "flights booked"),
        StoredMessage(2, "b", 9, ME, T0 + 60, "nice\nthanks"),
        StoredMessage(3, "c", 9, "p_alex", T0 + 120, "hotel next"),
    ]
    (chunk,) = chunk_chat(messages, group, {"p_alex": "Alex", ME: "me"})
    assert chunk.participants == ("Alex", "me")
    assert chunk.person_ids == ("p_sam", "p_alex")
    assert chunk.chat_name == "Trip crew" and chunk.chat_id == 9
    assert chunk.text == "Alex: flights booked\nme: nice thanks\nAlex: hotel next"
    assert chunk.embed_text == "Trip crew — 2024-03-01\n" + chunk.text
    late = [StoredMessage(1, "a", 9, "p_alex", T0 + 13 * 3600, "late")]
    tokyo = chunk_chat(late, group, {}, tz_name="Asia/Tokyo")[0]
    assert tokyo.embed_text.startswith("Trip crew — 2024-03-02\n")


def test_content_hash_tracks_text_members_and_version() -> None:
    (a,) = chunk_chat(msgs(3), CHAT, NAMES)
    (b,) = chunk_chat(msgs(3), CHAT, NAMES)
    (c,) = chunk_chat(msgs(3), ChatInfo(7, "x", "Sam", False, ("p_sam", "p_new")), NAMES)
    edited = msgs(3)
    edited[0] = StoredMessage(1, "g1", 7, ME, edited[0].ts, "edited text")
    (d,) = chunk_chat(edited, CHAT, NAMES)
    assert a.content_hash == b.content_hash
    assert len({a.content_hash, c.content_hash, d.content_hash}) == 3
    assert a.id == c.id == d.id


@pytest.mark.parametrize(("size", "stride"), [(8, 4), (3, 1), (5, 2)])
@pytest.mark.parametrize("first", [1, 7, 8, 9, 20])
def test_appending_keeps_earlier_ids(size: int, stride: int, first: int) -> None:
    before = chunk_chat(msgs(first), CHAT, NAMES, size=size, stride=stride)
    after = chunk_chat(msgs(first + 6), CHAT, NAMES, size=size, stride=stride)
    after_by_id = {c.id: c for c in after}
    # every earlier window except a partial tail is reproduced with the same content
    for chunk in before[:-1]:
        assert after_by_id[chunk.id].content_hash == chunk.content_hash
    if len(before[-1].rowids) == size:
        assert before[-1].id in after_by_id


def test_tail_rechunk_matches_full_rechunk() -> None:
    early = msgs(6)
    late = msgs(11, start=7, t0=T0 + 10 * 3600)
    full = chunk_chat(early + late, CHAT, NAMES)
    tail = chunk_chat(late, CHAT, NAMES)
    assert {c.id for c in full if c.start >= late[0].ts} == {c.id for c in tail}


def test_max_chars_splits_windows_and_truncates_long_lines() -> None:
    messages = msgs(8)
    messages[2] = StoredMessage(3, "g3", 7, ME, messages[2].ts, "x" * 500)
    chunks = chunk_chat(messages, CHAT, NAMES, max_chars=120)
    assert all(len(c.text) <= 120 for c in chunks)
    assert set().union(*(c.rowids for c in chunks)) == set(range(1, 9))
    assert any(c.text.endswith("…") for c in chunks)
    assert len({c.id for c in chunks}) == len(chunks)


def test_unsorted_input_is_sorted_by_time() -> None:
    chunks = chunk_chat(list(reversed(msgs(4))), CHAT, NAMES, size=8, stride=4)
    assert chunks[0].rowids == (1, 2, 3, 4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I love 寿司 and 🍣!", "寿司 🍣"),
        ("寿司を食べた", "寿司を食べた"),
        ("just latin", ""),
        ("❤️ thanks 👍🏽", "❤ 👍🏽"),
        ("김치찌개 먹었어", "김치찌개 먹었어"),
    ],
)
def test_unsegmented_text(text: str, expected: str) -> None:
    assert unsegmented_text(text) == expected


def test_chunker_signature_names_every_setting() -> None:
    sig = chunker_signature(3, 1, 1800, 1000)
    assert sig == f"{CHUNKER_VERSION}/3x1/gap1800/max1000"
    assert sig != chunker_signature(8, 4, 1800, 1000)
