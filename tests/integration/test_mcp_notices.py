"""`casper mcp` results say what `search` says (issue 36): the searched words no message
contains (`words_not_found` and a notice), and dates outside the history, in the structured
result and in the text the client's model reads. In process, through the SDK's own client,
on the demo with fake models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.first_hour import run_demo, use_demo_fakes


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp-notices") / "casper-home"
    with pytest.MonkeyPatch.context() as mp:
        use_demo_fakes(mp)
        run_demo(base)
    return base / "demo"


def call(home: Path, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call through `casper mcp`'s server, in this process."""
    from mcp import Client

    from casper.cli.base import config
    from casper.cli.mcp import build_server
    from casper.cli.transport import Session

    server = build_server(Session(config(home), no_service=True))

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(main)


def test_a_word_no_message_contains_is_said_in_the_result(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_demo_fakes(monkeypatch)
    result = call(home, "search_messages", {"query": "xylophone"})
    data = result.structured_content
    assert result.is_error is False and data["ok"] is True
    assert data["words_not_found"] == ["xylophone"]
    said = [n for n in data["notices"] if n.startswith("no message contains 'xylophone'")]
    assert said, data["notices"]
    assert said[0] in result.content[0].text  # the client's model reads it too
    found = call(home, "search_messages", {"query": "thanksgiving"}).structured_content
    assert found["words_not_found"] == []
    assert not [n for n in found["notices"] if n.startswith("no message contains")]
