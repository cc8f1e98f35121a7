"""The service against clients that get things wrong: malformed requests are answered
BadRequest and the service keeps serving; a service whose data dir is deleted exits; a
read-only command on a home that holds nothing starts no service and creates nothing; a
service stopping for a client of another version hands over to the new one, which waits for
the lock instead of failing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from casper.app.requests import MAX_K
from casper.service import client, protocol
from tests.service_helpers import REPO, env_on, status, wait_for_socket

VERSION = protocol.build_id()


def _raw(home: Path, line: bytes) -> dict[str, Any]:
    """Send one line as it is and return the service's last frame."""
    sock = client.connect(home)
    assert sock is not None, "the service is not listening"
    try:
        sock.settimeout(30)
        sock.sendall(line)
        reader = sock.makefile("rb")
        while True:
            frame = json.loads(reader.readline())
            if frame.get("event") in ("result", "error"):
                return frame
    finally:
        sock.close()


def _req(cmd: Any, args: Any = None, version: Any = VERSION) -> bytes:
    body: dict[str, Any] = {"cmd": cmd, "args": args}
    if version is not None:
        body["version"] = version
    return protocol.encode(body)


def _search(**args: Any) -> bytes:
    return _req("search", {"query": "wifi password", **args})


def _search_raw(query_json: str) -> bytes:
    """A search whose query is given as raw JSON (escapes a JSON encoder would not write)."""
    return (
        f'{{"version": "{VERSION}", "cmd": "search", "args": {{"query": {query_json}}}}}\n'.encode()
    )


