"""The network stays blocked in every test, and no import-time probe trips the block.

The first two run a tiny test file in a fresh pytest process with the suite's socket options, so
urllib3 is imported for the first time inside a test, as lancedb does in the suite.
"""

from __future__ import annotations

import os
import socket

import pytest
import pytest_socket

from tests.paths import REPO

pytest_plugins = ["pytester"]

BLOCKED = "A test tried to use socket.socket"
SUITE_SOCKET_OPTIONS = ("-p", "no:cacheprovider", "--disable-socket", "--allow-unix-socket")
PROBE = """
def test_first_urllib3_import_happens_in_a_test():
    import urllib3.util.connection  # noqa: F401
"""


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Run PROBE in a fresh pytest process with the suite's socket options plus `plugins`."""
    # that process runs in a temp dir: let it import tests.network_guard from this checkout
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), path])))
    pytester.makepyfile(test_probe=PROBE)

    def _run(*plugins: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*SUITE_SOCKET_OPTIONS, *plugins, "-W", "default")

    return _run


LEAK = """
import socket

import pytest


def test_a_monkeypatched_lookup(monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [])


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_the_next_test_may_look_up_loopback():
    socket.getaddrinfo("127.0.0.1", 80)
"""


def test_a_monkeypatched_lookup_does_not_leave_the_block_on_for_the_next_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), path])))
    pytester.makepyfile(test_leak=LEAK)
    guarded = pytester.runpytest_subprocess(*SUITE_SOCKET_OPTIONS, "-p", "tests.network_guard")
    guarded.assert_outcomes(passed=2)
    # the control: without the guard, the monkeypatch undo leaves the blocked lookup behind
    plain = pytester.runpytest_subprocess(*SUITE_SOCKET_OPTIONS)
    plain.assert_outcomes(passed=1, failed=1)


def test_urllib3_ipv6_probe_no_longer_trips_the_socket_block(run) -> None:  # noqa: ANN001
    result = run("-p", "tests.network_guard")
    result.assert_outcomes(passed=1)
    assert BLOCKED not in result.stdout.str()


def test_without_the_guard_the_probe_trips_the_block(run) -> None:  # noqa: ANN001
    # the control: proves the case above can fail (the warning is real, not filtered away)
    result = run()
    result.assert_outcomes(passed=1, warnings=1)
    assert BLOCKED in result.stdout.str()


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6])
def test_internet_sockets_are_still_blocked_in_a_test(family: socket.AddressFamily) -> None:
    with pytest.warns(UserWarning, match=BLOCKED), pytest.raises(pytest_socket.SocketBlockedError):
        socket.socket(family, socket.SOCK_STREAM)


def test_name_lookups_are_still_blocked_in_a_test() -> None:
    with pytest.warns(UserWarning), pytest.raises(pytest_socket.SocketBlockedError):
        socket.getaddrinfo("example.org", 443)
