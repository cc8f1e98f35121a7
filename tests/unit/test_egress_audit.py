"""The egress test's own instruments (tests/egress/sitecustomize.py and the checks of
tests/integration/test_egress.py) see what they are there to see: a file written in HOME, a
folder made there, a file left in TMPDIR, a socket to the internet and a name lookup; and let
through the data dir, the cache, AF_UNIX and the loopback server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integration.test_egress import Sandbox, audit, stray_files, stray_sockets, tree

LEAKY = """
import os, pathlib, socket, sqlite3
home = pathlib.Path(os.environ["HOME"])
(home / ".casper").mkdir()
(home / ".casper" / "store").write_text("allowed")
sqlite3.connect(home / ".casper" / "casper.sqlite").close()
(home / ".leak").write_text("a record of the machine")
os.mkdir(home / ".config")
pathlib.Path(os.environ["TMPDIR"], "left-behind").write_text("x")
a, b = socket.socketpair()
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.connect(("192.0.2.1", 9))  # UDP: nothing is sent
try:
    socket.getaddrinfo("example.invalid", 443)
except OSError:
    pass
"""


def test_the_audit_sees_files_and_sockets_outside_what_is_allowed(tmp_path: Path) -> None:
    box = Sandbox(tmp_path, tmp_path / "home", tmp_path / "tmp", tmp_path / "audit.jsonl")
    box.home.mkdir()
    box.tmp.mkdir()
    before = tree(box.home)
    subprocess.run([sys.executable, "-c", LEAKY], env=box.env(), check=True, timeout=60)
    records = audit(box)
    files = stray_files(box, before, records)
    assert f"write {box.home / '.leak'}" in files
    assert f"os.mkdir {box.home / '.config'}" in files
    assert f"left {box.tmp / 'left-behind'}" in files
    assert not [f for f in files if ".casper" in f]  # the data dir is allowed
    sockets = stray_sockets(records, server_port=8080)
    assert any('"192.0.2.1", 9' in s for s in sockets)
    assert any("example.invalid" in s for s in sockets)
    assert not [s for s in sockets if '"family": 1' in s]  # AF_UNIX is allowed
