"""PURE: which kind of question the stats answer, read from its words alone.

"how many messages with Sam in 2023?" is a count, "who texts me most?" a ranking, "which month
did I text Sam the most?" messages by period, "when did I last talk to Priya?" the last contact
(and "first" the first). The stats route
(`casper.agent.stats_route`) and the fact route (`casper.agent.fact_route`) answer them;
`casper chat` keeps the kind when a follow-up changes only the person or the period
(`casper.agent.followup`). One place for the words, so the three agree.

Imports: stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

Kind = Literal["count", "ranking", "last", "first"]

RANKING = re.compile(
    r"\bwho\b.*\b(?:most|least|more|less)\b"
    r"|\b(?:top|busiest|most active|favou?rite)\s+(?:contacts?|people|persons?|chats?|friends?)\b"
    r"|\bmost (?:messages|texts|texted|messaged)\b",
    re.IGNORECASE,
)
COUNT = re.compile(
    r"\bhow (?:many|much) (?:messages|texts|imessages|sms)\b"
    r"|\bhow often\b.*\b(?:text|talk|message)",
    re.IGNORECASE,
)

# messages counted per day, week, month or year: "which month did I text Sam the most?",
# "messages per week with Mom", "my busiest year"
VOLUME = re.compile(
    r"\b(?:which|what) (?:day|week|month|year)\b.*\b(?:most|least|busiest|quietest)\b"
    r"|\bbusiest (?:day|week|month|year)\b"
    r"|\b(?:messages|texts)\b.*\b(?:per|each|every|by) (?:day|week|month|year)\b"
    r"|\b(?:daily|weekly|monthly|yearly)\b.*\b(?:messages|texts)\b",
    re.IGNORECASE,
)

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
LAST = frozenset({"last", "latest", "lately", "recent", "recently", "most", "newest"})
FIRST = frozenset({"first", "earliest", "start", "started", "begin", "began"})
_CONTACT_WORDS = (
    "talk talked talking text texted texting message messaged messaging messages texts chat "
    "chatted chatting speak spoke spoken hear heard contact contacted write wrote written send "
    "sent reply replied conversation convo msg dm dmed"
)
CONTACT = frozenset(_CONTACT_WORDS.split())


def is_stats_question(question: str) -> bool:
    """True for ranking and counting questions that search hits cannot answer."""
    return bool(RANKING.search(question) or COUNT.search(question) or VOLUME.search(question))


def edge(words: Sequence[str]) -> Literal["last", "first"] | None:
    """ "last" or "first" (the question's edge of the history), None when it names neither."""
    said = set(words)
    if said & (LAST - {"most"}) or {"most", "recent"} <= said or {"most", "recently"} <= said:
        return "last"
    if {"how", "long", "since"} <= said:
        return "last"
    if said & FIRST:
        return "first"
    return None


def kind_of(question: str) -> Kind | None:
    """The kind of a question the stats answer, or None for one search answers. Words of a
    topic ("… about the dentist") are not weighed here: the routes decide that."""
    if RANKING.search(question):
        return "ranking"
    if COUNT.search(question):
        return "count"
    words = [w.lower() for w in WORD.findall(question)]
    if CONTACT & set(words):
        return edge(words)
    return None
