"""Where the service lives and how client and service talk. Stdlib only (the client imports it),
and casper.events (stdlib only too).

One JSON object per line in both directions. Request:
  {"version": V, "cmd": "search", "args": {...}}          (cmd also "status", "stop", "ping")
Reply frames (`Frame`), each with an "event" key:
  the progress events of casper.events                      ask's progress, notices, index runs
  {"event": "alive"}                                        heartbeat while work is running
  {"event": "result", "result": DOC}                        DOC is exactly the `--json` document
  {"event": "error", "message": str, "hint": str|None, "kind": str}
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
from pathlib import Path
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

import casper
from casper.events import Event

try:  # the module behind hashlib.blake2b: importing hashlib loads OpenSSL, which every client
    from _blake2 import blake2b  # process paid for (~8 ms) to name its socket and its build
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b

PROTOCOL = 1
HEARTBEAT_S = 2.0  # the service says "alive" this often while a request is running
MAX_REQUEST = 1 << 20  # bytes in one request line
_SUN_PATH_MAX = 100  # sockaddr_un holds 104 (macOS) / 108 (Linux) bytes; keep a margin

_build: str | None = None


class RequestLine(TypedDict):
    version: str  # build_id(): a service of another build stops, and the client starts one
    cmd: str
    args: dict[str, object]


class AliveFrame(TypedDict):
    event: Literal["alive"]


class ResultFrame(TypedDict):
    event: Literal["result"]
    result: object  # the command's `--json` document (or the service's own answer)


class ErrorFrame(TypedDict):
    event: Literal["error"]
    message: str
    hint: NotRequired[str | None]
    kind: NotRequired[str]  # the error's class; "version_mismatch": another build answered
    version: NotRequired[str]  # with version_mismatch: the service's build


Reply: TypeAlias = ResultFrame | ErrorFrame  # the frame that ends a request
Frame: TypeAlias = Event | AliveFrame | Reply


def build_id() -> str:
    """The package version plus a fingerprint of its source files.

    A service started from different code (an upgrade, a checkout that moved) must not answer:
    the client restarts it. Stat-only, ~1 ms for the package.
    """
    global _build
    if _build is None:
        root = Path(casper.__file__).parent
        digest = blake2b(digest_size=8)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, name))
                    digest.update(f"{dirpath}/{name}:{st.st_mtime_ns}:{st.st_size};".encode())
        _build = f"{casper.__version__}+p{PROTOCOL}.{digest.hexdigest()}"
    return _build


# ---- paths ----------------------------------------------------------------------------------
def socket_path(data_dir: Path) -> Path:
    """`service.sock` in the data dir, or (if that path is too long for AF_UNIX) a private
    per-user dir in the temp dir, named by a hash of the data dir."""
    data_dir = Path(os.path.abspath(data_dir.expanduser()))  # client and service agree
    direct = data_dir / "service.sock"
    if len(os.fsencode(str(direct))) <= _SUN_PATH_MAX:
        return direct
    key = blake2b(os.fsencode(str(data_dir)), digest_size=8).hexdigest()
    base = Path(os.environ.get("TMPDIR") or "/tmp")
    if len(os.fsencode(str(base))) > 60:
        base = Path("/tmp")
    return base / f"casper-{os.getuid()}" / f"{key}.sock"


def pid_path(data_dir: Path) -> Path:
    return data_dir / "service.pid"


def lock_path(data_dir: Path) -> Path:
    return data_dir / "service.lock"


def log_path(data_dir: Path) -> Path:
    return data_dir / "service.log"


def socket_dir_problem(folder: Path, *, loose_ok: bool = False) -> str | None:
    """What makes a socket in `folder` untrustworthy — a link, not a folder, another user's,
    writable by group or others (unless `loose_ok`: the service tightens its own) — or None
    when it is this user's own folder that only they can write, or not there at all. Only
    write matters: with it another user can swap the socket; a folder others may merely read
    (a data dir made with a plain `mkdir`, 755) gives them nothing, since the socket itself
    is 0600 and the listener's uid is checked. Read with lstat: a link is judged as a link,
    never by what it points to."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be examined ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link, not a folder"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    if st.st_mode & 0o022 and not loose_ok:
        return f"can be written by others (mode {stat.S_IMODE(st.st_mode):o}, not 700)"
    return None


def private_socket_dir(path: Path) -> None:
    """Create the socket's directory 0700 and refuse one that is not this user's own folder
    (another user may have made it first: its name is predictable)."""
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    problem = socket_dir_problem(parent, loose_ok=True)
    if problem is not None:
        raise PermissionError(f"{parent} {problem}")
    if os.lstat(parent).st_mode & 0o077:
        os.chmod(parent, 0o700)


# ---- framing ------------------------------------------------------------------------------
def encode(obj: Frame | RequestLine) -> bytes:
    """One frame: compact JSON (newlines inside strings are escaped) and a newline. A string
    that is not UTF-8 text (a lone surrogate) is sent escaped, never dropped with the frame."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> Any:
    """One frame; ValueError for bytes that are not UTF-8 or not JSON, or JSON nested past the
    interpreter's recursion limit (json raises RecursionError there, which no caller expects
    from a request line)."""
    try:
        return json.loads(line.decode())
    except RecursionError:
        raise ValueError("nested too deeply") from None


# ---- peer credentials -----------------------------------------------------------------------
def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED on Linux, LOCAL_PEERCRED on
    macOS), or None where neither is available (then 0700 dir + 0600 socket protect it)."""
    if hasattr(socket, "SO_PEERCRED"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", raw)[1]
    if sys.platform == "darwin":
        # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]; }
        sol_local, local_peercred = 0, 0x001
        raw = sock.getsockopt(sol_local, local_peercred, 76)
        return struct.unpack_from("=Ii", raw)[1]
    return None
