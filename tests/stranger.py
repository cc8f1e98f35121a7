"""Another local user, for real: code run as `nobody` in a forked child of the test process.

The suite runs as root here (as CI does), so a test can fork, drop to uid/gid 65534 and act as
a second person on the same machine would: plant links and files in a folder both can write,
make folders, listen on a Unix socket. What the child returns (or raises) comes back through
a pipe. Tests that need this skip unless they run as root.

Paths the stranger uses must be traversable by others: pytest's own temp dirs are private, so
`shared_place` makes a folder under /tmp that others can pass through (0711) with a folder in
it both can write (0777, not sticky: a folder shared with a group, where the kernel's
protections for /tmp — protected_symlinks, protected_regular — do not apply).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another local user")


def _become_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def as_nobody(fn: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Run `fn` as uid/gid 65534 in a forked child; its return value (or its exception,
    raised here as an AssertionError naming it)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            try:
                _become_nobody()
                result: tuple[str, Any] = ("ok", fn())
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                result = ("raised", repr(exc))
            data = pickle.dumps(result)
            with os.fdopen(write, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    deadline = time.monotonic() + timeout
    with os.fdopen(read, "rb") as inp:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([inp], [], [], 0.5)
            if ready:
                chunk = inp.read1(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    os.waitpid(pid, 0)
    kind, value = pickle.loads(b"".join(chunks)) if chunks else ("raised", "no answer")
    if kind != "ok":
        raise AssertionError(f"as nobody: {value}")
    return value


@contextmanager
def shared_place() -> Iterator[tuple[Path, Path]]:
    """(outer, shared): `outer` the owner's (0711: others pass through, cannot list), and
    `outer/shared` writable by everyone. Removed afterwards."""
    import shutil

    outer = Path(tempfile.mkdtemp(prefix="casper-shared-", dir="/tmp"))
    os.chmod(outer, 0o711)
    shared = outer / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    try:
        yield outer, shared
    finally:
        shutil.rmtree(outer, ignore_errors=True)


class Holder:
    """A file the stranger made at `path` and keeps open for reading, as someone waiting for
    what the owner writes into it would: `seen()` is what the file held afterwards, read
    through the stranger's own descriptor."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, self._from_child_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.close(self._to_child_w)
                os.close(self._from_child_r)
                _become_nobody()
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
                os.fchmod(fd, 0o666)
                os.write(self._from_child_w, b"R")
                os.read(self._to_child_r, 1)  # wait for the owner to have written
                os.lseek(fd, 0, os.SEEK_SET)
                seen = b""
                while chunk := os.read(fd, 65536):
                    seen += chunk
                os.write(self._from_child_w, seen[:60000] or b"\0")
            finally:
                os._exit(0)
        os.close(self._to_child_r)
        os.close(self._from_child_w)
        ready, _, _ = select.select([self._from_child_r], [], [], 10)
        assert ready and os.read(self._from_child_r, 1) == b"R", "the stranger made no file"
        self.inode = os.lstat(path).st_ino

    def seen(self) -> bytes:
        os.write(self._to_child_w, b"G")
        ready, _, _ = select.select([self._from_child_r], [], [], 10)
        data = os.read(self._from_child_r, 65536) if ready else b""
        os.waitpid(self.pid, 0)
        os.close(self._to_child_w)
        os.close(self._from_child_r)
        return b"" if data == b"\0" else data


class Listener:
    """A Unix socket another user listens on: it records every byte it receives and answers
    each connection with `reply` (a forged frame). `make_dir` makes the socket's folder first,
    as the stranger (0700: it looks like the owner's own)."""

    def __init__(self, path: Path, reply: bytes, *, make_dir: bool = True) -> None:
        self.path = path
        self._r, w = os.pipe()
        ready_r, ready_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.close(self._r)
                os.close(ready_r)
                _become_nobody()
                if make_dir:
                    path.parent.mkdir(mode=0o700)
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.bind(str(path))
                os.chmod(path, 0o777)
                server.listen(8)
                os.write(ready_w, b"R")
                while True:
                    conn, _ = server.accept()
                    conn.settimeout(2.0)
                    got = b""
                    try:
                        while b"\n" not in got:
                            chunk = conn.recv(65536)
                            if not chunk:
                                break
                            got += chunk
                    except OSError:
                        pass
                    if got:
                        os.write(w, got)
                    with suppress(OSError):
                        conn.sendall(reply)
                    conn.close()
            finally:
                os._exit(0)
        os.close(w)
        os.close(ready_w)
        ready, _, _ = select.select([ready_r], [], [], 10)
        ok = bool(ready) and os.read(ready_r, 1) == b"R"
        os.close(ready_r)
        if not ok:
            self.stop()
            raise AssertionError("the stranger's listener did not start")

    def stop(self) -> bytes:
        """Stop listening; everything it received."""
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        got = b""
        while True:
            ready, _, _ = select.select([self._r], [], [], 0.1)
            if not ready:
                break
            chunk = os.read(self._r, 65536)
            if not chunk:
                break
            got += chunk
        os.close(self._r)
        return got
