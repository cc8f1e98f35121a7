"""PURE: carry the last `casper chat` turn's people, dates and topic into a follow-up question.

"what did she do about it?" or "and what about the license?" says nothing search can use on
its own. When a question leans on the last one (a pronoun, or an opening like "and …", "what
about …"), it is rewritten with what the last turn was about and the follow-up did not replace:
the person (named in the question, else the only other sender among its sources), its explicit
date range, and its topic words. The rewrite is shown to the user (`read as: …`), so nothing
is guessed silently.

A follow-up of a question the stats answer (a count, a ranking, the last or first contact:
`casper.agent.question_kind`) keeps that kind: "how many messages with Sam in 2023?" then "and
Mom?" is asked as "how many messages with Mom in 2023?" (`restate`) — only the person or the
period changes, never into a search for the words "messages 2023".

Imports: stdlib, casper.agent.question_kind (pure).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from casper.agent.question_kind import Kind, kind_of

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
PERSON_PRONOUNS = frozenset({"she", "he", "her", "him", "hers", "his", "they", "them", "their"})
THING_PRONOUNS = frozenset({"it", "that", "this", "those", "these", "there", "then"})
_STOP = (
    "a an and are at be did do does for from had has have how i in is it me my of on or our "
    "she he her him his they them their the to was we were what when where which who why will "
    "with you your about than that this there then any anything ever say said tell told "
    "know last first i'd i'm i've can could would should just really much many"
)
STOPWORDS = frozenset(_STOP.split())


@dataclass(frozen=True, slots=True)
class Turn:
    """What one answered question was about."""

    question: str
    people: tuple[str, ...] = ()  # display names, most salient first; never "me"
    date_range: tuple[date, date] | None = None  # the question's own explicit range
    topic: tuple[str, ...] = ()  # content words of the question
    kind: Kind | None = None  # a count, a ranking, a last or first contact: the stats answer it
    period: str | None = None  # the words its date range came from, as written ("in 2023")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def names_in(text: str, names: Sequence[str]) -> list[str]:
    """Display names mentioned in `text`, by full name or by first name (whole words)."""
    words = set(_words(text))
    found = []
    for name in names:
        first = _words(name)[:1]
        whole = re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text, re.IGNORECASE)
        if whole or (first and first[0] in words and len(first[0]) > 2):
            found.append(name)
    return found


def turn_of(
    question: str,
    citations: Sequence[Mapping[str, object]],
    names: Sequence[str],
    date_range: tuple[date, date] | None,
    previous: Turn | None = None,
    *,
    period: str | None = None,
) -> Turn:
    """Summarise an answered turn (`question` as typed, or as `restate` asked it): people named
    first, then the senders of its sources; `period` is the words `date_range` came from. A
    follow-up of `previous` keeps the topic and dates it leaned on. A question the stats answer
    has no topic: its words are how it asks ("how many messages"), and dates are no topic."""
    kind = kind_of(question)
    people = names_in(question, names)
    for c in citations:
        sender = str(c.get("sender") or "")
        if sender and sender != "me" and sender not in people:
            people.append(sender)
    named = {w for name in people for w in _words(name)}  # the person is carried separately
    keep = [w for w in _words(question) if w not in STOPWORDS and w not in named and len(w) > 2]
    topic = () if kind else tuple(w for w in dict.fromkeys(keep) if not _has_date(w))
    if previous is not None:
        people += [p for p in previous.people if p not in people]
        topic = topic or previous.topic
        date_range = date_range or previous.date_range
    return Turn(question, tuple(people), date_range, topic, kind, period if date_range else None)


def restate(
    question: str, last: Turn | None, names: Sequence[str], period: str | None = None
) -> tuple[str, str] | None:
    """(question to ask, `read as:` line) when `last` is a question the stats answer and
    `question` opens as a follow-up ("and …", "what about …") that says only another person,
    another period (`period`: its date words as written), or both; else None.

    The last question is asked again with just those replaced: "how many messages with Sam in
    2023?" → "and Mom?" → "how many messages with Mom in 2023?"; "who texts me most in 2024?"
    → "and in 2023?" → "who texts me most in 2023?". A ranking given a person, or a question
    that named nobody, becomes that kind's plain question about the person.
    """
    if last is None or last.kind is None:
        return None
    opener = _FOLLOW_UP.match(question)
    if opener is None:
        return None
    rest = question[opener.end() :]
    if period:
        rest = _without(rest, period)
    person = _person_said(rest, names)
    if person is None or not (person or period):
        return None  # words of its own ("and the flight?"): a follow-up search, not a restatement
    when = _as_period(period) if period else last.period
    asked = last.question.strip().rstrip("?!. ")
    if period:
        said = _find(asked, last.period) if last.period else None
        asked = f"{asked[: said[0]]}{when}{asked[said[1] :]}" if said else f"{asked} {when}"
    if person:
        mention = None if last.kind == "ranking" else _mention(asked, last.people)
        if mention:
            asked = f"{asked[: mention[0]]}{person}{asked[mention[1] :]}"
        else:
            asked = _plain(last.kind, person, when)
    asked += "?"
    return asked, f"read as: {asked} — carried from the last question"


def _without(text: str, phrase: str) -> str:
    """`text` without `phrase` (and an "in"/"for"/"during" before it)."""
    said = _find(text, phrase)
    if said is None:
        return text
    head = re.sub(r"\b(?:in|for|during|from|over|of)\s*$", "", text[: said[0]], flags=re.I)
    return head + text[said[1] :]


def _find(text: str, phrase: str) -> tuple[int, int] | None:
    m = re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text, re.IGNORECASE)
    return m.span() if m else None


_PERSON_LEAD = re.compile(r"^\s*(?:(?:with|to|for|from)\s+)?", re.IGNORECASE)


def _person_said(rest: str, names: Sequence[str]) -> str | None:
    """The contact a follow-up names, as typed ("Mom", "Dana", "with Sam Rivera"), "" when it
    names nobody, None when it says more than a name (a topic of its own)."""
    text = _PERSON_LEAD.sub("", rest.strip(" \t?!.,;:"))
    if not text:
        return ""
    words = text.split()
    known = names_in(text, names)
    name_words = {w for name in known for w in _words(name)}
    if len(known) == 1 and all(w.lower().strip(",") in name_words for w in words):
        return text
    return None  # "and Thanksgiving?" is a topic, not someone the contacts know


def _mention(text: str, people: Sequence[str]) -> tuple[int, int] | None:
    """Where `text` names the first of `people` (full name, else first name)."""
    for name in people:
        first = name.split()[0] if name.split() else name
        for form in (name, first):
            if len(form) > 2 and (found := _find(text, form)):
                return found
    return None


def _as_period(phrase: str) -> str:
    """ "2023" → "in 2023" (a bare year or month reads as a date after a preposition)."""
    return f"in {phrase}" if _BARE.fullmatch(phrase.strip()) else phrase


_MONTHS = "january february march april may june july august september october november december"
_BARE = re.compile(
    rf"(?:(?:{'|'.join(_MONTHS.split())})\s*,?\s*)?(?:(?:19|20)\d\d)?", re.IGNORECASE
)


def _plain(kind: Kind, person: str, when: str | None) -> str:
    """The plain question of a kind about `person`: a count for a count or a ranking."""
    span = f" {when}" if when else ""
    if kind in ("last", "first"):
        return f"when did I {kind} talk to {person}{span}"
    return f"how many messages with {person}{span}"


def rewrite(question: str, last: Turn | None, names: Sequence[str]) -> tuple[str, str] | None:
    """(question to ask, `read as:` line for the user) when `question` follows up on `last`,
    else None.

    A follow-up leans on the last question: a pronoun ("she", "it"), or an opening such as
    "and …", "what about …", "how about …". It keeps what it does not replace: the person
    unless it names one ("and Mom?" replaces Priya), the topic unless it has words of its own
    ("and what about the license?" replaces the dentist), the dates unless it gives its own.
    """
    if last is None:
        return None
    words = _words(question)
    named = names_in(question, names)
    refers_person = bool(set(words) & PERSON_PRONOUNS)
    refers_thing = bool(set(words) & THING_PRONOUNS)
    opens = _FOLLOW_UP.match(question) is not None
    if not (refers_person or refers_thing or opens):
        return None
    name_words = {w for name in named for w in _words(name)}
    own = [w for w in _own_words(question) if w not in name_words]
    added: list[str] = []
    if not named and last.people and (refers_person or opens):
        added.append(f"about {last.people[0]}")
    # "when did she go?" or "and Mom?" say nothing of their own: still about the last topic
    if last.topic and (not own or (refers_thing and not opens)):
        added.append("regarding " + " ".join(last.topic[:6]))
    if last.date_range and not _has_date(question):
        start, end = last.date_range
        added.append(f"between {start.isoformat()} and {end.isoformat()}")
    if not added:
        return None
    asked = f"{question.rstrip()} ({'; '.join(added)})"
    return asked, f"read as: {asked} — carried from the last question"


# how a follow-up opens when it leans on the last question without a pronoun
_FOLLOW_UP = re.compile(
    r"^\s*(?:and|also|but|or|so|then|plus|what about|how about|same for|same with)\b",
    re.IGNORECASE,
)
_OPENERS = frozenset(["and", "also", "but", "or", "so", "then", "plus", "same"])


# verbs a follow-up asks with that say nothing of a new topic ("when did she go?")
_VERBS = (
    "go goes went gone come came leave left happen happened start started end ended arrive "
    "arrived get got finish finished call called reply replied answer answered decide decided "
    "mean meant feel felt think thought back again finally ever still yet"
)
_BARE_VERBS = frozenset(_VERBS.split())


def _own_words(question: str) -> list[str]:
    """The question's content words: not stop words, pronouns, openers, short words or bare
    verbs."""
    skip = STOPWORDS | PERSON_PRONOUNS | THING_PRONOUNS | _BARE_VERBS | _OPENERS
    return [w for w in _words(question) if w not in skip and len(w) > 2 and not _has_date(w)]


_DATEISH = re.compile(
    r"\b(?:19|20)\d\d\b|\b(?:jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(?:yesterday|today|week|month|year|ago|last|since|before|after)\b",
    re.IGNORECASE,
)


def _has_date(question: str) -> bool:
    return bool(_DATEISH.search(question))
