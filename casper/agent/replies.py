"""PURE: heuristics on a model's reply text: narrated intent, loops, repeats.

Imports: stdlib only. Used by `agent.core`'s guards `narrated_intent` and `repetitive_answer`.
"""

from __future__ import annotations

import re
from collections import Counter

_CITE_TAG = re.compile(r"\[#(\d+)\]")
_NARRATED = re.compile(
    r"\b(?:let me|let's|i'll|i will|i'm going to|i am going to|i'm gonna|i need to|i should)"
    r"\s+(?:\w+\s+){0,2}?"
    r"(?:search|look|check|find|query|call|use|pull|retrieve|fetch|get|see|dig|scan|"
    r"go through|review|try|browse)\b"
    r"|^(?:searching|looking|checking)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


def is_narrated(text: str) -> bool:
    """True when a short reply announces a lookup ("let me search…") instead of answering."""
    if len(text) > 600 or _CITE_TAG.search(text):
        return False
    plain = _QUOTED.sub("", text.replace("\u2019", "'"))
    return bool(_NARRATED.search(plain.strip()))


def is_repetitive(text: str) -> bool:
    """True when a reply loops: a sentence three times, or mostly repeated word 4-grams."""
    sentences = [_norm(s) for s in _SENTENCE_SPLIT.split(text) if len(s.split()) >= 3]
    if sentences and Counter(sentences).most_common(1)[0][1] >= 3:
        return True
    words = _WORD.findall(_CITE_TAG.sub(" ", text).lower())
    if len(words) < 24:
        return False
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    return len(set(grams)) / len(grams) < 0.3


def overlap(a: str, b: str) -> float:
    """Jaccard similarity of the word 3-shingles of two texts (whole text when shorter)."""
    sa, sb = _shingles(a), _shingles(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def collapse_repeats(text: str) -> str:
    """Drop sentences that repeat an earlier one word for word (degenerate loops); the lines
    that keep something stay lines (a transcript keeps its shape)."""
    if not is_repetitive(text):
        return text
    lines: list[str] = []
    seen: set[str] = set()
    for line in text.split("\n"):
        kept: list[str] = []
        for sentence in _SENTENCE_SPLIT.split(line):
            key = _norm(sentence)
            if key and key not in seen:
                seen.add(key)
                kept.append(sentence.strip())
        if kept:
            lines.append(" ".join(kept))
    return "\n".join(lines)


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < 3:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _norm(text: str) -> str:
    """A sentence's words; its `[#rowid]`s aside: one line said again and again with another
    id each time is still one line said again and again."""
    return " ".join(_WORD.findall(_CITE_TAG.sub(" ", text).lower()))
