"""The thin side: find (or start) the service, send one request, relay its frames.

Stdlib only, plus casper.errors, casper.events and casper.service.protocol: a command that
talks to the service never imports numpy, torch, lancedb or mlx. Every read has a timeout; the
service sends a heartbeat while it works, so silence means it is gone or stuck, never a long
answer.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

from casper.errors import CasperError
from casper.events import Emit, ignore
from casper.service import protocol

if TYPE_CHECKING:  # imported when a service is started, not on every request
    import subprocess

READ_TIMEOUT_S = 10 * protocol.HEARTBEAT_S  # no frame for this long: the service is stuck
CONNECT_TIMEOUT_S = 2.0
EXIT_WAIT_S = 10.0
ALREADY_RUNNING_EXIT = 3  # `casper serve` exits with this when another one holds the lock


def start_timeout() -> float:
    """How long a client waits for a service it started (the socket, not the models)."""
    try:
        return float(os.environ.get("CASPER_SERVICE_START_TIMEOUT", "15"))
    except ValueError:
        return 15.0


class ServiceUnavailable(Exception):
    """No service could be reached or started; the caller runs the command itself."""


class ServiceLost(Exception):
    """The service went away (crash, kill -9) or went silent in the middle of a request."""


class UntrustedService(CasperError):
    """The socket is not this user's service's: its folder is not the user's own private
    folder, or another user's process listens on it. Nothing was sent; the command stops."""


def connect(data_dir: Path) -> socket.socket | None:
    """A connected socket, or None when no service listens (no socket file, or a stale one).

    Before a byte is sent: the socket's folder must be this user's own private folder (with a
    long data dir path it is `$TMPDIR/casper-<uid>/`, a name anyone can take first), and the
    process listening must run as this user (SO_PEERCRED / LOCAL_PEERCRED, as the service
    checks its callers); otherwise UntrustedService."""
    path = protocol.socket_path(data_dir)
    problem = protocol.socket_dir_problem(path.parent)
    if problem is not None:
        raise _untrusted(path, f"its folder {path.parent} {problem}", _folder_hint(data_dir, path))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(str(path))
    except (TimeoutError, FileNotFoundError, ConnectionRefusedError, OSError):
        sock.close()
        return None
    try:
        uid = protocol.peer_uid(sock)
    except OSError as exc:
        sock.close()
        raise _untrusted(path, f"who listens on it cannot be told ({exc})", _LISTENER) from exc
    if uid is not None and uid != os.getuid():
        sock.close()
        raise _untrusted(path, f"the process listening on it runs as uid {uid}, not as you "
                         f"(uid {os.getuid()})", _LISTENER)  # fmt: skip
    return sock


_LISTENER = ("another user's process may be waiting for your requests there: stop it, or "
             "run with --no-service")  # fmt: skip


def _folder_hint(data_dir: Path, path: Path) -> str:
    folder = path.parent
    if folder == Path(os.path.abspath(data_dir.expanduser())):
        return (f"the data dir must be a folder of yours that only you can open (`chmod 700 "
                f"{folder}`); or run with --no-service")  # fmt: skip
    return (f"another user may have made it to read your requests or answer them: remove it "
            f"(it is not yours: `sudo rm -r {folder}`), or run with --no-service")  # fmt: skip


def _untrusted(path: Path, why: str, hint: str) -> UntrustedService:
    return UntrustedService(f"not talking to the casper service at {path}: {why}; nothing was "
                            "sent", hint=hint)  # fmt: skip


def running(data_dir: Path) -> bool:
    """True while a service holds the data dir's lock (dead processes hold no flock)."""
    path = protocol.lock_path(data_dir)
    if not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # no permission to read it: no service could take it either
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we may have taken
    return False


def service_pid(data_dir: Path) -> int | None:
    try:
        return int(protocol.pid_path(data_dir).read_text().split()[0])
    except (OSError, ValueError, IndexError):  # gone, a folder, unreadable, not a pid
        return None


