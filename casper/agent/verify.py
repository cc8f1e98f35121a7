"""The citation check on a finished answer: what it says of the messages it cites against the
messages themselves, read from the store (never from the tool results' text), and the messages
it shows rendered from them (casper.agent.quotes).

Imports: casper.agent.quotes, casper.agent.speakers, casper.dates.zones,
casper.records, casper.store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo

from casper.agent import quotes
from casper.agent.speakers import fold
from casper.dates.zones import iso
from casper.records import ME
from casper.store.db import Store

OWNER_WORDS = ("me", "i", "you", "myself", "yourself", "the user")  # how answers name the owner


def cited(store: Store, rowids: Sequence[int], tz: tzinfo) -> dict[int, quotes.Cited]:
    """rowid → the message as the store has it (ids no message has are left out: they are
    not judged here; the core removes ids no result showed)."""
    names = store.names()
    out: dict[int, quotes.Cited] = {}
    for rowid in dict.fromkeys(rowids):
        m = store.message(rowid)
        if m is None:
            continue
        when = (iso(m.ts, tz) or "")[:16].replace("T", " ")
        sender = "me" if m.sender == ME else names.get(m.sender, m.sender)
        out[rowid] = quotes.Cited(rowid, when, sender, m.sender, m.text)
    return out


def people(store: Store, me_names: Sequence[str] = ()) -> dict[str, frozenset[str]]:
    """Each name an answer may write for a sender (`speakers.fold`ed) → who it can mean: every
    name on a card, its first and last word, and the owner's words and names."""
    found: dict[str, set[str]] = {}
    for p in store.people():
        words = p.name.split()
        forms = {*p.name_forms(), *(words[:1] or [p.name]), *words[-1:]}  # Sam, Rivera
        for form in forms:
            if form.strip():
                found.setdefault(fold(form), set()).add(p.id)
    for word in (*OWNER_WORDS, *me_names):
        if word.strip():
            found.setdefault(fold(word), set()).add(ME)
    return {name: frozenset(ids) for name, ids in found.items()}


def verify(answer: str, store: Store, tz: tzinfo, me_names: Sequence[str] = ()) -> quotes.Checked:
    """The answer as the reader gets it: every message it shows rendered from the store,
    every misattribution corrected or marked on its line, a cut-off said."""
    messages = cited(store, quotes.cited_ids(answer), tz)
    return quotes.check(answer, messages, people(store, me_names))
