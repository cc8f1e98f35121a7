"""The thin path's early send (casper.service.client.send) sends nothing to a socket the client
does not trust and leaves saying so to the command's own call, under its error guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.service import client


def test_an_untrusted_socket_folder_gets_no_early_request(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o775)
    home.chmod(0o775)  # others may write the socket's folder: they could swap the socket
    (home / "service.sock").touch()
    with pytest.raises(client.UntrustedService):
        client.connect(home)  # the command's own call says it, with its hint
    assert client.send(home, "search", {"query": "x"}) is None


def test_a_data_dir_others_may_only_read_is_still_the_users_own(tmp_path: Path) -> None:
    # `mkdir ~/casper-data` makes a 755 folder: others can list it but not swap a socket in
    # it (the socket is 0600, the listener's uid is checked), so commands run, not refuse.
    home = tmp_path / "h"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    assert client.connect(home) is None  # nothing listening: not an untrusted service
