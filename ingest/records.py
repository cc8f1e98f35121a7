"""Frozen value types read out of chat.db and the AddressBook. Imports: stdlib, ingest.columns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ingest.columns import Value


@dataclass(frozen=True, slots=True)
class Handle:
    """One row of chat.db's `handle` table, with its address normalised (E.164 / lowercase)."""

    rowid: int
    address: str  # normalised: +15551234567 or name@example.com; raw id when unparseable
    raw: str
    service: str = "iMessage"
    country: str | None = None
    person_centric_id: str | None = None


@dataclass(frozen=True, slots=True)
class Chat:
    """A conversation: 1:1 (style 45) or group (style 43)."""

    rowid: int
    guid: str
    identifier: str
    display_name: str | None
    is_group: bool
    handle_rowids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Attachment:
    """An attachment recorded on a message: its file name and MIME type only."""

    name: str
    mime: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One real message (never a tapback). `ts` is UTC seconds since the Unix epoch."""

    rowid: int
    guid: str
    chat_rowid: int | None  # None: an orphan message with no chat_message_join row
    handle_rowid: int | None  # sender when received; 0/None for own messages in groups
    is_from_me: bool
    ts: float
    text: str  # current text: attributedBody first, then `text`; '' when there is none
    kind: str = "text"  # text | attachment | system
    service: str | None = None
    edited: bool = False
    reply_to_guid: str | None = None  # from thread_originator_guid, never reply_to_guid
    attachments: tuple[Attachment, ...] = ()
    event: str | None = None  # system rows: "renamed the group to X", "left", ...
    decode_failed: bool = False  # attributedBody present but rejected by the decoder
    date_edited: float | None = None
    date_retracted: float | None = None
    carried: tuple[Value, ...] = ()  # the columns of ingest.columns.CARRIED, in its order


@dataclass(frozen=True, slots=True)
class Reaction:
    """A tapback (2000–2007, 1000) or its removal (3000–3007), folded into its target."""

    rowid: int
    guid: str
    target_guid: str
    kind: int  # associated_message_type
    is_from_me: bool
    handle_rowid: int | None
    ts: float
    emoji: str | None = None

    @property
    def removed(self) -> bool:
        return 3000 <= self.kind < 4000


class MessageRow(NamedTuple):
    """A `Message`'s fields as a tuple, same names and order (`Message(*row)` builds the record).

    What the bulk reader streams and the pipeline consumes: building ~200k frozen dataclasses
    would cost seconds on a large history, a named tuple costs about what a plain one does.
    """

    rowid: int
    guid: str
    chat_rowid: int | None
    handle_rowid: int | None
    is_from_me: bool
    ts: float
    text: str
    kind: str
    service: str | None
    edited: bool
    reply_to_guid: str | None
    attachments: tuple[Attachment, ...]
    event: str | None
    decode_failed: bool
    date_edited: float | None
    date_retracted: float | None
    carried: tuple[Value, ...] = ()


class ReactionRow(NamedTuple):
    """A `Reaction`'s fields as a tuple, same names and order (`Reaction(*row)`)."""

    rowid: int
    guid: str
    target_guid: str
    kind: int
    is_from_me: bool
    handle_rowid: int | None
    ts: float
    emoji: str | None


class DeferredReaction(NamedTuple):
    """A legacy reaction whose quote matched nothing in its own ROWID range while the chat's
    buffer there still had room: the texts just before the range decide (`resolve`)."""

    row: ReactionRow  # target_guid is "" until resolved
    chat: int | None
    quote: str
    seen: int  # texts of the chat this range had buffered when the reaction came


@dataclass(frozen=True, slots=True)
class Contact:
    """One AddressBook card: a person with any number of phone numbers and emails."""

    key: str  # "<source db>:<Z_PK>", stable across runs for the same AddressBook
    first: str | None = None
    last: str | None = None
    nickname: str | None = None
    organization: str | None = None
    phones: tuple[str, ...] = ()  # normalised E.164 where parseable
    emails: tuple[str, ...] = ()  # lowercased

    @property
    def display_name(self) -> str | None:
        name = " ".join(p for p in (self.first, self.last) if p)
        return name or self.nickname or self.organization or None

    @property
    def names(self) -> tuple[tuple[str, str], ...]:
        """Every name on the card as (kind, name): a question may use any of them."""
        full = " ".join(p for p in (self.first, self.last) if p)
        kinds = (
            ("full", full if self.first and self.last else None),
            ("first", self.first),
            ("last", self.last),
            ("nickname", self.nickname),
            ("organization", self.organization),
        )
        return tuple((kind, name) for kind, name in kinds if name)


@dataclass(frozen=True, slots=True)
class ReadBatch:
    """What one incremental read of chat.db found (the pipeline consumes it)."""

    messages: list[Message] = field(default_factory=list)
    reactions: list[Reaction] = field(default_factory=list)
    skipped_recently_deleted: int = 0
    legacy_reactions: int = 0
