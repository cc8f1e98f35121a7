"""How people type: lowercase, abbreviations (u, tmrw, lol), typos, emoji, "!!!", sign-offs.

Filler lines are written in plain English and pass through a person's voice; evidence lines are
written already in texting voice and only get the voice's case (so the facts the ledger records
stay findable in them).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# Longest phrases first: "going to" must become "gonna" before "to" could be touched.
ABBREVIATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("to be honest", ("tbh",)),
    ("i don't know", ("idk", "dunno")),
    ("oh my god", ("omg",)),
    ("going to", ("gonna",)),
    ("want to", ("wanna",)),
    ("got to", ("gotta",)),
    ("see you", ("cu", "see ya")),
    ("tomorrow", ("tmrw", "tmr", "2moro")),
    ("tonight", ("tonite", "2nite")),
    ("because", ("bc", "cos", "cuz")),
    ("though", ("tho",)),
    ("thanks", ("thx", "ty", "cheers")),
    ("probably", ("prob", "prolly")),
    ("really", ("rly", "realy")),
    ("please", ("pls", "plz")),
    ("people", ("ppl",)),
    ("about", ("abt", "bout")),
    ("something", ("smth",)),
    ("definitely", ("def", "defo")),
    ("you're", ("ur", "youre")),
    ("your", ("ur",)),
    ("you", ("u",)),
    ("are", ("r",)),
    ("okay", ("ok", "k", "okk")),
    ("with", ("w",)),
    ("minutes", ("mins",)),
    ("message", ("msg",)),
    ("don't", ("dont",)),
    ("can't", ("cant",)),
    ("i'm", ("im",)),
    ("that's", ("thats",)),
)
_ABBREV = [(re.compile(rf"\b{re.escape(a)}\b", re.I), b) for a, b in ABBREVIATIONS]
# Letters next to each other on a QWERTY keyboard: the typo a thumb makes.
_NEIGHBOURS = {
    "a": "sq", "b": "vn", "c": "xv", "d": "sf", "e": "wr", "f": "dg", "g": "fh", "h": "gj",
    "i": "uo", "j": "hk", "k": "jl", "l": "k", "m": "n", "n": "bm", "o": "ip", "p": "o",
    "r": "et", "s": "ad", "t": "ry", "u": "yi", "v": "cb", "w": "qe", "y": "tu",
}  # fmt: skip
_WORD = re.compile(r"[A-Za-z]{4,}")
EMOJI = ("😂", "😭", "🙌", "👍", "❤️", "😅", "🔥", "🙃", "😬", "💀", "😩", "🥲", "✨", "🤣", "😍")


def typo(word: str, rng: random.Random) -> str:
    """One slip of the thumb: two letters swapped, one dropped, doubled or a neighbour hit."""
    if len(word) < 4:
        return word
    i = rng.randrange(1, len(word) - 1)
    op = rng.randrange(4)
    if op == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if op == 1:
        return word[:i] + word[i + 1 :]
    if op == 2:
        return word[:i] + word[i] + word[i:]
    near = _NEIGHBOURS.get(word[i].lower())
    return word[:i] + rng.choice(near) + word[i + 1 :] if near else word[:i] + word[i + 1 :]


def with_typos(
    text: str, rate: float, rng: random.Random, keep: frozenset[str] = frozenset()
) -> str:
    """Each word of 4+ letters (not in `keep`) gets a typo with probability `rate`."""

    def slip(m: re.Match[str]) -> str:
        word = m.group(0)
        return typo(word, rng) if word.lower() not in keep and rng.random() < rate else word

    return _WORD.sub(slip, text)


@dataclass(frozen=True, slots=True)
class Voice:
    """One person's habits; every probability is per message (typos: per word)."""

    lower: bool = True
    abbreviate: float = 0.5  # chance each abbreviable phrase is shortened
    typos: float = 0.02
    emoji: float = 0.1  # an emoji at the end
    shout: float = 0.0  # "!!" / "!!!" at the end
    stretch: float = 0.0  # "sooo", "yesss"
    proper: bool = False  # Capitalised sentences with full stops (Mum)
    signoff: str = ""  # appended now and then ("x")
    drop_final_punct: bool = True

    def case(self, text: str) -> str:
        """Only the case habits: what evidence lines get."""
        if self.proper:
            return _proper(text)
        return text.lower() if self.lower else text

    def apply(self, text: str, rng: random.Random) -> str:
        """All the habits, for filler. Draws a fixed number of random numbers per call."""
        r_emoji, r_shout, r_stretch, r_sign = (rng.random() for _ in range(4))
        if self.proper:
            out = _proper(text)
            if self.signoff and r_sign < 0.25:
                out = f"{out} {self.signoff}"
            return out
        out = text
        for pattern, choices in _ABBREV:
            if pattern.search(out) and rng.random() < self.abbreviate:
                out = pattern.sub(rng.choice(choices), out)
        out = with_typos(out, self.typos, rng)
        if self.lower:
            out = out.lower()
        if self.drop_final_punct and out.endswith("."):
            out = out[:-1]
        if r_stretch < self.stretch:
            out = re.sub(r"\b(so|yes|no|omg|hi)\b", lambda m: m.group(1) + m.group(1)[-1] * 2, out)
        if r_shout < self.shout and out[-1:].isalnum():
            out += "!!" if r_shout < self.shout / 2 else "!!!"
        if r_emoji < self.emoji and out[-1:] not in EMOJI:
            out = f"{out} {rng.choice(EMOJI)}"
        return out


def _proper(text: str) -> str:
    text = text.strip()
    if not text or not text[0].isalpha():
        return text
    text = text[0].upper() + text[1:]
    text = re.sub(r"\bi\b", "I", text)
    return text if text[-1] in ".!?x)" or not text[-1].isalnum() else text + "."


VOICES: dict[str, Voice] = {
    "me": Voice(abbreviate=0.45, typos=0.015, emoji=0.08),
    "sam": Voice(abbreviate=0.8, typos=0.04, emoji=0.06),
    "priya": Voice(lower=False, abbreviate=0.3, typos=0.01, emoji=0.35, shout=0.3, stretch=0.3),
    "leo": Voice(abbreviate=0.6, typos=0.09, emoji=0.03),
    "nadia": Voice(abbreviate=0.15, typos=0.01, emoji=0.08, drop_final_punct=False),
    "jamie_p": Voice(abbreviate=0.6, typos=0.03, emoji=0.15, stretch=0.1),
    "mum": Voice(lower=False, abbreviate=0.0, typos=0.01, proper=True, signoff="x"),
    "dev": Voice(abbreviate=0.9, typos=0.03, emoji=0.0),
}
