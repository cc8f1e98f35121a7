"""The Full Disk Access hint names the app that needs the permission."""

from __future__ import annotations

import pytest

from ingest.errors import ChatDbUnreadable, full_disk_access_hint, terminal_app


@pytest.mark.parametrize(
    ("env", "app"),
    [
        ({"TERM_PROGRAM": "Apple_Terminal"}, "Terminal"),
        ({"TERM_PROGRAM": "iTerm.app"}, "iTerm"),
        ({"TERM_PROGRAM": "vscode"}, "Visual Studio Code"),
        ({"TERM_PROGRAM": "WarpTerminal"}, "Warp"),
        # inside tmux TERM_PROGRAM names tmux; the app that started it is the one to allow
        ({"TERM_PROGRAM": "tmux", "__CFBundleIdentifier": "com.googlecode.iterm2"}, "iTerm"),
        ({"TERM_PROGRAM": "tmux"}, None),
        ({"TERM_PROGRAM": "SomeNewTerm"}, "SomeNewTerm"),
        ({}, None),
    ],
)
def test_terminal_app(env: dict[str, str], app: str | None) -> None:
    assert terminal_app(env) == app


def test_hint_names_the_settings_pane_and_the_app() -> None:
    hint = full_disk_access_hint({"TERM_PROGRAM": "Apple_Terminal"})
    assert hint.startswith("System Settings → Privacy & Security → Full Disk Access:")
    assert "switch on Terminal" in hint and "quit and reopen Terminal" in hint
    unknown = full_disk_access_hint({})
    assert "the terminal app you run casper in" in unknown


def test_unreadable_error_uses_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM_PROGRAM", "vscode")
    assert "switch on Visual Studio Code" in (ChatDbUnreadable("denied").hint or "")
    assert ChatDbUnreadable("denied", hint="custom").hint == "custom"
