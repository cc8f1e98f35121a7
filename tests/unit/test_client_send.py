"""The thin path's early send (casper.service.client.send) sends nothing to a socket the client
does not trust and leaves saying so to the command's own call, under its error guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.service import client


def test_an_untrusted_socket_folder_gets_no_early_request(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o755)
    home.chmod(0o755)  # the socket's folder open to others: not the user's private folder
    (home / "service.sock").touch()
    with pytest.raises(client.UntrustedService):
        client.connect(home)  # the command's own call says it, with its hint
    assert client.send(home, "search", {"query": "x"}) is None
