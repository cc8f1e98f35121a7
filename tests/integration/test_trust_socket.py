"""The service's socket against another local user: when the data dir's path is too long for
AF_UNIX the socket lives in `$TMPDIR/casper-<uid>/`, a name anyone can take first. A client
sends nothing to a socket whose folder is not the owner's own (a real folder, owned by this
user, no group/other bits) or whose listener runs as someone else, and says why; a service
never listens in a folder someone else made.

The other user is real: `nobody`, in a forked child that makes the folder and listens in it,
recording every byte and answering with a forged result (tests/stranger.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from casper.service import protocol
from tests.service_helpers import REPO, env_on
from tests.stranger import NOBODY, Listener, as_nobody, needs_root, shared_place

pytestmark = needs_root
SECRET = "divorce lawyer consultation"
FORGED = "FORGED-BY-ANOTHER-USER"
FORGED_REPLY = (
    json.dumps({"event": "result", "result": {"query": FORGED, "hits": [], "forged": FORGED}})
    + "\n"
).encode()


@pytest.fixture
def place(
    indexed_template: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, Path, Path]]:
    """(home, tmpdir, shared): an indexed home whose path is too long for a socket in it, a
    TMPDIR anyone can write (sticky, as /tmp), and a folder both users write."""
    with shared_place() as (outer, shared):
        tmpdir = outer / "tmp"
        tmpdir.mkdir()
        os.chmod(tmpdir, 0o1777)
        home = outer / ("a-data-dir-with-a-long-name-" * 4)
        shutil.copytree(indexed_template[0], home)
        os.chmod(home, 0o700)
        monkeypatch.setenv("TMPDIR", str(tmpdir))
        assert protocol.socket_path(home).parent == tmpdir / f"casper-{os.getuid()}"
        yield home, tmpdir, shared


def casper(home: Path, tmpdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**env_on(), "TMPDIR": str(tmpdir), "CASPER_SERVICE_START_TIMEOUT": "20"}
    return subprocess.run(
        [sys.executable, "-m", "casper", *args, "--home", str(home)],
        env=env, capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip


def assert_told_nothing(received: bytes, run: subprocess.CompletedProcess[str]) -> None:
    assert received == b"", f"the other user's listener received: {received[:200]!r}"
    assert FORGED not in run.stdout + run.stderr, "a forged answer was shown"


def test_a_socket_folder_another_user_made_is_sent_nothing(
    place: tuple[Path, Path, Path],
    services,  # noqa: ANN001
) -> None:
    home, tmpdir, _shared = place
    services.watch(home)
    sock = protocol.socket_path(home)
    listener = Listener(sock, FORGED_REPLY)  # nobody makes $TMPDIR/casper-0/ and listens
    try:
        run = casper(home, tmpdir, "search", SECRET, "--json")
    finally:
        received = listener.stop()
    assert_told_nothing(received, run)
    assert run.returncode == 1, run.stdout + run.stderr
    assert str(sock.parent) in run.stderr and "error:" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_listener_of_another_user_is_sent_nothing(
    indexed_template: tuple[Path, Path],
    services,  # noqa: ANN001
) -> None:
    """The folder is the owner's own (the data dir, 0700), yet the process behind the socket
    is another user's: the client asks the socket who is listening before it sends."""
    with shared_place() as (outer, shared):
        home = outer / "h"
        shutil.copytree(indexed_template[0], home)
        os.chmod(home, 0o700)
        services.watch(home)
        theirs = shared / "theirs" / "s.sock"
        listener = Listener(theirs, FORGED_REPLY)
        try:
            sock = protocol.socket_path(home)
            assert sock.parent == home
            os.rename(theirs, sock)  # their socket, at the owner's path
            run = casper(home, outer, "search", SECRET, "--json")
        finally:
            received = listener.stop()
        assert_told_nothing(received, run)
        assert run.returncode == 1, run.stdout + run.stderr
        assert "error:" in run.stderr and str(NOBODY) in run.stderr
        assert "Traceback" not in run.stderr


@pytest.mark.parametrize("made", ["folder", "open folder", "link"])
def test_the_service_does_not_listen_in_a_folder_another_user_made(
    place: tuple[Path, Path, Path],
    made: str,
    services,  # noqa: ANN001
) -> None:
    home, tmpdir, shared = place
    services.watch(home)
    folder = protocol.socket_path(home).parent

    def make() -> None:
        if made == "link":  # to a folder of theirs
            (shared / "mine").mkdir(mode=0o777)
            os.symlink(shared / "mine", folder)
        else:
            folder.mkdir(mode=0o777 if made == "open folder" else 0o700)
            if made == "open folder":
                os.chmod(folder, 0o777)

    as_nobody(make)
    run = casper(home, tmpdir, "serve", "--idle-minutes", "1")
    assert run.returncode not in (0, None), run.stderr
    assert str(folder) in run.stderr and "Traceback" not in run.stderr, run.stderr
    inside = shared / "mine" if made == "link" else folder
    assert not list(inside.iterdir()), "the service made its socket in their folder"
    assert os.lstat(folder).st_uid == NOBODY  # left as it was, not taken over
