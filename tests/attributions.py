"""What an answer tells its reader about the messages it cites, judged against the messages.

Every line of an answer that cites `[#id]` and carries no mark must say only what message #id
says: a transcript line (`[#id] 2023-11-03 18:43 Sam Rivera: text`, `Sam: text [#id]`) its
sender, day and time and words; a quotation on the line ("…") words of that message; a sender
named in the prose before a quotation ("Sam said …") its sender. A neighbour's words, sender or
time on the id are false attributions, whatever the neighbour says.

Written apart from casper.agent.quotes on purpose (it judges that code's output): used by the
citation tests (scripted model servers, the property test) and by the SmolLM2 measurement
(bench/smollm2_answers.py), which looks the messages up with `casper show --json`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, tzinfo

TAG = re.compile(r"\[#(\d+)\]")
_QUOTE = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”")
_WHEN = re.compile(r"^\(?(\d{4}-\d{2}-\d{2})(?:[ T,]+(\d{1,2}:\d{2}))?\)?[,\s]*")
_SPEAKER = re.compile(r"^(?P<name>[^:\n\"“]{1,40}?)\s*:\s+(?P<text>\S.*)$")
_SAID = re.compile(
    r"(?P<name>\b[A-Z][\w'’+-]*(?: [A-Z][\w'’+-]*)?|\bme|\bI|\byou)\s+"
    r"(?:said|says|wrote|writes|texted|replied|asked|answered)\b[^\"“]*$"
)
_WORD = re.compile(r"\w+")
_BULLET = " \t-*•>…."
OWNER = ("me", "i", "you")  # how an answer names the owner's own messages


@dataclass(frozen=True, slots=True)
class Shown:
    """A message as the reader should see it: who sent it, when (local, minutes), what."""

    sender: str  # "me" or the display name
    when: str  # "YYYY-MM-DD HH:MM"
    text: str


Lookup = Callable[[int], Shown | None]


def store_lookup(store: object, tz: tzinfo) -> Lookup:
    """Messages by rowid from a casper Store, in the zone the answer was written in."""
    names: dict[str, str] = store.names()  # type: ignore[attr-defined]

    def look(rowid: int) -> Shown | None:
        m = store.message(rowid)  # type: ignore[attr-defined]
        if m is None:
            return None
        when = datetime.fromtimestamp(m.ts, tz).strftime("%Y-%m-%d %H:%M")
        return Shown("me" if m.sender == "me" else names.get(m.sender, m.sender), when, m.text)

    return look


def false_attributions(answer: str, look: Lookup, marks: Iterable[str]) -> list[str]:
    """Each line that cites an id and is not marked (holds none of `marks`) yet attributes to
    it words, a sender or a time that message does not have: the line, and what is wrong."""
    wrong: list[str] = []
    marks = [m.strip() for m in marks if m.strip()]
    for line in answer.splitlines():
        if any(mark in line for mark in marks):
            continue
        tags = list(TAG.finditer(line))
        if not tags:
            continue
        for problem in _judge(line, tags, look):
            wrong.append(f"{line!r}: {problem}")
    return wrong


def unmarked_lines_with(answer: str, words: str, look: Lookup, marks: Iterable[str]) -> list[str]:
    """Lines that show `words` unmarked without citing a message that holds them (a false
    quote whose tag was dropped still reaches the reader)."""
    marks = [m.strip() for m in marks if m.strip()]
    out = []
    for line in answer.splitlines():
        if any(mark in line for mark in marks) or _norm(words) not in _norm(line):
            continue
        held = [look(int(t.group(1))) for t in TAG.finditer(line)]
        if not any(s is not None and holds(words, s.text) for s in held):
            out.append(line)
    return out


def holds(words: str, text: str) -> bool:
    """True when `text` says `words`: the same words in order, or (a near match inside that
    one message) every content word and every number of them."""
    said, where = _norm(words), _norm(text)
    if not said or said in where:
        return True
    mine = _WORD.findall(said)
    theirs = set(_WORD.findall(where))
    numbers = [w for w in mine if w.isdigit()]
    return len(mine) >= 3 and all(w in theirs for w in mine) and all(n in theirs for n in numbers)


def same_sender(written: str, sender: str) -> bool:
    """`written` names `sender`: the display name, its first word, or the owner as me/I/you."""
    w = written.strip().lower()
    s = sender.strip().lower()
    if s == "me":
        return w in OWNER
    return w == s or w == s.split()[0]


def _judge(line: str, tags: list[re.Match[str]], look: Lookup) -> list[str]:
    problems: list[str] = []
    shown = {int(t.group(1)): look(int(t.group(1))) for t in tags}
    for rowid, message in shown.items():
        if message is None:
            problems.append(f"#{rowid} is no message")
    cited = [m for m in shown.values() if m is not None]
    if not cited:
        return problems
    quotes = [(q.start(), q.group(1) or q.group(2)) for q in _QUOTE.finditer(line)]
    for start, words in quotes:
        if not _WORD.findall(words):
            continue
        if not any(holds(words, m.text) for m in cited):
            problems.append(f"{words!r} is in no cited message")
        said = _SAID.search(line[:start])
        if said and not any(same_sender(said["name"], m.sender) for m in cited):
            problems.append(f"{said['name']!r} sent none of the cited messages")
    if quotes:
        return problems
    leads = not line[: tags[0].start()].strip(_BULLET)
    for i, tag in enumerate(tags):
        message = shown[int(tag.group(1))]
        if message is None:
            continue
        if leads:
            stop = tags[i + 1].start() if i + 1 < len(tags) else len(line)
            part = line[tag.end() : stop]
        else:
            part = line[tags[i - 1].end() if i else 0 : tag.start()]
        problems += _transcript(part.strip(_BULLET), message, int(tag.group(1)))
    return problems


def _transcript(part: str, message: Shown, rowid: int) -> list[str]:
    """A `when sender: text` part of a line, against the message its tag names."""
    when = _WHEN.match(part)
    problems: list[str] = []
    if when:
        day, clock = when.group(1), when.group(2)
        if day != message.when[:10] or (clock and clock.zfill(5) != message.when[11:16]):
            problems.append(f"#{rowid} was sent {message.when}, not {when.group(0).strip()}")
        part = part[when.end() :]
    spoken = _SPEAKER.match(part.strip())
    if spoken is None:
        return problems  # prose that cites the id: it claims no sender or words
    name, text = spoken["name"].strip(_BULLET), spoken["text"].strip()
    if not same_sender(name, message.sender):
        problems.append(f"#{rowid} is from {message.sender}, not {name}")
    if len(_WORD.findall(text)) and not holds(text, message.text):
        problems.append(f"#{rowid} says {message.text!r}, not {text!r}")
    return problems


def _norm(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("⏎", " ").lower()
    return " ".join(_WORD.findall(text))
