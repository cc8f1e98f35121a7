"""Errors raised when chat.db or the AddressBook can't be read. Each carries a hint. Stdlib only."""

from __future__ import annotations

import os
from collections.abc import Mapping

# $TERM_PROGRAM as terminals set it → the name macOS lists under Full Disk Access
_TERM_PROGRAMS = {
    "Apple_Terminal": "Terminal",
    "iTerm.app": "iTerm",
    "vscode": "Visual Studio Code",
    "WarpTerminal": "Warp",
    "ghostty": "Ghostty",
    "WezTerm": "WezTerm",
    "Hyper": "Hyper",
    "Tabby": "Tabby",
    "zed": "Zed",
}
# Inside tmux or screen TERM_PROGRAM names the multiplexer; macOS still passes the bundle id of
# the app that started the shell, and that app is the one that needs the permission.
_BUNDLE_IDS = {
    "com.apple.Terminal": "Terminal",
    "com.googlecode.iterm2": "iTerm",
    "com.microsoft.VSCode": "Visual Studio Code",
    "dev.warp.Warp-Stable": "Warp",
    "com.mitchellh.ghostty": "Ghostty",
    "com.github.wez.wezterm": "WezTerm",
    "net.kovidgoyal.kitty": "kitty",
    "org.alacritty": "Alacritty",
}


def terminal_app(env: Mapping[str, str] | None = None) -> str | None:
    """The macOS app this process runs in (Terminal, iTerm, Visual Studio Code, …), if known."""
    env = os.environ if env is None else env
    program = env.get("TERM_PROGRAM", "")
    if program in _TERM_PROGRAMS:
        return _TERM_PROGRAMS[program]
    bundle = env.get("__CFBundleIdentifier", "")
    if bundle in _BUNDLE_IDS:
        return _BUNDLE_IDS[bundle]
    return program if program and program not in ("tmux", "screen") else None


def full_disk_access_hint(env: Mapping[str, str] | None = None) -> str:
    """What to switch on, and where, for the terminal app in use."""
    app = terminal_app(env)
    return (
        "System Settings → Privacy & Security → Full Disk Access: switch on "
        f"{app or 'the terminal app you run casper in'} (add it with + if it is not listed), "
        f"then quit and reopen {app or 'it'}"
    )


class IngestError(Exception):
    """A problem with the source database that the user can act on."""

    default_hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def __reduce__(self) -> tuple[type[IngestError], tuple[str, str | None]]:
        # raised in an ingest worker process, re-raised in the main one: keep the hint
        return type(self), (self.message, self.hint)


class ChatDbMissing(IngestError):
    default_hint = "check the path, or set CASPER_CHAT_DB / --chat-db"


class ChatDbUnreadable(IngestError):
    """macOS refuses chat.db to apps without Full Disk Access: the hint names the app in use."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint if hint is not None else full_disk_access_hint())


class NotAMessagesDb(IngestError):
    default_hint = "point --chat-db at ~/Library/Messages/chat.db (or a copy of it)"


class ChatDbCorrupt(IngestError):
    default_hint = "the file looks damaged; copy chat.db again (with its -wal file) and retry"


class ChatDbBusy(IngestError):
    default_hint = "Messages is writing to the database; wait a moment and run the command again"
