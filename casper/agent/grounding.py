"""PURE: is an answer grounded in the messages Casper showed the model?

Imports: stdlib, casper.plaintext (the invisible characters). Used by `agent.core` (guards
`ungrounded_answer`, `echoed_prompt`, the citation check) and by `answer` (which questions need
no messages at all).

- Small talk ("hi", "what can you do?") needs no messages: it is exempt from the grounding guard.
- A citation is a `[#rowid]` marker; one whose rowid no tool result (or the prefetch) showed is
  invented, so it is removed from the answer and counted.
- An answer whose words all come from what Casper itself wrote into the prompt (coverage line,
  date notes, contact ranking) says nothing new: it counts as empty.
- An abstention ("I could not find…") is an honest answer without citations.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from casper.plaintext import INVISIBLE

CITE_TAG = re.compile(r"[ \t]?\[#(\d+)\]")  # never the line break before it: lines stay lines
# what a reader takes for a citation besides `[#12]`: `[# 12]`, `[#12, #13]`, `[#12,13]`,
# fullwidth `［＃12］`, invisible characters inside, `(#12)`: each written as `[#12]` first, so
# the check that reads `[#12]` judges it (and an invented one is removed like any other)
_LED = re.compile(r"[ \t>*•-]*(?:\d+[.)][ \t]*)?\[#(\d+)\]")  # a line a tag leads
_GAP = rf"[ \t{INVISIBLE}]*"
_LOOSE_TAG = re.compile(
    rf"(?P<open>[\[［(]){_GAP}[#＃﹟]{_GAP}(?P<ids>\d+(?:{_GAP}[,;]{_GAP}[#＃﹟]?{_GAP}\d+)*)"
    rf"{_GAP}(?P<close>[\]］)])"
)
_WORD = re.compile(r"\w+")
_FIGURE = re.compile(r"\d+(?:[.,:-]\d+)*")
_SMALL_TALK = re.compile(
    r"^\s*(?:(?:hi|hello|hey|hiya|yo|howdy|good (?:morning|afternoon|evening)|thanks|thank you|"
    r"thx|ok|okay|cool|great|bye|goodbye)(?:\s+(?:casper|there|again|so much|a lot))?"
    r"|how are you(?: doing)?(?: today)?"
    r"|who are you|what are you|what is casper|what's casper"
    r"|what can you do|what do you do|how do(?:es)? (?:you|this|casper) work"
    r"|help|what can i ask(?: you)?|how can you help(?: me)?)\s*[.!?]*\s*$",
    re.IGNORECASE,
)
_ABSTAIN = re.compile(
    r"\b(?:could ?n[o']?t|can ?not|can't|did ?n[o']?t|was ?n[o']?t able to|unable to) find"
    r"|\bno (?:relevant |matching )?(?:messages?|results?|mentions?)\b"
    r"|\bnothing (?:relevant|about|found|matching|mentioning)\b"
    r"|\bfound nothing\b|\bnot mentioned\b|\bno (?:information|record)\b"
    r"|\bdo(?:n't| not) (?:know|see)\b|\bnothing (?:on|in your)\b"
    r"|\bnot (?:in|from) (?:your|the) (?:messages|conversations?)\b",
    re.IGNORECASE,
)


def needs_messages(question: str) -> bool:
    """False for greetings, thanks and questions about Casper itself; True for everything else."""
    return not _SMALL_TALK.match(question.replace("\u2019", "'"))


def abstains(text: str) -> bool:
    """True when the text says nothing relevant was found."""
    return bool(_ABSTAIN.search(text.replace("\u2019", "'")))


def canonical_tags(text: str) -> str:
    """Every citation the reader would take for one written `[#rowid]` (`[# 12]`, `[#12, 13]`,
    `［＃12］`, `(#12)`); a bracket that opens one way and closes another is left alone."""

    def canonical(match: re.Match[str]) -> str:
        if (match["open"] == "(") != (match["close"] == ")"):
            return match.group(0)
        return "".join(f"[#{rowid}]" for rowid in re.findall(r"\d+", match["ids"]))

    return _LOOSE_TAG.sub(canonical, text)


def check_citations(text: str, known: Collection[int]) -> tuple[str, int]:
    """Remove `[#rowid]` markers whose rowid is not in `known` (citations written another way
    first written `[#rowid]`); returns (text, removed count)."""
    text = canonical_tags(text)
    removed = 0

    def keep_or_drop(match: re.Match[str]) -> str:
        nonlocal removed
        if int(match.group(1)) in known:
            return match.group(0)
        removed += 1
        return ""

    lines = []
    for line in text.split("\n"):
        led = _LED.match(line)
        if led is not None and int(led.group(1)) not in known:
            removed += len(CITE_TAG.findall(line))  # a message line of no message shown:
            continue  # its sender, time and words are the model's alone
        lines.append(CITE_TAG.sub(keep_or_drop, line))
    return ("\n".join(lines).strip(), removed) if removed else (text, 0)


def cited_rowids(text: str) -> tuple[int, ...]:
    """The rowids of the `[#rowid]` markers in the text, in order, each once."""
    return tuple(dict.fromkeys(int(m) for m in CITE_TAG.findall(text)))


def shares_figure(text: str, sources: Iterable[str]) -> bool:
    """True when the answer repeats a number from a stats result (counts, dates, ranks)."""
    figures = set(_FIGURE.findall(CITE_TAG.sub(" ", text)))
    return bool(figures) and any(figures & set(_FIGURE.findall(s)) for s in sources)


def is_echo(text: str, prompt_texts: Iterable[str]) -> bool:
    """True when every word of the answer (citations aside) appears in Casper's own prompt text.

    The question itself is not prompt text: restating it is caught by the grounding guard.
    """
    words = set(_WORD.findall(CITE_TAG.sub(" ", text).lower()))
    if not words:
        return True
    source: set[str] = set()
    for chunk in prompt_texts:
        source |= set(_WORD.findall(chunk.lower()))
    return bool(source) and words <= source
