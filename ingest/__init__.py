"""chat.db + AddressBook → typed records. Never imports casper."""

from __future__ import annotations

from ingest.connect import (
    SourceState,
    open_chat_db,
    open_contacts_db,
    rows_after,
    snapshot_state,
)
from ingest.contacts import has_address_book, load_contacts, match_contacts, merge_contacts
from ingest.errors import (
    ChatDbBusy,
    ChatDbCorrupt,
    ChatDbMissing,
    ChatDbUnreadable,
    IngestError,
    NotAMessagesDb,
)
from ingest.handles import load_chats, load_handles, load_owner_addresses, normalise_address
from ingest.messages import (
    ReadCounters,
    iter_rows,
    load_deleted_guids,
    load_recently_deleted_rowids,
    load_rowids,
    read_changed,
)
from ingest.records import Attachment, Chat, Contact, Handle, Message, Reaction, ReadBatch
from ingest.schema import Capabilities

__all__ = [
    "Attachment",
    "Capabilities",
    "Chat",
    "ChatDbBusy",
    "ChatDbCorrupt",
    "ChatDbMissing",
    "ChatDbUnreadable",
    "Contact",
    "Handle",
    "IngestError",
    "Message",
    "NotAMessagesDb",
    "Reaction",
    "ReadBatch",
    "ReadCounters",
    "SourceState",
    "has_address_book",
    "iter_rows",
    "load_chats",
    "load_contacts",
    "load_deleted_guids",
    "load_handles",
    "load_owner_addresses",
    "load_recently_deleted_rowids",
    "load_rowids",
    "match_contacts",
    "merge_contacts",
    "normalise_address",
    "open_chat_db",
    "open_contacts_db",
    "read_changed",
    "rows_after",
    "snapshot_state",
]
