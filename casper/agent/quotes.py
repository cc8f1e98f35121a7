"""PURE: what an answer says of the messages it cites, checked against those messages, and the
messages it shows rendered from them.

Imports: stdlib, casper.agent.quoting, casper.agent.speakers (who and when a sentence names).
`casper.agent.verify` reads the cited messages from the store and runs `check` on every answer,
whatever wrote it: a model through a server or in-process, the search-only answer, the stats.

- A **message line** shows a message: a line led by `[#id]` (`[#12] 2023-11-03 18:43 Sam Rivera:
  text`, or only `[#12] text`; after a bullet or a list number, or after any text when a sender
  someone has follows the tag), or a transcript line that names a sender and ends with the tag
  (`- Sam: text [#12]`). What the reader sees of it — sender, day and time, words — is the
  message's own: a line that agrees is kept as written, any other is written again from the
  message. One whose words are not that message's, whose sender is someone else or whose time
  is another is a misattribution: written again from the message and marked `CORRECTED` on
  that same line.
- A **quotation** ("…", “…”, ‘…’, «…», „…“) with a `[#id]` in its sentence (the tags after it,
  or after the quotations that follow it in its sentence, else before it) claims that message's
  words; a sender named just before the tag or the quotation ("Sam said …", "**Sam** responded
  …", "According to Sam, …", "From Sam [#12]: …") or just after it ("…," Sam said) claims its
  sender. One that fails loses its tag and is marked `MARK` where it ends.
- Words hold when they are that message's words — the same words in order, whatever the case,
  punctuation or apostrophes, a part of them, or parts joined by an ellipsis — within that one
  message: a neighbour's words, sender or time are never that message's. A paraphrase claims
  no wording and is not judged (a neighbour may support it).
- An answer that ends in a half-written citation (`[#2`) was cut off: the half tag goes and
  `CUT_OFF` ends it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from casper.agent.quoting import message_line, quote
from casper.agent.speakers import fold, named, named_after, names_another, when_said, written_when

MARK = " (not in the cited message)"
CORRECTED = " (corrected: the answer misquoted this message)"
CUT_OFF = "(the answer was cut off here)"
MARKS = (MARK, CORRECTED)  # what says, on its line, that a citation failed
MIN_WORDS = 1  # words a quotation needs to claim wording: "yes" on a message that says "no" lies

_TAG = re.compile(r"\[#(\d+)\]")
_GROUP = re.compile(r"\[#\d+\](?:[ \t]*\[#\d+\])*")  # tags side by side cite one thing
_CUT = re.compile(r"\[(?:#\d*(?:[ \t]*[,;][ \t]*#?\d*)*)?[ \t]*\Z")  # "[#2" "[#12, #3"
_QUOTE = re.compile(
    r"\"(?P<straight>[^\"\n]+)\"|“(?P<curly>[^”\n]+)”|„(?P<low>[^“”\n]+)[“”]|«(?P<angle>[^»\n]+)»"
    r"|(?<!\w)‘(?P<single>[^\n]+?)’(?!\w)"  # ‘I’ll do it’: a ’ inside a word is an apostrophe
    r"|(?<![\w'])'(?P<plain>[^\n]+?)'(?![\w'])"  # 'I'll do it' likewise
)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_BULLETS = " \t-*•>…"
_WHEN = re.compile(r"\(?(\d{4}-\d{2}-\d{2})(?:[ T,]+(\d{1,2}:\d{2}))?\)?[,:]?\s+")
_SPEAKER = re.compile(r"(?P<name>[^:\n\"“”]{1,60}?)\s*:\s+(?P<text>\S.*)")
_ASIDE = re.compile(r"\s*\([^)\n]*\)\s*$")  # "Alex Chen (in Climbing crew)"
_EMPHASIS_NAME = re.compile(r"^\*{0,2}([^*:\n]{1,60}):\*{1,2}(?=\s)")  # "**Sam:** text"
_BULLET_RUN = re.compile(r"(?:[ \t•>…-]|\*(?=[ \t]))*")  # "- " and "* ", not "**Sam**"
_LONE_QUOTE = re.compile(r"[ \t>]*(?:\"[^\"\n]+\"|“[^”\n]+”)[ \t.,;!?]*")
_NAME_AT = re.compile(
    r"(?P<name>[^:\n\"“”()]{1,60}?)\s*\((?P<when>[^()\n]*)\)\s*:\s+(?P<text>\S.*)"
)
_NAME_DATED = re.compile(r"(?P<name>[^,\d]+),\s*(?P<when>[^,]*\d[^,]*)")
_WHEN_CELL = re.compile(r"\(?(?:\d{4}-\d{2}-\d{2}(?:[ T,]+\d{1,2}:\d{2})?|\d{1,2}:\d{2})\)?")
_LIST_NUMBER = re.compile(r"[ \t>*•-]*\d+[.)][ \t]*")  # "1. [#12] …" leads with its tag
_WORDS = re.compile(r"\w+")
_ELLIPSIS = re.compile(r"…|\.{3,}")


@dataclass(frozen=True, slots=True)
class Cited:
    """A cited message as the store has it, as a message line shows it."""

    rowid: int
    when: str  # local "YYYY-MM-DD HH:MM"
    sender: str  # "me" or the display name
    speaker: str  # who sent it: "me" or the person's id (what `people` maps names to)
    text: str


@dataclass(frozen=True, slots=True)
class Checked:
    """The answer as the reader gets it, and what the check found."""

    answer: str
    claims: int  # message lines, quotations and named senders checked
    misattributed: tuple[int, ...]  # ids an answer gave words, a sender or a time they lack
    kept: tuple[int, ...]  # ids still cited
    cut_off: bool = False  # it ended in a half-written citation


@dataclass
class _Tally:
    claims: int = 0
    bad: dict[int, None] | None = None

    def judged(self, rowids: list[int]) -> None:
        self.claims += 1
        if rowids:
            self.bad = {**(self.bad or {}), **dict.fromkeys(rowids)}


def check(answer: str, cited: Mapping[int, Cited], people: Mapping[str, frozenset[str]]) -> Checked:
    """The answer with every message it shows rendered from `cited` (the messages by id),
    failed message lines corrected and marked, failed quotations marked and uncited; `people`
    maps each name an answer may write (lower case) to who it can mean. Ids not in `cited`
    are not judged."""
    text = answer.rstrip()
    cut = _CUT.search(text)
    if cut is not None:
        text = text[: cut.start()].rstrip()
    tally = _Tally()
    lines = [_line(line, cited, people, tally) for line in _joined(text.split("\n"))]
    out = "\n".join(lines).strip()
    if cut is not None:
        out = f"{out}\n{CUT_OFF}" if out else CUT_OFF
    return Checked(out, tally.claims, tuple(tally.bad or ()), cited_ids(out), cut is not None)


def _joined(lines: list[str]) -> list[str]:
    """Lines a reader reads as one: a quotation opened on a line and closed on the next, and a
    line that cites and ends in ":" with the quotation it introduces alone on the next line
    (`[#12] Sam:` / `"…"`). Markdown shows a single line break inside a paragraph as a space."""
    out: list[str] = []
    for line in lines:
        if out and _continues(out[-1], line):
            out[-1] = out[-1].rstrip() + " " + line.strip(" \t>")
        else:
            out.append(line)
    return out


def _continues(before: str, line: str) -> bool:
    if before.count('"') % 2 == 1 and line.count('"') % 2 == 1:
        return True
    alone = _LONE_QUOTE.fullmatch(line)
    return alone is not None and before.rstrip().endswith(":") and bool(_TAG.search(before))


def holds(words: str, text: str) -> bool:
    """True when `words` are `text`'s: the same words in order, in any case and punctuation,
    a part of them, or parts an ellipsis joins, in that order."""
    have = _tokens(text)
    at = 0
    for piece in _ELLIPSIS.split(words):
        want = _tokens(piece)
        if not want:
            continue
        found = _find(want, have, at)
        if found < 0:
            return False
        at = found + len(want)
    return True


# ---- one line ------------------------------------------------------------------------------
def _line(
    line: str, cited: Mapping[int, Cited], people: Mapping[str, frozenset[str]], tally: _Tally
) -> str:
    groups = list(_GROUP.finditer(line))
    if not groups or not any(int(r) in cited for g in groups for r in _TAG.findall(g.group())):
        return line
    lead = line[: groups[0].start()]
    if line.lstrip().startswith("|"):
        row = _table_row(line, cited, people, tally)
        if row is not None:
            return row
    if _leads(line, groups, people):
        return lead + _shown(line, groups, cited, people, tally, leads=True)
    if _is_transcript(line, groups, people):
        return _shown(line, groups, cited, people, tally, leads=False)
    return _prose(line, cited, people, tally)


def _table_row(
    line: str, cited: Mapping[int, Cited], people: Mapping[str, frozenset[str]], tally: _Tally
) -> str | None:
    """A table row with a cell of tags: the cell naming a sender is the sender, a cell that is
    a day and time the time, the longest other cell the words. One that disagrees is written
    again from the message (those cells) and marked in its last cell; None when it is no such
    row."""
    cells = line.strip().strip("|").split("|")
    tagged = [i for i, cell in enumerate(cells) if _GROUP.fullmatch(cell.strip())]
    if len(tagged) != 1:
        return None
    known = [cited[int(r)] for r in _TAG.findall(cells[tagged[0]]) if int(r) in cited]
    if not known:
        return None
    others = [i for i in range(len(cells)) if i != tagged[0]]
    named = [i for i in others if fold(cells[i].strip(" *")) in people][:1]
    dated = [i for i in others if i not in named and _WHEN_CELL.fullmatch(cells[i].strip())][:1]
    rest = [i for i in others if i not in named + dated]
    said = [max(rest, key=lambda i: len(cells[i].strip()))] if rest else []
    name = cells[named[0]].strip(" *") if named else None
    when = written_when(cells[dated[0]]) if dated else None
    words = cells[said[0]].strip() if said else ""
    agree = [m for m in known if _agrees(m, when, name, words, people)]
    tally.judged([] if agree else [m.rowid for m in known])
    if agree:
        return line
    m = known[0]
    for at, value in ((named, m.sender), (dated, m.when), (said, m.text)):
        if at:
            cells[at[0]] = quote(value).replace("|", "\\|")
    cells[-1] = cells[-1].rstrip() + CORRECTED  # inside the row, where a table shows it
    return "| " + " | ".join(cell.strip() for cell in cells) + " |"


def _leads(line: str, groups: list[re.Match[str]], people: Mapping[str, frozenset[str]]) -> bool:
    """A message line led by its tag: nothing but a bullet or a list number before the tag, or
    anything before it and a sender someone has after it ("Here: [#12] Sam: …")."""
    lead = line[: groups[0].start()]
    if not lead.strip(_BULLETS) or _LIST_NUMBER.fullmatch(lead):
        return True
    stop = groups[1].start() if len(groups) > 1 else len(line)
    _, name, _ = _parts(line[groups[0].end() : stop])
    return name is not None and fold(name) in people


def _shown(
    line: str,
    groups: list[re.Match[str]],
    cited: Mapping[int, Cited],
    people: Mapping[str, frozenset[str]],
    tally: _Tally,
    *,
    leads: bool,
) -> str:
    """Message lines: each group of tags with the part it shows (after it when the tags lead,
    before it otherwise), kept when it agrees with the message, else written again from it."""
    out: list[str] = []
    failed = False
    for i, group in enumerate(groups):
        if leads:
            stop = groups[i + 1].start() if i + 1 < len(groups) else len(line)
            part, bullet = line[group.end() : stop], ""
        else:
            begin = groups[i - 1].end() if i else 0
            raw = line[begin : group.start()]
            bullet = _BULLET_RUN.match(raw).group()  # type: ignore[union-attr]
            part = raw[len(bullet) :]
        rowids = [int(r) for r in _TAG.findall(group.group())]
        known = [cited[r] for r in rowids if r in cited]
        if not known:
            out.append(bullet + part + group.group() if not leads else group.group() + part)
            continue
        when, name, words = _parts(part)
        agree = [m for m in known if _agrees(m, when, name, words, people)]
        tally.judged([] if agree else [m.rowid for m in known])
        failed |= not agree
        m = (agree or known)[0]
        shown = group.group() + part if leads else bullet + part + group.group()
        if agree and _verbatim(words, m.text):  # as written: its own words, its own sender
            out.append(shown)
        else:
            written = _render(m, when is not None, leads)
            out.append(written if leads else bullet + written)
    # led: the parts side by side; ended: what follows the last tag (a full stop) stays
    tail = line[groups[-1].end() :]
    text = (" ".join(s.rstrip() for s in out) if leads else "".join(out) + tail).rstrip()
    return text + CORRECTED if failed else text


def _parts(part: str) -> tuple[tuple[str | None, str | None] | None, str | None, str]:
    """(the day and time written, the sender named, the words) of what a message line shows."""
    text = part.strip()
    when = None
    found = _WHEN.match(text + " ")
    if found:
        when = (found.group(1), found.group(2))
        text = text[found.end() :].strip() if found.end() <= len(text) else ""
    timed = _NAME_AT.fullmatch(text)  # "Sam Rivera (18:43): text", "Sam (2023-11-03 18:43): …"
    if timed is not None and when is None:
        written = written_when(timed["when"])
        if written is not None:
            when, text = written, f"{timed['name']}: {timed['text']}"
    spoken = _SPEAKER.fullmatch(text) or _SPEAKER.fullmatch(_EMPHASIS_NAME.sub(r"\1:", text))
    if spoken is None or '"' in spoken["name"]:
        return when, None, text
    name = _ASIDE.sub("", spoken["name"]).strip(_BULLETS + "*")
    dated = _NAME_DATED.fullmatch(name)  # "Sam, Dec 25", "Sam, 2023-11-03"
    if dated is not None and when is None and (found_when := written_when(dated["when"])):
        name, when = dated["name"].strip(), found_when
    return when, name, spoken["text"].strip()


def _agrees(
    m: Cited,
    when: tuple[str | None, str | None] | None,
    name: str | None,
    words: str,
    people: Mapping[str, frozenset[str]],
) -> bool:
    if when is not None and not _at(m, when):
        return False
    if name is not None and m.speaker not in people.get(fold(name), frozenset()):
        return False
    unquoted = words.strip().strip('"“”').strip()
    return len(_tokens(unquoted)) < MIN_WORDS or holds(unquoted, m.text)


def _at(m: Cited, when: tuple[str | None, str | None]) -> bool:
    """The message was sent on that day (a whole date, or "-MM-DD" from "Dec 25") at that time."""
    day, clock = when
    if day is not None and not m.when[:10].endswith(day):
        return False
    return clock is None or clock.zfill(5) == m.when[11:16]


def _render(m: Cited, dated: bool, leads: bool) -> str:
    if leads:
        return message_line(m.rowid, m.when if dated else "", m.sender, m.text)
    when = f"{m.when} " if dated else ""
    return f"{when}{quote(m.sender)}: {quote(m.text)} [#{m.rowid}]"


def _verbatim(words: str, text: str) -> bool:
    """The words shown are the message's, as a message line writes them (one line; a long
    one may end early in "…")."""
    shown, said = " ".join(words.split()), " ".join(quote(text).split())
    return shown == said or (shown.endswith("…") and said.startswith(shown[:-1]) and len(shown) > 1)


def _is_transcript(
    line: str, groups: list[re.Match[str]], people: Mapping[str, frozenset[str]]
) -> bool:
    """ "- Sam: text [#12]": every part before a tag names a sender someone has, and nothing
    but tags follows the last one."""
    if line[groups[-1].end() :].strip(" .,;"):
        return False
    begin = 0
    for group in groups:
        _, name, _ = _parts(line[begin : group.start()].lstrip(_BULLETS))
        if name is None or fold(name) not in people:
            return False
        begin = group.end()
    return True


# ---- prose: quotations and named senders --------------------------------------------------
def _prose(
    line: str, cited: Mapping[int, Cited], people: Mapping[str, frozenset[str]], tally: _Tally
) -> str:
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement)
    for rowids, words, end, tags, name, when in _claims(line, people):
        known = [cited[r] for r in rowids if r in cited]
        if not known:
            continue
        said = [m for m in known if (not words or holds(words, m.text))]
        said = [m for m in said if name is None or m.speaker in people.get(name, frozenset())]
        said = [m for m in said if when is None or _at(m, when)]
        tally.judged([] if said else [m.rowid for m in known])
        if not said:
            edits.append((end, end, MARK))
            edits += [(_spaced(line, start, stop), stop, "") for start, stop in tags]
    for start, stop, new in sorted(set(edits), reverse=True):
        line = line[:start] + new + line[stop:]
    if edits:
        line = re.sub(r"[ \t]+(?=[ \t.,;:!?)]|$)", "", line)
        line = re.sub(r"(?<=\S)[ \t]{2,}", " ", line)
    return line


# (ids, quoted words or "", where the mark goes, the tags' spans, the sender named, the day
# and time written before "NAME said")
Claim = tuple[
    list[int], str, int, list[tuple[int, int]], str | None, tuple[str | None, str | None] | None
]


def _claims(line: str, people: Mapping[str, frozenset[str]]) -> list[Claim]:
    """(ids, quoted words or "", where the mark goes, the tags' spans, the sender named) for
    each quotation with tags in its sentence, and each sentence naming who said what it cites."""
    found: list[Claim] = []
    quotes = [(m.start(), m.end(), _quoted(m)) for m in _QUOTE.finditer(line)]
    used: set[int] = set()
    for i, (start, end, words) in enumerate(quotes):
        stop = quotes[i + 1][0] if i + 1 < len(quotes) else len(line)
        sentence_end = _SENTENCE_END.search(line, end)
        stop = min(stop, sentence_end.end()) if sentence_end else stop
        # tags inside the quotation ("I'm in [#12]") or after it in its sentence claim it
        tags = list(_TAG.finditer(line, start, stop))
        if not tags:  # "Sam said "…" and "…" [#12]": the tags after the quotations that follow
            tags = _after_following(line, quotes, i, sentence_end.end() if sentence_end else None)
        mark = tags[-1].end() if tags and tags[-1].start() >= end else end
        words = _TAG.sub(" ", words)
        if not tags:
            begin = quotes[i - 1][1] if i else _sentence_start(line, start)
            tags = list(_TAG.finditer(line, max(begin, _sentence_start(line, start)), start))
        if not tags:
            continue
        used.update(t.start() for t in tags)
        text = words if len(_tokens(words)) >= MIN_WORDS else ""
        name = named(_TAG.sub(" ", line[_sentence_start(line, start) : start]), people)
        if name is None:  # "…," Sam said [#12]
            name = named_after(_TAG.sub(" ", line[end:stop]), people)
        when = when_said(_TAG.sub(" ", line[_sentence_start(line, start) : start]))
        found.append(([int(t.group(1)) for t in tags], text, mark, _spans(tags), name, when))
    for tag in _TAG.finditer(line):  # "Sam said he'd bring pie [#12]": who, not what
        if tag.start() in used:
            continue
        name = named(_TAG.sub(" ", line[_sentence_start(line, tag.start()) : tag.start()]), people)
        if name is not None:
            when = when_said(_TAG.sub(" ", line[_sentence_start(line, tag.start()) : tag.start()]))
            found.append(([int(tag.group(1))], "", tag.end(), _spans([tag]), name, when))
    return found


def _quoted(match: re.Match[str]) -> str:
    return next(words for words in match.groups() if words is not None)


def _after_following(
    line: str, quotes: list[tuple[int, int, str]], i: int, sentence_end: int | None
) -> list[re.Match[str]]:
    """The tags after the quotations that follow quotation `i` in its sentence, when nothing
    between them names another sender ("…" and "…" [#12])."""
    stop = sentence_end if sentence_end is not None else len(line)
    at = quotes[i][1]
    for start, end, _ in quotes[i + 1 :]:
        if start >= stop or names_another(line[at:start]) or _TAG.search(line, at, start):
            return []
        at = end
    following = _TAG.search(line, at, stop)
    if following is None or line[at : following.start()].strip(" \t,;:"):
        return []
    group = _GROUP.match(line, following.start())
    return list(_TAG.finditer(line, following.start(), group.end() if group else stop))


def _spaced(line: str, start: int, stop: int) -> int:
    """Where a tag's removal starts: with the spaces before it when it closes a quotation."""
    if line[stop : stop + 1] in ('"', "”"):
        return len(line[:start].rstrip(" \t"))
    return start


def _sentence_start(line: str, at: int) -> int:
    ends = [m.end() for m in _SENTENCE_END.finditer(line, 0, at)]
    return ends[-1] if ends else 0


def _spans(tags: list[re.Match[str]]) -> list[tuple[int, int]]:
    return [(t.start(), t.end()) for t in tags]


def cited_ids(text: str) -> tuple[int, ...]:
    """The ids an answer cites, in order, each once."""
    return tuple(dict.fromkeys(int(m) for m in _TAG.findall(text)))


def _tokens(text: str) -> list[str]:
    folded = text.replace("\u2019", "").replace("\u2018", "").replace("'", "").lower()
    return _WORDS.findall(folded.replace("⏎", " "))


def _find(want: list[str], have: list[str], start: int) -> int:
    for i in range(start, len(have) - len(want) + 1):
        if have[i : i + len(want)] == want:
            return i
    return -1
