"""Errors raised when chat.db or the AddressBook can't be read. Each carries a hint. Stdlib only."""

from __future__ import annotations


class IngestError(Exception):
    """A problem with the source database that the user can act on."""

    default_hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint


class ChatDbMissing(IngestError):
    default_hint = "check the path, or set CASPER_CHAT_DB / --chat-db"


class ChatDbUnreadable(IngestError):
    default_hint = (
        "grant Full Disk Access to your terminal (System Settings → Privacy & Security → "
        "Full Disk Access), then open a new terminal window"
    )


class NotAMessagesDb(IngestError):
    default_hint = "point --chat-db at ~/Library/Messages/chat.db (or a copy of it)"


class ChatDbCorrupt(IngestError):
    default_hint = "the file looks damaged; copy chat.db again (with its -wal file) and retry"


class ChatDbBusy(IngestError):
    default_hint = "Messages is writing to the database; wait a moment and run the command again"