MALFORMED = {
    "not json": b"hello\n",
    "not an object": b"[1, 2]\n",
    "no cmd": protocol.encode({"query": 123}),
    "cmd a list": _req(["x"]),
    "cmd unknown": _req("format-disk"),
    "args a string": _req("search", "zzz"),
    "args a list": _req("search", ["q"]),
    "no version": _req("search", {"query": "x"}, version=None),
    "version a number": _req("search", {"query": "x"}, version=7),
    "query a number": _req("search", {"query": 123}),
    "query empty": _req("search", {"query": "  "}),
    "query missing": _req("search", {}),
    "unknown argument": _search(bogus=1),
    "k negative": _search(k=-5),
    "k zero": _search(k=0),
    "k huge": _search(k=10**12),
    "k past the limit": _search(k=MAX_K + 1),
    "k a string": _search(k="5"),
    "k a bool": _search(k=True),
    "k a float": _search(k=2.5),
    "mode unknown": _search(mode="psychic"),
    "rerank a string": _search(rerank="yes"),
    "person a number": _search(person=5),
    "stats with a person and a chat": _req("stats", {"person": "Sam", "chat": "7"}),
    "stats by the hour": _req("stats", {"period": "hour"}),
    "show before negative": _req("show", {"ref": "1", "before": -1}),
    "show after huge": _req("show", {"ref": "1", "after": 10**9}),
    "ask iterations huge": _req("ask", {"question": "hi", "max_iterations": 10**6}),
    "ask history a string": _req("ask", {"question": "hi", "history": "x"}),
    "nested 100,000 deep": b'{"cmd": "search", "args": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    "nested objects": b'{"x": ' * 50_000 + b"1" + b"}" * 50_000 + b"\n",
    "bytes not UTF-8": b'{"version": "' + VERSION.encode() + b'", "cmd": "search", '
    b'"args": {"query": "caf\xe9 \xff"}}\n',
    "query not UTF-8 text": _search_raw('"caf\\udce9"'),
    "person not UTF-8 text": _search_raw('"x", "person": "\\ud800"'),
    "query with a NUL": _search_raw('"wifi\\u0000password"'),
    "ask history not UTF-8 text": (
        f'{{"version": "{VERSION}", "cmd": "ask", "args": {{"question": "hi", '
        '"history": ["\\udcff"]}}\n'
    ).encode(),
}


def test_malformed_requests_are_bad_requests_and_the_service_keeps_serving(
    home: Path,
    services,  # noqa: ANN001
) -> None:
    proc = services.start(home)
    wrong = {}
    for name, line in MALFORMED.items():
        frame = _raw(home, line)
        said = frame.get("message") or "unexpected"
        if frame.get("kind") != "BadRequest" or "unexpected" in said:
            wrong[name] = frame
    assert not wrong, wrong
    assert proc.poll() is None and status(home)["pid"] == proc.pid
    answered = _raw(home, _search(k=3))
    assert answered["event"] == "result" and 0 < len(answered["result"]["hits"]) <= 3


def test_a_client_that_drips_its_request_is_cut_off_at_one_deadline(
    home: Path,
    services,  # noqa: ANN001
) -> None:
    """One byte every 0.5 s never lets a per-read timeout (2 s here) expire; the request's
    single deadline does, and the service answers others meanwhile and after."""
    proc = services.start(home, "--request-deadline", "2")
    sock = client.connect(home)
    assert sock is not None
    started = time.monotonic()
    closed_after = None
    try:
        for byte in _search(k=3)[:-1]:  # never the newline
            try:
                sock.sendall(bytes([byte]))
                sock.settimeout(0.5)
                if sock.recv(1) == b"":
                    closed_after = time.monotonic() - started
                    break
            except TimeoutError:
                continue
            except OSError:
                closed_after = time.monotonic() - started
                break
            assert time.monotonic() - started < 20, "never cut off"
    finally:
        sock.close()
    assert closed_after is not None and 1.5 < closed_after < 5, closed_after
    answered = _raw(home, _search(k=3))
    assert answered["event"] == "result" and proc.poll() is None


def test_a_service_whose_data_dir_is_deleted_exits(home: Path, services) -> None:  # noqa: ANN001
    proc = services.start(home)
    for _ in range(20):  # as `rm -rf` meets a service still writing (its first auto-index run)
        shutil.rmtree(home, ignore_errors=True)
        if not home.exists():
            break
        time.sleep(0.1)
    # gone, or made again by that run: either way not the folder it serves, so it exits
    assert proc.wait(timeout=30) == 0  # it checks every few seconds
    shutil.rmtree(home, ignore_errors=True)
    services.homes.discard(home)


def _casper(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "casper", *args, "--home", str(home)],
        env=env_on(), capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip


@pytest.mark.parametrize("made", [False, True], ids=["no folder", "empty folder"])
def test_read_only_commands_start_no_service_for_a_home_that_holds_nothing(
    made: bool,
    tmp_path: Path,
    services,  # noqa: ANN001
) -> None:
    home = tmp_path / "nothing"
    if made:
        home.mkdir(mode=0o700)
    services.watch(home)
    for args in (("search", "x"), ("stats", "Sam"), ("contacts",), ("show", "1")):
        done = _casper(home, *args)
        assert done.returncode == 1 and "nothing indexed yet" in done.stderr, done.stderr
        assert "unexpected" not in done.stderr
        assert home.exists() == made, f"{args[0]} created {home}"
        assert not client.running(home), f"{args[0]} left a service running"
    if made:
        assert sorted(p.name for p in home.iterdir()) == []


def test_a_new_version_waits_for_the_stopping_service_instead_of_failing(
    home: Path,
    services,  # noqa: ANN001
) -> None:
    old = services.start(home, "--build-id", "0.0.1+old", "--embed-delay", "4")
    box: dict[str, Any] = {}
    slow = threading.Thread(target=lambda: box.update(frame=_raw(home, _req(
        "search", {"query": "wifi password"}, version="0.0.1+old"))))  # fmt: skip
    slow.start()
    deadline = time.monotonic() + 30
    while status(home).get("inflight", 0) < 1:  # the old version is busy with it
        assert time.monotonic() < deadline
        time.sleep(0.05)
    mismatch = _raw(home, _req("contacts", {}))  # a client of the current version
    assert mismatch["kind"] == "version_mismatch"
    new = services.start(home, wait=False)  # started while the old one finishes its search
    wait_for_socket(home, new, timeout=60)
    slow.join(timeout=60)
    assert box["frame"]["event"] == "result", box  # the old one finished what it was doing
    assert old.wait(timeout=30) == 0
    assert new.poll() is None and status(home)["pid"] == new.pid
    assert status(home)["version"] == VERSION
