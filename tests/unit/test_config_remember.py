"""`casper index --chat-db/--contacts` remembers the paths in config.toml for later runs and
`casper doctor`: a new value replaces the old line exactly, whatever characters the path holds,
and every other line stays as the person wrote it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from casper.config import remember


def test_a_remembered_path_replaces_the_old_line_and_reads_back_exactly(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '# my settings\nchat_db = "/old/chat.db"\nrerank = false\n'
    )
    odd = Path('/Users/a\\b "quoted"/chat.db')  # a backslash and quotes are legal in a Mac path
    remember(tmp_path, chat_db=odd)
    text = (tmp_path / "config.toml").read_text()
    assert tomllib.loads(text) == {"chat_db": str(odd), "rerank": False}
    assert text.startswith("# my settings\n") and text.count("chat_db") == 1
    assert (tmp_path / "config.toml").stat().st_mode & 0o777 == 0o600


def test_a_new_setting_is_added_after_the_existing_lines(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("rerank = false")  # no final newline
    remember(tmp_path, contacts="/c/AddressBook")
    assert (tmp_path / "config.toml").read_text() == (
        'rerank = false\ncontacts = "/c/AddressBook"\n'
    )
