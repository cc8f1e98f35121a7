"""`ask` for questions the store answers outright: when I last (or first) talked with someone,
who texted me last, and who someone is.

Search hits cannot answer "when did I last talk to Alex?": the words match messages *about*
talking, not the last one. The store knows the date (the stats' `first`/`last`) and the message
behind it, and the directory knows the card behind "Sammy". Such questions get that date or
card as the answer, citing the message it comes from. A question with a topic of its own
("when did I last talk to Alex about the dentist?") is left to search.

Imports: casper.agent (enrich, prefetch, question_kind, quoting), casper.store,
casper.dates.zones, casper.records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from casper.agent.enrich import Enrichment
from casper.agent.prefetch import outside_history
from casper.agent.question_kind import CONTACT as _CONTACT
from casper.agent.question_kind import FIRST as _FIRST
from casper.agent.question_kind import LAST as _LAST
from casper.agent.question_kind import edge as _edge
from casper.agent.quoting import message_line
from casper.agent.scope import Scoped
from casper.dates.ranges import days_to_utc
from casper.records import Person, StoredMessage
from casper.store.db import Store

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
# words such a question is made of besides the person, the edge and the verb; any other word
# is a topic ("about the dentist"), and the question goes to search instead
_FRAME_WORDS = (
    "when what which who whom did do does was were is has have had i me my we us our you your "
    "to with from and the a an time day date that this one person someone anyone somebody "
    "exchanged each other back between ago how long since on at in it by ever"
)
_FRAME = frozenset(_FRAME_WORDS.split())
_WHO_IS = re.compile(
    r"^\s*(?:who(?:'s| is| was)|who\s+is)\s+(?P<name>[^?!.]+?)\s*[?!.]*\s*$", re.IGNORECASE
)


def fact_answer(
    question: str, scoped: Scoped, store: Store, tz: ZoneInfo, me_names: Sequence[str] = ()
) -> tuple[str, list[str]] | None:
    """(answer, cited guids) when the store answers `question` outright, else None; read
    inside the request's filters (`scoped`: its days and person)."""
    card = _who_is(question, store, tz, me_names)
    if card is not None:
        return card
    words = [w.lower() for w in _WORD.findall(question)]
    edge = _edge(words)
    if edge is None or not _CONTACT & set(words):
        return None
    found = scoped.found
    start, end = days_to_utc(*scoped.days, tz) if scoped.days else (None, None)
    person = scoped.person
    if person is None:
        if words[:1] != ["who"] or not _only_frame(words, set()):
            return None
        return _latest_sender(store, tz, edge, start, end)
    who = store.person(person)
    if who is None or not _only_frame(words, _name_words(who), found):
        return None
    covered = outside_history(store, tz, found.date_range)
    if covered and found.date_range:  # no "you have no messages" for days the history lacks
        first, last = found.date_range
        return f"No messages between {first} and {last}. {covered}", []
    return _edge_with(store, who, tz, edge, start, end)


def _only_frame(words: Sequence[str], names: set[str], found: Enrichment | None = None) -> bool:
    """True when every word is the frame, the edge, a contact verb, a name or the dates."""
    dated = set(_WORD.findall((found.phrase or "").lower())) if found and found.phrase else set()
    allowed = _FRAME | _LAST | _FIRST | _CONTACT | names | dated
    return all(w in allowed or w.isdigit() for w in words)


def _name_words(person: Person) -> set[str]:
    return {w.lower() for form in person.name_forms() for w in _WORD.findall(form)}


def _when(ts: float, tz: ZoneInfo) -> str:
    """`Sat 2024-10-26 at 18:26`."""
    return datetime.fromtimestamp(ts, tz).strftime("%a %Y-%m-%d at %H:%M")


def _quote(m: StoredMessage, store: Store) -> str:
    """`[#3990] Alex Chen: see you then` (the message as the answer cites it)."""
    sender = store.names().get(m.sender, m.sender)
    text = m.text if len(m.text) <= 200 else m.text[:199] + "…"
    chat = store.chat(m.chat_id)
    where = f" (in {chat.name})" if chat is not None and chat.is_group else ""
    return message_line(m.rowid, "", f"{sender}{where}", text)  # quoted: one line, no markers


def _span(found_range: tuple[float | None, float | None]) -> str:
    return " in that range" if found_range != (None, None) else ""


def _edge_with(
    store: Store, who: Person, tz: ZoneInfo, edge: str, start: float | None, end: float | None
) -> tuple[str, list[str]]:
    chats = store.one_to_one_chat_ids(who.id)
    rowid = store.edge_message(who.id, chats, last=edge == "last", start_ts=start, end_ts=end)
    m = store.message(rowid) if rowid is not None else None
    if m is None:
        return f"You have no messages with {who.name}{_span((start, end))}.", []
    said = "last" if edge == "last" else "first"
    return (
        f"You {said} talked with {who.name} on {_when(m.ts, tz)}{_span((start, end))}:\n"
        f"  {_quote(m, store)}",
        [m.guid],
    )


def _latest_sender(
    store: Store, tz: ZoneInfo, edge: str, start: float | None, end: float | None
) -> tuple[str, list[str]] | None:
    if edge != "last" or (start, end) != (None, None):
        return None  # "who texted me first?" or a range: a question for the model and search
    rowid = store.latest_from_others()
    m = store.message(rowid) if rowid is not None else None
    if m is None:
        return "Nobody has texted you yet in the indexed messages.", []
    name = store.names().get(m.sender, m.sender)
    return (f"{name} texted you last, on {_when(m.ts, tz)}:\n  {_quote(m, store)}", [m.guid])


def _who_is(
    question: str, store: Store, tz: ZoneInfo, me_names: Sequence[str]
) -> tuple[str, list[str]] | None:
    """ "who is Sammy?": the card (every name on it, handles, how much you texted) and their
    latest message, cited; several matches are listed; no match is left to search."""
    match = _WHO_IS.match(question)
    if not match:
        return None
    said = match["name"].strip()
    if said.lower() in {"me", "i", *(n.lower() for n in me_names)}:
        return None
    people = store.find_people(said)
    if not people or len(said) < 2:
        return None
    if len(people) > 1:
        listed = "; ".join(f"{p.name} ({p.id})" for p in people)
        return f"{len(people)} contacts match {said!r}: {listed}.", []
    who = people[0]
    names = [n for kind, n in who.names
             if n.lower() not in (who.name.lower(), said.lower())
             and kind in ("nickname", "organization")]  # fmt: skip
    calls = f" (also {', '.join(names)})" if names else ""
    lines = [f"{said} is {who.name}{calls}: {', '.join(who.handles) or 'no handles'}."]
    s = store.stats(who.id) or {}
    chats = store.one_to_one_chat_ids(who.id)
    rowid = store.edge_message(who.id, chats, last=True)
    m = store.message(rowid) if rowid is not None else None
    if s:
        first, last = (s.get(k) for k in ("first", "last"))
        span = ""
        if first and last:
            day = lambda ts: datetime.fromtimestamp(ts, tz).date().isoformat()  # noqa: E731
            span = f", {day(first)} → {day(last)}"
        lines.append(f"You sent {s.get('sent', 0):,} messages and received "
                     f"{s.get('received', 0):,}{span}.")  # fmt: skip
    if m is None:
        return "\n".join(lines), []
    lines.append(f"The latest, {_when(m.ts, tz)}:\n  {_quote(m, store)}")
    return "\n".join(lines), [m.guid]
