"""chat.db + AddressBook → typed records. Never imports casper.

The names below load their module on first use (PEP 562), so importing one light submodule —
`ingest.columns`, which Casper's store reads — does not load every reader with it: `casper chats`,
`serve --status` and `casper mcp` start without them (bench/startup_imports.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

# where each name lives
_HOME = {
    "Attachment": "ingest.records",
    "Capabilities": "ingest.schema",
    "Chat": "ingest.records",
    "ChatDbBusy": "ingest.errors",
    "ChatDbCorrupt": "ingest.errors",
    "ChatDbMissing": "ingest.errors",
    "ChatDbUnreadable": "ingest.errors",
    "Contact": "ingest.records",
    "Handle": "ingest.records",
    "IngestError": "ingest.errors",
    "Message": "ingest.records",
    "NotAMessagesDb": "ingest.errors",
    "Reaction": "ingest.records",
    "ReadBatch": "ingest.records",
    "ReadCounters": "ingest.messages",
    "SourceState": "ingest.connect",
    "has_address_book": "ingest.contacts",
    "iter_rows": "ingest.messages",
    "load_chats": "ingest.handles",
    "load_contacts": "ingest.contacts",
    "load_deleted_guids": "ingest.messages",
    "load_handles": "ingest.handles",
    "load_owner_addresses": "ingest.handles",
    "load_recently_deleted_rowids": "ingest.messages",
    "load_rowids": "ingest.messages",
    "match_contacts": "ingest.contacts",
    "merge_contacts": "ingest.contacts",
    "normalise_address": "ingest.handles",
    "open_chat_db": "ingest.connect",
    "open_contacts_db": "ingest.connect",
    "read_changed": "ingest.messages",
    "rows_after": "ingest.connect",
    "snapshot_state": "ingest.connect",
}


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'ingest' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: the next lookup finds it without this hook
    return value


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
