"""Value types of Casper's own store (not Apple's): people, chats, stored messages, chunks.

Imports: stdlib only, so pure modules (stats, chunking, fusion) can use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ME = "me"  # the sender id of the owner's own messages


@dataclass(frozen=True, slots=True)
class Person:
    """A person: one AddressBook card, or one bare handle with no card."""

    id: str  # stable: "p_" + 8 hex chars derived from the card key or the handle
    name: str  # display name; the handle itself when there is no card
    handles: tuple[str, ...] = ()
    # every name the card gives, as (kind, name): kind is full | first | last | nickname |
    # organization. A question may use any of them ("Sammy", "Rivera"), not just `name`.
    names: tuple[tuple[str, str], ...] = ()

    def name_forms(self, *kinds: str) -> tuple[str, ...]:
        """The card's names of these kinds (all kinds when none given), display name first."""
        forms = [self.name] if not kinds else []
        forms += [n for k, n in self.names if not kinds or k in kinds]
        return tuple(dict.fromkeys(forms))


@dataclass(frozen=True, slots=True)
class ChatInfo:
    id: int  # chat.db chat ROWID (0 = orphan messages' "unknown chat")
    guid: str
    name: str  # display name, else "A, B & C" for unnamed groups, else the person's name
    is_group: bool
    members: tuple[str, ...] = ()  # person ids, owner excluded


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as Casper stores it: sender resolved, reactions folded in."""

    rowid: int
    guid: str
    chat_id: int
    sender: str  # person id, or ME
    ts: float  # UTC epoch seconds
    text: str
    kind: str = "text"  # text | attachment | system
    edited: bool = False
    reply_to: str | None = None
    reactions: tuple[tuple[str, str], ...] = ()  # (sender id, reaction label), final state
    attachments: tuple[tuple[str, str | None], ...] = ()  # (name, mime)
    event: str | None = None

    @property
    def is_from_me(self) -> bool:
        return self.sender == ME

    @property
    def searchable(self) -> bool:
        """System events are not conversation text; empty bodies have nothing to find."""
        return self.kind != "system" and bool(self.text.strip())


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrieval unit: consecutive messages of one chat."""

    id: str  # "<chat_id>:<first rowid>:<last rowid>"
    chat_id: int
    chat_name: str
    participants: tuple[str, ...]  # display names of the people who wrote in it (and "me")
    person_ids: tuple[str, ...]  # person ids of the chat members (filters use these)
    start: float
    end: float
    rowids: tuple[int, ...]
    guids: tuple[str, ...]
    text: str  # raw messages "sender: text" lines, for BM25
    embed_text: str  # prefixed with chat name and date, for the embedder
    content_hash: str = ""
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
