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
