"""PURE: does the text an answer attributes to `[#rowid]` appear in that message?

Imports: stdlib only (difflib). Used by `agent.answer`, which reads the cited messages (and
their neighbours in the same chat) from the store and runs this on every answer, whatever
wrote it: the model through a server or in-process, the search-only path, the stats.

What counts as attributed (a paraphrase in the answer's own words is not checked: it claims
no wording):
- a quotation ("…" or “…”) in the same sentence as a `[#rowid]`: the tags after it up to the
  next quotation or the sentence's end, else the tags before it in that sentence;
- a transcript line: `[#rowid] Sam Rivera: text` (the text after the tag) or
  `Sam Rivera: text [#rowid]` (the text before it), as Casper itself prints messages.

A claim holds when its words are contained, fuzzily, in the cited message or its context
window: the exact words in order, or a close alignment (difflib's ratio over the best
window, as a "partial ratio"), or most of its words present. Thresholds were set on the
cases in `bench/citations.py` (docs/reliability.md#misquoted-citations).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher

_TAG = re.compile(r"\[#(\d+)\]")
_QUOTE = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
# "- 2023-11-20, Sam Rivera: text", "… Me: text", "Sam (2023-11-20 17:40): text"
_SPEAKER = re.compile(
    r"^[\s\-*•>…\.,:]*(?:\(?[\d\-/:T,. ]{4,}\)?[,\s]*)?(?:…|\.\.\.)?\s*"
    r"(?P<name>[A-Za-zÀ-ÿ'’][\w'’\-. ]{0,40}?)\s*(?:\([^)\n]{0,40}\))?\s*:\s+(?P<text>\S.*)$"
)
_WORD = re.compile(r"\w+")
# words every message has: "is it pouring where you are" is not "is it humid where you are"
_FUNCTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        """a an and are as at be but by can do did for from had has have he her his i if in is
        it its m me my no not of on or our re s she so t that the their them they this to was
        we were what when where who will with you your""",
    )
)
PARTIAL_RATIO = 0.8  # difflib ratio of the claim against its best-aligned window of the source
WORD_SHARE = 0.75  # share of the claim's content words the source holds (order aside)
MIN_WORDS = 2  # a claim of one word ("ok") is not a quote worth checking
MARK = " (not in the cited message)"


@dataclass(frozen=True, slots=True)
class Claim:
    """Text the answer attributes to one or more cited messages (it holds if any says it)."""

    rowids: tuple[int, ...]
    text: str
    end: int  # where the claim's tags end in the answer: the mark goes there
    tags: tuple[tuple[int, int], ...] = ()  # where its `[#rowid]` tags are in the answer


@dataclass(frozen=True, slots=True)
class Checked:
    """The answer with misattributed citations removed and their claims marked."""

    answer: str
    claims: int  # claims checked
    misattributed: tuple[int, ...]  # rowids cited for text they do not hold, in answer order
    kept: tuple[int, ...]  # rowids still cited after the check


def claims(answer: str) -> list[Claim]:
    """Every quotation and transcript line the answer attributes to `[#rowid]`s."""
    found: list[Claim] = []
    offset = 0
    for line in answer.split("\n"):
        body = line.rstrip()
        if _TAG.search(body):
            found += [
                Claim(c.rowids, c.text, c.end + offset, _shift(c.tags, offset))
                for c in (_quoted(body) or _transcript(body))
            ]
        offset += len(line) + 1
    return [c for c in found if len(_words(c.text)) >= MIN_WORDS]


def holds(claim: str, source: str) -> bool:
    """True when the claim's words are (fuzzily) contained in the source text."""
    said, where = _norm(claim), _norm(source)
    if not said or said in where:
        return True
    words = [w for w in _words(claim) if w not in _FUNCTION_WORDS]
    held = set(_words(source))
    if len(words) >= MIN_WORDS and sum(w in held for w in words) / len(words) >= WORD_SHARE:
        return True  # the same words, reordered or with a few left out
    return partial_ratio(said, where) >= PARTIAL_RATIO


