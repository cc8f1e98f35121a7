"""Emoji stats count whole emoji: grapheme clusters with the Unicode emoji
data, skin tones folded to the base emoji, text-style symbols left out."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from casper.records import ME
from casper.stats import Line, compute_stats, emoji_field

SHRUG_MAN = "\U0001f937\u200d\u2642\ufe0f"  # 🤷‍♂️
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # 👨‍👩‍👧


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"no idea {SHRUG_MAN}", SHRUG_MAN),  # ZWJ sequence: one emoji, never a bare ♂
        (f"{FAMILY} at the beach", FAMILY),
        ("\U0001f937\U0001f3fd\u200d\u2642\ufe0f", SHRUG_MAN),  # 🤷🏽‍♂️ → 🤷‍♂️
        ("\U0001f937\u200d\u2642", SHRUG_MAN),  # minimally qualified → the same emoji
        ("🇬🇧🇺🇸", "🇬🇧 🇺🇸"),  # flags: pairs of regional indicators
        ("\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"),
        ("press 1️⃣ or #️⃣", "1️⃣ #️⃣"),  # keycaps
        ("👍🏽👍🏿👍", "👍 👍 👍"),  # skin tones fold to the base emoji
        ("\U0001f3fd", None),  # a lone skin-tone swatch is no emoji
        # a sequence not in the emoji data is drawn as its parts: they count, not the ZWJ or ♂
        (f"{FAMILY}\u200d\U0001f466\u200d\U0001f415", f"{FAMILY}\u200d\U0001f466 \U0001f415"),
        ("x\u200d\u2642", None),
        ("❤️ 🎉🎉", "❤️ 🎉 🎉"),
        ("© 2024 Acme™ ↔ café", None),  # text-style symbols are text
        ("寿司🍣", "🍣"),
        ("plain ascii :)", None),
    ],
)
def test_emoji_field_counts_grapheme_clusters(text: str, expected: str | None) -> None:
    assert emoji_field(text) == expected


def test_top_emoji_lists_whole_sequences_with_exact_counts() -> None:
    them = "p_sam"
    lines = [
        Line(them, 1_700_000_000, 1, f"dunno {SHRUG_MAN}"),
        Line(them, 1_700_000_100, 1, f"{SHRUG_MAN}{SHRUG_MAN}"),
        Line(ME, 1_700_000_200, 1, "👍🏽 fine"),
        Line(them, 1_700_000_300, 1, "👍 ok 🇬🇧"),
        Line(ME, 1_700_000_400, 1, f"{FAMILY}"),
    ]
    stats = compute_stats(them, lines, [x for x in lines if x.sender == them], ZoneInfo("UTC"))
    assert stats["top_emoji"] == [[SHRUG_MAN, 3], ["👍", 2], ["🇬🇧", 1], [FAMILY, 1]]
