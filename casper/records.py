"""Value types of Casper's own store (not Apple's): people, chats, stored messages, chunks.

Imports: stdlib only, so pure modules (stats, chunking, fusion) can use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

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
    # (name, value) of each chat.db column stored as it is (ingest.columns.CARRIED), in its order
    carried: tuple[tuple[str, str | int | float | None], ...] = ()

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
    # terms for the dates its messages mention ("d20240210 md0210 m202402 y2024"), resolved
    # against the day each was sent (casper.dates.mentions); searched beside `text`
    dates: str = ""
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


SEGMENT_KEY = "segment_start"  # Chunk.extra key: ts of the segment's first message (repr)
# The unit label of a row holding one message alone, beside the windows: "<chat>:<rowid>:
# <rowid>:msg". The index keeps its words in columns of their own (casper.index.chunk_table),
# so the windows' search legs never see it.
MESSAGE_UNIT = "msg"
_MESSAGE_SUFFIX = f":{MESSAGE_UNIT}"


def is_message_row(chunk_id: str) -> bool:
    """True for the index row of one message alone (not a window of messages)."""
    return chunk_id.endswith(_MESSAGE_SUFFIX)


class Piece(NamedTuple):
    """One chunk as a plain row, its fields in the index table's column order: the index
    writes these straight into Arrow columns. A tuple, not a `Chunk`: a first index makes a
    million of them, and a frozen dataclass costs ~4 µs each to build."""

    id: str
    chat_id: int
    chat_name: str
    participants: tuple[str, ...]
    person_ids: tuple[str, ...]
    start: float
    end: float
    segment_start: float
    rowids: tuple[int, ...]
    guids: tuple[str, ...]
    text: str
    embed_text: str
    content_hash: str
    dates: str = ""


def to_chunk(piece: Piece) -> Chunk:
    fields = piece._asdict()
    start = fields.pop("segment_start")
    return Chunk(**fields, extra={SEGMENT_KEY: repr(start)})


def to_piece(chunk: Chunk) -> Piece:
    return Piece(
        chunk.id, chunk.chat_id, chunk.chat_name, tuple(chunk.participants),
        tuple(chunk.person_ids), float(chunk.start), float(chunk.end), segment_start(chunk),
        tuple(chunk.rowids), tuple(chunk.guids), chunk.text, chunk.embed_text,
        chunk.content_hash, chunk.dates,
    )  # fmt: skip


def segment_start(chunk: Chunk) -> float:
    """The ts of the first message of the segment a chunk was cut from."""
    value = chunk.extra.get(SEGMENT_KEY)
    return float(value) if value is not None else chunk.start
