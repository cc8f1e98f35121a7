"""Tapback codes, target GUIDs, legacy SMS reaction text and the per-chat quote buffer."""

from __future__ import annotations

import pytest

from ingest.reactions import (
    RecentTexts,
    is_tapback,
    parse_legacy_reaction,
    tapback_emoji,
    target_guid,
)

GUID = "D4434EF4-8316-48E8-91A3-48342D95C0ED"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [(0, False), (2, False), (3, False), (1000, True), (2000, True), (2005, True), (2007, True)]
    + [(2008, False), (3000, True), (3007, True), (3008, False), (4000, False)],
)
def test_is_tapback(kind: int, expected: bool) -> None:
    assert is_tapback(kind) is expected


@pytest.mark.parametrize(
    ("associated", "expected"),
    [
        (f"p:0/{GUID}", GUID),
        (f"p:12/{GUID}", GUID),
        (f"bp:{GUID}", GUID),
        (GUID, GUID),
        (f"p:1/{GUID}:extra", GUID),
        (None, None),
        ("", None),
        ("p:3", None),
    ],
)
def test_target_guid(associated: str | None, expected: str | None) -> None:
    assert target_guid(associated) == expected


def test_tapback_emoji() -> None:
    assert tapback_emoji(2000) == "❤️"
    assert tapback_emoji(3001) == "👍"
    assert tapback_emoji(2005) == "❓"
    assert tapback_emoji(2006, "🎉") == "🎉"
    assert tapback_emoji(3006, "🎉") == "🎉"
    assert tapback_emoji(2007) is None
    assert tapback_emoji(1000) is None


@pytest.mark.parametrize(
    ("text", "kind", "emoji", "quote"),
    [
        ("Loved “Same here! 🤣 Catch you later!”", 2000, "❤️", "Same here! 🤣 Catch you later!"),
        ("Liked “ok”", 2001, "👍", "ok"),
        ("Disliked “no”", 2002, "👎", "no"),
        ("Laughed at “lol\nsecond line”", 2003, "😂", "lol\nsecond line"),
        ("Emphasized “Dinner at 7”", 2004, "‼️", "Dinner at 7"),
        ("Questioned “Dinner at 7”", 2005, "❓", "Dinner at 7"),
        ('Loved "straight quotes"', 2000, "❤️", "straight quotes"),
        ("Reacted 😂 to “that’s great”", 2006, "😂", "that’s great"),
        ("Reacted with a sticker to “hi”", 2007, None, "hi"),
        ("Removed a heart from “Dinner at 7”", 3000, "❤️", "Dinner at 7"),
        ("Removed a like from “x”", 3001, "👍", "x"),
        ("Removed an exclamation from “x”", 3004, "‼️", "x"),
        ("Removed a question mark from “x”", 3005, "❓", "x"),
        ("Removed 🎉 from “x”", 3006, "🎉", "x"),
    ],
)
def test_legacy_reactions_parse(text: str, kind: int, emoji: str | None, quote: str) -> None:
    parsed = parse_legacy_reaction(text)
    assert parsed is not None
    assert (parsed.kind, parsed.emoji, parsed.quote) == (kind, emoji, quote)


@pytest.mark.parametrize(
    "text",
    [
        "Loved it",
        "Loved the movie “Heat”, you should watch it",
        "I Loved “this”",
        "Liked a video",
        "Reacted badly to the news",
        "",
        "“quoted”",
    ],
)
def test_ordinary_text_is_not_a_legacy_reaction(text: str) -> None:
    assert parse_legacy_reaction(text) is None


def test_recent_texts_finds_latest_match_in_the_same_chat() -> None:
    buf = RecentTexts(per_chat=3)
    buf.add(1, "Dinner at 7?", "A")
    buf.add(2, "Dinner at 7?", "OTHER-CHAT")
    buf.add(1, "Sounds good", "B")
    buf.add(1, "Dinner at 7?", "C")
    assert buf.find(1, "Dinner at 7?") == "C"
    assert buf.find(2, "Dinner at 7?") == "OTHER-CHAT"
    assert buf.find(3, "Dinner at 7?") is None
    assert buf.find(1, "never said") is None
    assert buf.find(None, "Dinner at 7?") is None


def test_recent_texts_truncated_quote_and_bounded_size() -> None:
    buf = RecentTexts(per_chat=2)
    buf.add(1, "A very long message that the phone shortened in the quote", "A")
    assert buf.find(1, "A very long message…") == "A"
    assert buf.find(1, "A very long message...") == "A"
    buf.add(1, "two", "B")
    buf.add(1, "three", "C")
    assert buf.find(1, "A very long message…") is None  # fell out of the ring buffer
