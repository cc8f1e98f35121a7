"""Loaded by every Python process of the egress test (tests/integration/test_egress.py puts this
folder first on PYTHONPATH): an audit hook (PEP 578) that writes one JSON line per file the
process opens for writing, folder it makes, path it renames to, and socket it makes, connects or
binds, to $CASPER_EGRESS_LOG. The test decides what is allowed; this only records.

Native code (onnxruntime's C++, LanceDB's Rust) writes without audit events: the test's
before/after walk of the fresh HOME and TMPDIR catches those files.
"""

from __future__ import annotations

import json
import os
import sys

_LOG_PATH = os.environ.get("CASPER_EGRESS_LOG")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_busy = False
_log = None


def _path(value: object) -> str | None:
    if isinstance(value, int):
        return None  # a file descriptor: its path was recorded when it was opened
    try:
        return os.path.abspath(os.fsdecode(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _address(value: object) -> object:
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, tuple):
        return [_address(v) for v in value]
    return value if isinstance(value, (str, int, float)) or value is None else repr(value)


def _record(kind: str, **fields: object) -> None:
    global _busy
    if _log is None:
        return
    _busy = True
    try:
        _log.write(json.dumps({"kind": kind, "pid": os.getpid(), **fields}) + "\n")
        _log.flush()
    finally:
        _busy = False


def _hook(event: str, args: tuple) -> None:  # noqa: C901 - one branch per audited event
    if _busy:
        return
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writes and (p := _path(path)):
            _record("write", path=p)
    elif event in ("os.mkdir", "os.symlink", "os.link"):
        target = args[1] if event in ("os.symlink", "os.link") else args[0]
        if p := _path(target):
            _record(event, path=p)
    elif event in ("os.rename", "shutil.copyfile", "shutil.copytree", "shutil.move"):
        if p := _path(args[1]):
            _record(event, path=p)
    elif event == "sqlite3.connect":
        database = args[0]
        if database not in (":memory:", b":memory:", "") and (p := _path(database)):
            _record("sqlite3", path=p)
    elif event == "socket.__new__":
        _, family, kind, _proto = args
        _record("socket", family=int(family), type=int(kind))
    elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[-1]
        _record(event, family=int(getattr(sock, "family", -1)), address=_address(address))
    elif event == "socket.getaddrinfo":
        _record(event, host=_address(args[0]), port=_address(args[1]))


if _LOG_PATH:
    _log = open(_LOG_PATH, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    _record("start", argv=sys.argv[:3])
    sys.addaudithook(_hook)