def partial_ratio(short: str, long: str) -> float:
    """The best difflib ratio of `short` against a window of `long` of its length, windows
    starting where the two share a block (the partial ratio of fuzzy matching)."""
    if len(short) > len(long):
        short, long = long, short
    if not short:
        return 0.0
    best = 0.0
    for block in SequenceMatcher(None, short, long, autojunk=False).get_matching_blocks():
        start = max(0, min(block.b - block.a, len(long) - len(short)))
        window = long[start : start + len(short)]
        best = max(best, SequenceMatcher(None, short, window, autojunk=False).ratio())
        if best == 1.0:
            break
    return best


def check(answer: str, sources: Mapping[int, str]) -> Checked:
    """Remove each `[#rowid]` cited for text its message (and neighbours: `sources[rowid]`)
    does not hold, and mark that claim. Rowids with no source are not judged."""
    bad: dict[int, None] = {}
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), applied from the end
    found = claims(answer)
    for claim in found:
        judged = [r for r in claim.rowids if r in sources]
        if judged and not any(holds(claim.text, sources[r]) for r in judged):
            bad.update(dict.fromkeys(judged))
            edits.append((claim.end, claim.end, MARK))
            edits += [(start, end, "") for start, end in claim.tags]
    if not bad:
        return Checked(answer, len(found), (), _cited(answer))
    text = answer
    for start, end, new in sorted(set(edits), key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    text = re.sub(r"[ \t]+(?=[ \t.,;:!?)]|$)", "", text, flags=re.M)
    text = re.sub(r"(?<=\S)[ \t]{2,}", " ", text)
    text = re.sub(r"^[ \t]+", "", text, flags=re.M).strip()
    return Checked(text, len(found), tuple(bad), _cited(text))


def _quoted(line: str) -> list[Claim]:
    spans = [(m.start(), m.end(), m.group(1) or m.group(2)) for m in _QUOTE.finditer(line)]
    out: list[Claim] = []
    for i, (start, end, text) in enumerate(spans):
        stop = spans[i + 1][0] if i + 1 < len(spans) else len(line)
        sentence_end = _SENTENCE_END.search(line, end)
        if sentence_end is not None:
            stop = min(stop, sentence_end.end())
        after = list(_TAG.finditer(line, end, stop))
        if after:
            out.append(_claim(after, text, after[-1].end()))
            continue
        begin = spans[i - 1][1] if i else 0
        ends = [m.end() for m in _SENTENCE_END.finditer(line, begin, start)]
        begin = ends[-1] if ends else begin
        before = list(_TAG.finditer(line, begin, start))
        if before:
            out.append(_claim(before, text, end))
    return out


def _transcript(line: str) -> list[Claim]:
    tags = list(_TAG.finditer(line))
    out: list[Claim] = []
    leads = not line[: tags[0].start()].strip(" \t-*•>")
    for i, tag in enumerate(tags):
        if leads:  # "[#12] Sam: text [#13] Dana: text": the text after each tag
            stop = tags[i + 1].start() if i + 1 < len(tags) else len(line)
            part, end = line[tag.end() : stop], stop
        else:  # "Sam: text [#12]": the text before it
            begin = tags[i - 1].end() if i else 0
            part, end = line[begin : tag.start()], tag.end()
        spoken = _SPEAKER.match(part.rstrip())
        if spoken is not None:
            out.append(_claim([tag], spoken.group("text"), end))
    return out


def _claim(tags: list[re.Match[str]], text: str, end: int) -> Claim:
    rowids = tuple(int(m.group(1)) for m in tags)
    return Claim(rowids, text, end, tuple((m.start(), m.end()) for m in tags))


def _shift(spans: tuple[tuple[int, int], ...], by: int) -> tuple[tuple[int, int], ...]:
    return tuple((start + by, end + by) for start, end in spans)


def _cited(text: str) -> tuple[int, ...]:
    return tuple(dict.fromkeys(int(m) for m in _TAG.findall(text)))


def _norm(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    return " ".join(_WORD.findall(text))


def _words(text: str) -> list[str]:
    return _WORD.findall(text.replace("\u2019", "'").lower())
