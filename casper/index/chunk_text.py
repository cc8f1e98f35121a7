"""The text forms of a chunk that its search legs index: CJK/emoji runs for the n-gram leg, and
the rest for word tokenizers.

Imports: stdlib.
"""

from __future__ import annotations

import re

# Scripts written without spaces between words (and Hangul, whose particles attach to nouns),
# plus emoji and pictographic symbols: word tokenizers miss them, so a character n-gram leg
# searches them.
_UNSEGMENTED_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x2190, 0x21FF),  # arrows
    (0x2300, 0x23FF),  # misc technical (⌚ ⏰)
    (0x2460, 0x24FF),  # enclosed alphanumerics
    (0x25A0, 0x27BF),  # shapes, misc symbols, dingbats (☀ ☕ ✅ ❤)
    (0x2B00, 0x2BFF),  # misc symbols and arrows (⭐)
    (0x2E80, 0x2FFF),  # CJK radicals
    (0x3040, 0x33FF),  # kana, bopomofo, CJK compatibility
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width katakana
    (0x1F000, 0x1FAFF),  # emoji and pictographs
    (0x20000, 0x3FFFF),  # CJK extensions B+
)
_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _UNSEGMENTED_RANGES)
_RUN = re.compile(f"[{_CLASS}\u200d\ufe0e\ufe0f]+")
_JOINERS = re.compile("[\u200d\ufe0e\ufe0f]")  # ZWJ, variation selectors: dropped both sides


def unsegmented_text(text: str) -> str:
    """Keep only CJK/emoji characters (runs separated by single spaces), for the n-gram leg."""
    if text.isascii():
        return ""
    runs = (_JOINERS.sub("", run) for run in _RUN.findall(text))
    return " ".join(run for run in runs if run)


def without_unsegmented(text: str) -> str:
    """The text with CJK/emoji runs replaced by spaces (what word tokenizers can handle)."""
    return text if text.isascii() else _RUN.sub(" ", text)
