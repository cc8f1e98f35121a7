"""PURE: carry the last `casper chat` turn's people, dates and topic into a follow-up question.

"what did she do about it?" says nothing search can use. When a question leans on pronouns
and names no one, it is rewritten with what the previous turn was about: the person (named in
the question, else the only other sender among its sources), its explicit date range, and its
topic words. The rewrite is shown to the user, so nothing is guessed silently.

Imports: stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

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
) -> Turn:
    """Summarise an answered turn (`question` as typed): people named first, then the senders
    of its sources. A follow-up of `previous` keeps the topic and dates it leaned on."""
    people = names_in(question, names)
    for c in citations:
        sender = str(c.get("sender") or "")
        if sender and sender != "me" and sender not in people:
            people.append(sender)
    named = {w for name in people for w in _words(name)}  # the person is carried separately
    keep = [w for w in _words(question) if w not in STOPWORDS and w not in named and len(w) > 2]
    topic = tuple(dict.fromkeys(keep))
    if previous is not None:
        people += [p for p in previous.people if p not in people]
        topic = topic or previous.topic
        date_range = date_range or previous.date_range
    return Turn(question, tuple(people), date_range, topic)


def rewrite(question: str, last: Turn | None, names: Sequence[str]) -> tuple[str, str] | None:
    """(question to ask, note for the user) when `question` is a follow-up of `last`, else None.

    A follow-up refers back by pronoun ("she", "it", "that") and names nobody itself.
    """
    if last is None:
        return None
    words = set(_words(question))
    if names_in(question, names):
        return None
    refers_person = bool(words & PERSON_PRONOUNS)
    refers_thing = bool(words & THING_PRONOUNS)
    if not (refers_person or refers_thing):
        return None
    added: list[str] = []
    notes: list[str] = []
    if refers_person and last.people:
        added.append(f"about {last.people[0]}")
        notes.append(last.people[0])
    # "when did she go?" says nothing of its own: it is still about the last topic (the dentist)
    carries_topic = refers_thing or not _own_words(question)
    if carries_topic and last.topic:
        added.append("regarding " + " ".join(last.topic[:6]))
        notes.append(" ".join(last.topic[:6]))
    if last.date_range and not _has_date(question):
        start, end = last.date_range
        added.append(f"between {start.isoformat()} and {end.isoformat()}")
        notes.append(f"{start.isoformat()} → {end.isoformat()}")
    if not added:
        return None
    return f"{question.rstrip()} ({'; '.join(added)})", "following up on " + ", ".join(notes)


# verbs a follow-up asks with that say nothing of a new topic ("when did she go?")
_VERBS = (
    "go goes went gone come came leave left happen happened start started end ended arrive "
    "arrived get got finish finished call called reply replied answer answered decide decided "
    "mean meant feel felt think thought back again finally ever still yet"
)
_BARE_VERBS = frozenset(_VERBS.split())


def _own_words(question: str) -> list[str]:
    """The question's content words: not stop words, pronouns, short words or bare verbs."""
    skip = STOPWORDS | PERSON_PRONOUNS | THING_PRONOUNS | _BARE_VERBS
    return [w for w in _words(question) if w not in skip and len(w) > 2 and not _has_date(w)]


_DATEISH = re.compile(
    r"\b(?:19|20)\d\d\b|\b(?:jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(?:yesterday|today|week|month|year|ago|last|since|before|after)\b",
    re.IGNORECASE,
)


def _has_date(question: str) -> bool:
    return bool(_DATEISH.search(question))
