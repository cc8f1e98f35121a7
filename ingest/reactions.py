"""Tapbacks: type codes, target GUIDs, and legacy plain-text SMS reactions. Pure."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

from ingest.records import DeferredReaction, ReactionRow

STICKER_PLACED = 1000
POLL_VOTE = 4000
GUID_LEN = 36
# 2000–2005 and their removals 3000–3005, in Apple's order.
CLASSIC = ("❤️", "👍", "👎", "😂", "‼️", "❓")
_VERBS = {
    "Loved": 2000,
    "Liked": 2001,
    "Disliked": 2002,
    "Laughed at": 2003,
    "Emphasized": 2004,
    "Questioned": 2005,
}
_REMOVED_NOUNS = {
    "heart": 3000,
    "like": 3001,
    "dislike": 3002,
    "laugh": 3003,
    "exclamation": 3004,
    "exclamation mark": 3004,
    "emphasis": 3004,
    "question mark": 3005,
    "sticker": 3007,
}
_Q = '[\u201c"]'  # SMS bridges use curly quotes; some Android clients send straight ones
_QE = '[\u201d"]'
_VERB_RE = re.compile(
    rf"^(Loved|Liked|Disliked|Laughed at|Emphasized|Questioned) {_Q}(.*){_QE}$", re.S
)
_REACTED_RE = re.compile(rf"^Reacted (.+?) to {_Q}(.*){_QE}$", re.S)
_REMOVED_RE = re.compile(rf"^Removed (?:an? )?(.+?) from {_Q}(.*){_QE}$", re.S)
_PREFIXES = (*_VERBS, "Reacted ", "Removed ")
_ELLIPSES = ("\u2026", "...")


def is_tapback(kind: int) -> bool:
    """Rows that are reactions to another message, never messages themselves."""
    return kind == STICKER_PLACED or 2000 <= kind <= 2007 or 3000 <= kind <= 3007


def target_guid(associated: str | None) -> str | None:
    """The target message GUID: the 36 characters after `p:N/` or `bp:`, or a bare GUID."""
    if not associated:
        return None
    if associated.startswith("p:"):
        slash = associated.find("/")
        associated = associated[slash + 1 :] if slash >= 0 else ""
    elif associated.startswith("bp:"):
        associated = associated[3:]
    guid = associated[:GUID_LEN]
    return guid or None


def tapback_emoji(kind: int, emoji: str | None = None) -> str | None:
    """The emoji a tapback shows: classic types by code, 2006/3006 from the emoji column."""
    base = kind - 1000 if kind >= 3000 else kind
    if 2000 <= base <= 2005:
        return CLASSIC[base - 2000]
    if base == 2006:
        return emoji or None
    return None


@dataclass(frozen=True, slots=True)
class LegacyReaction:
    """A reaction that arrived as ordinary text (`Loved “…”`), with the quoted text."""

    kind: int
    emoji: str | None
    quote: str


def parse_legacy_reaction(text: str) -> LegacyReaction | None:
    """Recognise `Loved “…”`, `Reacted 😂 to “…”`, `Removed a heart from “…”`; else None."""
    if not text.endswith(("\u201d", '"')) or not text.startswith(_PREFIXES):
        return None
    if m := _VERB_RE.match(text):
        kind = _VERBS[m.group(1)]
        return LegacyReaction(kind, tapback_emoji(kind), m.group(2).strip())
    if m := _REACTED_RE.match(text):
        what = m.group(1).strip()
        if what == "with a sticker":
            return LegacyReaction(2007, None, m.group(2).strip())
        return LegacyReaction(2006, what, m.group(2).strip())
    if m := _REMOVED_RE.match(text):
        what = m.group(1).strip()
        kind = _REMOVED_NOUNS.get(what.lower(), 3006)
        return LegacyReaction(kind, tapback_emoji(kind) or what, m.group(2).strip())
    return None


class RecentTexts:
    """Per-chat ring buffer of recent (text, guid): what a legacy reaction's quote can match."""

    def __init__(self, per_chat: int = 256) -> None:
        self.per_chat = per_chat
        # items are kept as given, (chat, text, guid): no new tuple per message
        self._chats: dict[int | None, deque[tuple[int | None, str, str]]] = {}

    def add(self, chat: int | None, text: str, guid: str) -> None:
        self.extend(((chat, text, guid),))

    def extend(self, items: Iterable[tuple[int | None, str, str]]) -> None:
        """`add` for many (chat, text, guid) items in order: one loop, no call per item."""
        chats, size = self._chats, self.per_chat
        for item in items:
            buf = chats.get(item[0])
            if buf is None:
                buf = chats[item[0]] = deque(maxlen=size)
            buf.append(item)

    def seen(self, chat: int | None) -> int:
        """How many texts of `chat` the buffer holds (at most `per_chat`)."""
        buf = self._chats.get(chat)
        return len(buf) if buf else 0

    def tails(self) -> list[tuple[int | None, str, str]]:
        """Everything held, oldest first per chat: `extend`ing another buffer with it leaves
        that buffer as if it had seen these texts itself."""
        return [item for buf in self._chats.values() for item in buf]

    def find(self, chat: int | None, quote: str, newest: int | None = None) -> str | None:
        """GUID of the most recent message in `chat` whose text is the quote (or starts it, …),
        looking only at the `newest` texts of the chat when given."""
        buf = self._chats.get(chat)
        if not buf or not quote:
            return None
        prefix = None
        for ell in _ELLIPSES:
            if quote.endswith(ell):
                prefix = quote[: -len(ell)].rstrip()
        texts = reversed(buf) if newest is None else islice(reversed(buf), max(newest, 0))
        for _, text, guid in texts:
            if text == quote or (prefix and text.startswith(prefix)):
                return guid
        return None


def resolve(carry: RecentTexts, deferred: DeferredReaction) -> ReactionRow | None:
    """The reaction a single reader would have found, given `carry` (what every earlier
    range left in the buffer): its quote can only match the older texts the buffer still
    held, the newest `per_chat - seen` of `carry`; None when nothing matches."""
    newest = carry.per_chat - deferred.seen
    target = carry.find(deferred.chat, deferred.quote, newest=newest)
    return None if target is None else deferred.row._replace(target_guid=target)
