"""A new tool is one declaration in casper/agent/tools.py: a tool registered here, in the test
only, is listed to the agent's model and to an MCP client with the JSON Schema its dataclass
declares, its arguments are read (and refused) by that declaration — leniently for the model,
by its schema for a client — it is dispatched, and under `privacy = "aggregate"` its text is
withheld when it says it shows messages, and only masked when it does not. On the demo, in
process (MCP through the SDK's own client), fake models."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import anyio
import pytest

from casper.agent import tools
from casper.agent.ceiling import CeilingToolbox
from casper.agent.tool_args import Arg, client_schema
from casper.cli.base import config
from casper.errors import CasperError
from casper.protocols import ToolCall
from casper.store.db import Store

UTC = ZoneInfo("UTC")


@dataclass(frozen=True, slots=True)
class EchoArgs:
    message_id: Annotated[str, Arg("a message id", lstrip="#")]
    times: Annotated[int, Arg("how often (1-3)", bounds=(1, 3))] = 1


SCHEMA = {
    "type": "object",
    "properties": {
        "message_id": {"type": "string", "description": "a message id"},
        "times": {"type": "integer", "description": "how often (1-3)", "default": 1},
    },
    "required": ["message_id"],
}


@pytest.fixture(params=[True, False], ids=["shows-messages", "counts-only"])
def echo(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """`echo_message`, registered for this test: a message's line, `times` times."""
    monkeypatch.setattr(tools, "TOOLS", dict(tools.TOOLS))

    @tools.tool("echo_message", "Repeat one message.", EchoArgs, shows_messages=request.param)
    def echo_message(box: tools.Toolbox, a: EchoArgs) -> tools.Shown:
        m = box.store.message(a.message_id)
        if m is None:
            raise CasperError(f"no message with id {a.message_id}")
        return "\n".join([box.line(m, box.store.names())] * a.times), [m.guid]

    return bool(request.param)


def _message(store: Store) -> tuple[int, str]:
    """A message with words enough that its text cannot appear by chance."""
    for chat in store.chats():
        for m in store.chat_messages(chat.id):
            if len(m.text.split()) >= 6:
                return m.rowid, m.text
    raise AssertionError("no long message in the demo")


def test_a_tool_declared_once_is_listed_read_run_and_withheld(demo_home: Path, echo: bool) -> None:
    store = Store.open(demo_home / "casper.sqlite")
    rowid, text = _message(store)
    box = tools.Toolbox(store, lambda q, **o: [], UTC)
    assert box.specs[-1].name == "echo_message" and dict(box.specs[-1].parameters) == SCHEMA
    assert box.specs[:-1] == tools.SPECS  # the five as they were, then the new one

    shown = box.call(ToolCall("echo_message", {"message_id": f"#{rowid}", "times": "9"}))
    assert shown.ok and shown.text.count(text) == 3  # "9" read as 9, clamped to 3
    bad = box.call(ToolCall("echo_message", {"message_id": str(rowid), "times": "x"}))
    assert bad.text == "error: bad arguments for echo_message: times must be an integer"
    missing = box.call(ToolCall("echo_message", {}))
    assert missing.text == "error: bad arguments for echo_message: message_id is required"

    ceiling = CeilingToolbox(box, "aggregate", store, UTC)
    limited = ceiling.call(ToolCall("echo_message", {"message_id": str(rowid)}))
    assert limited.ok and f"[#{rowid}]" in limited.text
    assert (text not in limited.text) is echo and ("withheld" in limited.text) is echo

    listed, found, wrong = _through_mcp(demo_home, rowid)
    assert listed["echo_message"] == client_schema(SCHEMA)  # a client is told the strings' cap
    assert list(listed)[:-1] == [s.name for s in tools.SPECS]
    assert found.is_error is False and (text not in found.content[0].text) is echo
    assert found.structured_content["citations"][0]["rowid"] == rowid
    assert wrong.is_error is True  # a client is held to the schema the declaration gives
    assert wrong.content[0].text == (
        "error: bad arguments for echo_message: times must be a whole number, not '2'"
    )


def _through_mcp(home: Path, rowid: int) -> tuple[dict[str, Any], Any, Any]:
    """(tool name → its listed input schema, a call's result, a call against the schema's)."""
    from mcp import Client

    from casper.cli.mcp import build_server
    from casper.cli.transport import Session

    server = build_server(Session(config(home), no_service=True), privacy="aggregate")

    async def main() -> tuple[dict[str, Any], Any, Any]:
        async with Client(server) as client:
            listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            found = await client.call_tool("echo_message", {"message_id": str(rowid)})
            wrong = await client.call_tool("echo_message", {"message_id": "1", "times": "2"})
            return listed, found, wrong

    return anyio.run(main)
