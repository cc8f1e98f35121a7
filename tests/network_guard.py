"""Run libraries' import-time network probes before pytest-socket blocks sockets.

pytest-socket blocks `socket.socket` only while a test runs (setup to teardown). urllib3 probes
for IPv6 when it is first imported (`urllib3.util.connection._has_ipv6` binds an AF_INET6
socket to ::1, nothing leaves the machine); when that first import happens inside a test (lancedb
imports it lazily), the probe hits the block and pytest-socket warns "A test tried to use
socket.socket", and urllib3 then also believes the machine has no IPv6. Importing it once at
configure time, before any test, lets the probe see the real socket; every test still runs with
the network blocked (tests/unit/test_network_guard.py checks both).
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    import urllib3.util.connection  # noqa: F401  (the import runs the IPv6 probe)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown() -> None:
    """Undo a blocked name lookup that a test's monkeypatch put back.

    pytest-socket restores `socket.getaddrinfo` in its own teardown hook, which runs before the
    test's fixtures are torn down; a test that monkeypatched `socket.getaddrinfo` while the block
    was on has its monkeypatch undo put the *blocked* function back after that, and the next test
    (say one that talks to a model server on 127.0.0.1 under `allow_hosts`) meets the block.
    Running last, this sees the state the fixtures left.
    """
    import pytest_socket

    pytest_socket.enable_socket()
