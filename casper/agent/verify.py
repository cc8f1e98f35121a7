"""The citation check on a finished answer: what it attributes to `[#rowid]` against the
messages themselves, read from the store (never from the tool results' text).

Imports: casper.agent.quotes, casper.store. Each cited message is read with its neighbours in
the same chat (`CONTEXT` each side): an answer that quotes the reply next to the message it
cites still quotes the conversation it cites.
"""

from __future__ import annotations

from casper.agent import quotes
from casper.store.db import Store

CONTEXT = 3  # neighbours each side of a cited message whose words it may quote


def sources(store: Store, rowids: tuple[int, ...]) -> dict[int, str]:
    """rowid → the cited message and its neighbours as `sender: text` lines (unknown rowids
    are left out: they are not judged here; the core removes ids no result showed)."""
    names = store.names()
    out: dict[int, str] = {}
    for rowid in rowids:
        message = store.message(rowid)
        if message is None:
            continue
        window = store.context(message, CONTEXT, CONTEXT)
        out[rowid] = "\n".join(f"{names.get(m.sender, m.sender)}: {m.text}" for m in window)
    return out


def verify(answer: str, store: Store) -> quotes.Checked:
    """The answer with every misattributed citation removed and its claim marked."""
    cited = tuple(dict.fromkeys(c for claim in quotes.claims(answer) for c in claim.rowids))
    return quotes.check(answer, sources(store, cited))
