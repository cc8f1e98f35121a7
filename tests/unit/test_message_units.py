"""Each message alone, beside the windows: one index row per searchable message, with its
sender and day, so a single long message is scored on its own words (not diluted by the two
messages around it) while hits still show windows."""

from __future__ import annotations

from datetime import UTC, datetime

from casper.indexer.chunking import (
    ChunkOptions,
    chunk_pieces,
    chunker_signature,
    index_pieces,
    is_message_row,
    message_pieces,
    searchable_rows,
)
from casper.records import ME, ChatInfo, StoredMessage

T0 = datetime(2024, 3, 4, 12, 0, tzinfo=UTC).timestamp()
CHAT = ChatInfo(7, "chat-guid", "Sam", False, ("p_sam",))
NAMES = {"p_sam": "Sam", ME: "me"}
OPTIONS = ChunkOptions(size=3, stride=1, tz_name="UTC", messages_alone=True)
TEXTS = ["hey", "so we signed up for the pottery class on the 10th", "nice", "", "dinner fri?"]


def rows() -> list[tuple[float, int, str, str, str]]:
    messages = [
        StoredMessage(i, f"g{i}", 7, "p_sam" if i % 2 else ME, T0 + i * 60, text)
        for i, text in enumerate(TEXTS, 1)
    ]
    return searchable_rows(messages)


def test_every_searchable_message_is_a_row_of_its_own_beside_the_windows() -> None:
    pieces = index_pieces(rows(), CHAT, NAMES, OPTIONS)
    alone = [p for p in pieces if is_message_row(p.id)]
    assert [p.rowids for p in alone] == [(1,), (2,), (3,), (5,)]  # the blank one is not searched
    assert [p for p in pieces if not is_message_row(p.id)] == chunk_pieces(
        rows(), CHAT, NAMES, OPTIONS
    )
    pottery = alone[1]
    assert pottery.text == "me: so we signed up for the pottery class on the 10th"
    assert (
        pottery.embed_text
        == "Sam — 2024-03-04\nme: so we signed up for the pottery class on the 10th"
    )
    assert pottery.guids == ("g2",) and pottery.participants == ("me",)
    assert pottery.start == pottery.end == T0 + 2 * 60
    assert pottery.dates  # "on the 10th" is a date it mentions, searched like a window's


def test_a_message_alone_belongs_to_its_windows_segment() -> None:
    # re-chunking a chat from a segment's start re-produces the rows of that segment, its
    # messages alone included: they carry the segment's start as the windows do
    pieces = index_pieces(rows(), CHAT, NAMES, OPTIONS)
    assert {p.segment_start for p in pieces} == {T0 + 60}


def test_a_one_message_window_and_the_message_alone_share_a_vector() -> None:
    # same embedded text, same content hash: the vector is computed once
    lone = [(T0, 1, "p_sam", "just one message here", "g1")]
    window, alone = index_pieces(lone, CHAT, NAMES, OPTIONS)
    assert not is_message_row(window.id) and is_message_row(alone.id)
    assert window.content_hash == alone.content_hash


def test_the_messages_alone_are_a_setting_an_index_is_built_with() -> None:
    # off (the default): the windows alone, under the signature an index already has, so an
    # index built before is not rebuilt; on: another signature, so an index built the other
    # way asks for `casper index --rebuild` instead of searching half of what it should
    windows = ChunkOptions(size=3, stride=1, tz_name="UTC")
    assert index_pieces(rows(), CHAT, NAMES, windows) == chunk_pieces(rows(), CHAT, NAMES, windows)
    assert windows.signature() == chunker_signature(3, 1, windows.gap_s, windows.max_chars)
    assert OPTIONS.signature() != windows.signature()


def test_passages_of_one_message_have_no_second_copy() -> None:
    one = ChunkOptions(size=1, stride=1, tz_name="UTC", messages_alone=True)
    assert message_pieces(rows(), CHAT, NAMES, one) == []
    assert index_pieces(rows(), CHAT, NAMES, one) == chunk_pieces(rows(), CHAT, NAMES, one)
