"""`casper mcp --privacy` end to end through the SDK's own client and the warm service: it says
on stderr which mode it serves, its results follow it (never looser than config.toml), and the
service log counts what the client was shown without a word of the text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_mcp_server import with_client
from tests.service_helpers import env_on

pytestmark = pytest.mark.slow


async def _search(session: Any) -> Any:
    return await session.call_tool("search_messages", {"query": "thanksgiving"})


def test_mcp_serves_its_ceiling_and_logs_counts_only(home: Path, services) -> None:  # noqa: ANN001
    with (home / "config.toml").open("a") as f:
        f.write('privacy = "redacted"\n')
    services.start(home)
    args = ["-m", "casper", "mcp", "--home", str(home), "--privacy", "full"]
    found = with_client(home, args, env_on(), _search)
    stderr = (home / "mcp-stderr.log").read_text()
    assert (
        "casper mcp: privacy redacted (privacy = 'redacted' in config.toml (--privacy full "
        "cannot loosen it))" in stderr
    )
    assert found.is_error is False
    args = ["-m", "casper", "mcp", "--home", str(home), "--privacy", "aggregate"]
    found = with_client(home, args, env_on(), _search)
    assert (
        "casper mcp: privacy aggregate (--privacy aggregate)"
        in (home / "mcp-stderr.log").read_text()
    )
    text = found.content[0].text
    cited = found.structured_content["citations"]
    assert cited and all(c["text"] == "" for c in cited)
    assert "withheld" in text and "thanksgiving" not in text.lower()
    log = (home / "test-service.log").read_text()  # the test service's log (its stderr)
    shown = re.findall(r"mcp client '([^']+)': search_messages shown (\d+) messages "
                       r"\(privacy (\w+)\)", log)  # fmt: skip
    assert [mode for _, _, mode in shown] == ["redacted", "aggregate"], log
    assert int(shown[-1][1]) == len(cited) and all(name for name, _, _ in shown)
    assert "thanksgiving" not in log.lower()
