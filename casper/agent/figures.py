"""PURE: a model's words around the stats' figures, kept only where its figures are theirs.

A question the stats answer (casper.agent.stats_route, casper.agent.fact_route) is answered
with their figures first; a model may add words, and a sentence of its words whose numbers,
dates or times are not the stats' is dropped (the figures already say what is true). A number
agrees when the stats give it, when it is the total of some of their numbers (207 sent and 205
received is 412 messages), or when the question itself says it ("in 2023", "top 3"). People
are figures too: a sentence naming someone the stats do not name is dropped, and one that
says who is first ("most", "top") must name whom the stats name first.

Imports: stdlib only.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

_TAG = re.compile(r"\[#\d+\]")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_TIME = re.compile(r"\b\d{1,2}:\d{2}\b")
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d,])|(?<![\w.,])\d+(?:\.\d+)?")
# a count in words states a figure too ("five messages", "half a dozen", "a few thousand");
# "one" is left out: "one-to-one", "the one you text most" count nothing
_COUNT_WORD = re.compile(
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty|thirty|"
    r"forty|fifty|sixty|seventy|eighty|ninety|hundreds?|thousands?|dozens?|millions?)\b",
    re.IGNORECASE,
)
# a sentence that says who comes first: its first name must be the stats' first
_FIRST = re.compile(r"\b(?:most|top|busiest|favou?rite|number one|#1)\b", re.IGNORECASE)
_LIST_MARK = re.compile(r"(?m)^\s*\d+\.\s")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
MOST_ADDENDS = 8  # the totals of up to this many numbers are tried


def figures(text: str) -> set[str]:
    """The dates, times and numbers a text states, counts in words among them (ids in `[#…]`
    are not figures)."""
    text = _TAG.sub(" ", text)
    found: set[str] = set(_DATE.findall(text))
    text = _DATE.sub(" ", text)
    found |= {t.zfill(5) for t in _TIME.findall(text)}
    text = _TIME.sub(" ", text)
    found |= {f"~{w.lower()}" for w in _COUNT_WORD.findall(text)}
    return found | {n.replace(",", "") for n in _NUMBER.findall(text)}


def agreeing(
    words: str, stats: str, question: str = "", people: Mapping[str, str] | None = None
) -> tuple[str, bool]:
    """(the model's `words` without the sentences stating a figure `stats` does not, whether
    any was dropped); lines are kept as lines. `people`: each way a name is written (a full
    name, a first name) → whom it names."""
    addends = _LIST_MARK.sub(" ", stats)  # a ranking's "1." "2." are places, not counts to add
    allowed = figures(stats) | figures(question) | _totals(figures(addends))
    people = people or {}
    named = [who for _, who in _named(stats, people)] + [w for _, w in _named(question, people)]
    first = named[0] if named else None

    def agrees(sentence: str) -> bool:
        if not figures(sentence) <= allowed:
            return False
        said = [who for _, who in _named(sentence, people)]
        if any(who not in named for who in said):
            return False
        return not (said and _FIRST.search(sentence) and said[0] != first)

    kept_lines: list[str] = []
    dropped = False
    for line in words.splitlines():
        kept = [s for s in _SENTENCE.split(line.strip()) if s and agrees(s)]
        dropped |= len(kept) < len([s for s in _SENTENCE.split(line.strip()) if s])
        if kept:
            kept_lines.append(" ".join(kept))
    return "\n".join(kept_lines).strip(), dropped


def _totals(found: set[str]) -> set[str]:
    numbers = sorted({int(n) for n in found if n.isdigit()})[:MOST_ADDENDS]
    sums: set[str] = set()
    for size in range(2, len(numbers) + 1):
        sums |= {str(sum(c)) for c in itertools.combinations(numbers, size)}
    return sums


def _named(text: str, people: Mapping[str, str]) -> list[tuple[int, str]]:
    """(where, whom) for each name of `people` written in `text` as a whole word, in order; a
    longer name wins over a name inside it ("Sam Rivera" over "Sam")."""
    found: list[tuple[int, int, str]] = []
    for written in sorted(people, key=len, reverse=True):
        for m in re.finditer(rf"(?<!\w){re.escape(written)}(?!\w)", text):
            if not any(s <= m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), people[written]))
    return sorted((s, who) for s, _, who in found)


def written_names(names: Mapping[str, str]) -> dict[str, str]:
    """Each way a person's name is written (the display name, its first word when that is a
    capitalised word no one else's name starts with) → the display name; "me" left out."""
    out: dict[str, str] = {}
    firsts: dict[str, set[str]] = {}
    for name in names.values():
        if name == "me" or not name.strip():
            continue
        out[name] = name
        word = name.split()[0]
        if len(word) > 1 and word[:1].isupper() and word.isalpha():
            firsts.setdefault(word, set()).add(name)
    for word, whom in firsts.items():
        if len(whom) == 1 and word not in out:
            out[word] = next(iter(whom))
    return out