def service_env() -> dict[str, str]:
    """The service's environment: this one, with glibc held to two malloc arenas (it answers
    each request on a new thread, and each thread's arena kept its freed memory: 23 MB less
    after 20 auto-index runs on the demo, docs/performance.md). Ignored off glibc; a value the
    user set wins."""
    return {"MALLOC_ARENA_MAX": "2", **os.environ}


def spawn(data_dir: Path) -> subprocess.Popen[bytes]:
    """Start `python -m casper serve` detached: own session, no terminal, log in the data dir."""
    path = protocol.log_path(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as exc:  # a folder in its place, no permission: the command runs here
        raise ServiceUnavailable(
            f"the casper service cannot start: {path} cannot be written ({exc.strerror}; "
            "`casper index --rebuild` moves it aside)"
        ) from exc
    import subprocess

    try:
        return subprocess.Popen(
            [sys.executable, "-m", "casper", "serve", "--home", str(data_dir)],
            env=service_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # never hold the caller's pipe open (`casper … | head`)
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(log)


def start(data_dir: Path, timeout: float | None = None) -> socket.socket:
    """Start a service (or wait for one another client is starting) and connect to it."""
    deadline = time.monotonic() + (start_timeout() if timeout is None else timeout)
    proc: subprocess.Popen[bytes] | None = None
    while time.monotonic() < deadline:
        sock = connect(data_dir)
        if sock is not None:
            return sock
        if proc is None or proc.poll() is not None:
            code = None if proc is None else proc.returncode
            if code not in (None, 0, ALREADY_RUNNING_EXIT):
                raise ServiceUnavailable(
                    f"the casper service did not start (exit {code}; see "
                    f"{protocol.log_path(data_dir)})"
                )
            if proc is None or not running(data_dir):
                proc = spawn(data_dir)
        time.sleep(0.03)
    raise ServiceUnavailable("the casper service did not start in time")


def wait_exit(data_dir: Path, timeout: float = EXIT_WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while running(data_dir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.03)
    return True


def call(
    data_dir: Path,
    cmd: str,
    args: dict[str, object] | None = None,
    *,
    on_event: Emit = ignore,
    autostart: bool = True,
) -> object:
    """Send one request and return the result document; progress frames go to `on_event`.
    What the document is depends on `cmd` (the service answers it as casper.app.handlers
    does in this process); the caller that sent it knows its type (casper.cli.transport).

    Raises CasperError for an error the command itself reported (same as in-process),
    ServiceUnavailable when no service can be used, ServiceLost when it died mid-request.
    """
    for _attempt in range(2):
        sock = connect(data_dir)
        if sock is None and running(data_dir):
            sock = _connect_soon(data_dir)  # alive but busy accepting (or just starting)
        if sock is None:
            if not autostart:
                raise ServiceUnavailable("no casper service is running")
            sock = start(data_dir)
        try:
            frame = _exchange(sock, cmd, args or {}, on_event)
        finally:
            sock.close()
        if frame["event"] == "result":
            return frame["result"]
        if frame.get("kind") == "version_mismatch":
            if not autostart or not wait_exit(data_dir):
                raise ServiceUnavailable("the running casper service is another version")
            continue  # it is gone: the next round starts one of our version
        raise CasperError(frame.get("message", "the service failed"), hint=frame.get("hint"))
    raise ServiceUnavailable("the casper service kept answering with another version")


def _connect_soon(data_dir: Path, timeout: float = 3.0) -> socket.socket | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.02)
        sock = connect(data_dir)
        if sock is not None:
            return sock
    return None


def _exchange(
    sock: socket.socket, cmd: str, args: dict[str, object], on_event: Emit
) -> protocol.Reply:
    _send(sock, cmd, args)
    return _reply(sock, on_event)


def _send(sock: socket.socket, cmd: str, args: dict[str, object]) -> None:
    request: protocol.RequestLine = {"version": protocol.build_id(), "cmd": cmd, "args": args}
    sock.settimeout(READ_TIMEOUT_S)
    try:
        sock.sendall(protocol.encode(request))
    except TimeoutError as exc:
        raise ServiceLost(f"no word from the casper service for {READ_TIMEOUT_S:.0f} s") from exc
    except (ConnectionError, OSError) as exc:
        raise ServiceLost(f"lost the casper service: {type(exc).__name__}") from exc


def _reply(sock: socket.socket, on_event: Emit) -> protocol.Reply:
    """The frame that ends the request; progress frames go to `on_event`."""
    try:
        reader = sock.makefile("rb")
        while True:
            line = reader.readline()
            if not line:
                raise ServiceLost("the casper service closed the connection mid-request")
            frame = protocol.decode(line)  # a Frame: the service of this build sends no other
            event = frame.get("event")
            if event in ("result", "error"):
                return frame
            if event != "alive":
                on_event(frame)
    except TimeoutError as exc:
        raise ServiceLost(f"no word from the casper service for {READ_TIMEOUT_S:.0f} s") from exc
    except (ConnectionError, OSError, ValueError) as exc:
        raise ServiceLost(f"lost the casper service: {type(exc).__name__}") from exc


class Sent:
    """A request already on its way to a running service. The thin path sends a read command's
    request first and then loads what checking and printing it needs, while the service works
    (casper/cli/thin.py). `answer` is `call`'s answer to it, once the caller's own check of the
    request `matches` what was sent; `close` drops it (the answer is never read)."""

    def __init__(self, data_dir: Path, sock: socket.socket, cmd: str, args: dict[str, object]):
        self.data_dir, self.sock, self.cmd, self.args = data_dir, sock, cmd, args

    def matches(self, cmd: str, args: dict[str, object]) -> bool:
        return cmd == self.cmd and args == self.args

    def answer(self, on_event: Emit = ignore) -> object:
        """As `call`: the result document, CasperError for the command's own error,
        ServiceUnavailable or ServiceLost."""
        try:
            frame = _reply(self.sock, on_event)
        finally:
            self.close()
        if frame["event"] == "result":
            return frame["result"]
        if frame.get("kind") == "version_mismatch":  # a service of another build: as `call`
            return call(self.data_dir, self.cmd, self.args, on_event=on_event)
        raise CasperError(frame.get("message", "the service failed"), hint=frame.get("hint"))

    def close(self) -> None:
        self.sock.close()


def send(data_dir: Path, cmd: str, args: dict[str, object]) -> Sent | None:
    """Send one request to the service that is running for `data_dir`, without waiting for
    the answer; None when none answers the socket (never starts one), or when it is not to be
    trusted (the command's own call says so, with its error and hint)."""
    try:
        sock = connect(data_dir)
    except UntrustedService:
        return None
    if sock is None:
        return None
    try:
        _send(sock, cmd, args)
    except ServiceLost:
        sock.close()
        return None
    return Sent(data_dir, sock, cmd, args)


def stop(data_dir: Path, timeout: float = EXIT_WAIT_S) -> int | None:
    """Ask the service to stop and wait for it; SIGTERM if it does not answer. Its pid or None."""
    import signal

    pid = service_pid(data_dir)
    if not running(data_dir):
        return None
    sock = connect(data_dir)
    if sock is not None:
        try:
            _exchange(sock, "stop", {}, ignore)
        except ServiceLost:
            pass
        finally:
            sock.close()
    if not wait_exit(data_dir, timeout) and pid:
        os.kill(pid, signal.SIGTERM)
        if not wait_exit(data_dir, timeout / 2):
            os.kill(pid, signal.SIGKILL)
            wait_exit(data_dir, timeout / 2)
    return pid


def status(data_dir: Path) -> dict[str, object]:
    """The running service's status (casper.service.server.Service.status), or
    {"running": False}."""
    sock = connect(data_dir)
    if sock is None:
        return {"running": False, "data_dir": str(data_dir)}
    try:
        frame = _exchange(sock, "status", {}, ignore)
    except ServiceLost:
        return {"running": False, "data_dir": str(data_dir)}
    finally:
        sock.close()
    if frame["event"] == "result":
        return cast("dict[str, object]", frame["result"]) or {"running": False}
    if frame.get("kind") == "version_mismatch":
        return {"running": True, "data_dir": str(data_dir), "version": frame.get("version")}
    return {"running": False}
