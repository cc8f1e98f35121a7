"""`casper mcp` driven by the official MCP SDK's own client over stdio: the five agent tools
under their agent names and schemas, each callable, answers with citations a client can pass
back, a bad argument an error result (not a crash), and the warm service used when it runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from casper.agent.tool_args import client_schema
from casper.agent.tools import SPECS
from casper.cli import app
from tests.service_helpers import REPO, env_on, status

pytestmark = pytest.mark.slow
runner = CliRunner()
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_messages", {"query": "thanksgiving"}),
    ("list_contacts", {"name_like": "sam"}),
    ("get_contact_stats", {"person": "Sam", "start_date": "2023-01-01", "end_date": "2023-12-31"}),
    ("get_conversation_context", {"message_id": "#2441", "before": 1, "after": 2}),
    ("get_message_volume_by_period",
     {"start_date": "2023-01-01", "end_date": "2023-12-31", "period": "year", "top_n": 2}),
]  # fmt: skip
Session = Any  # mcp.ClientSession


def with_client(home: Path, args: list[str], env: dict[str, str], work: Callable[..., Awaitable]):
    """Start `casper mcp` (or the test wrapper) as the SDK's stdio client does, run `work`."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(REPO))

    async def main() -> Any:
        with open(home / "mcp-stderr.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.server_info.name == "casper"
                return await work(session)

    return anyio.run(main)


async def _every_tool(session: Session) -> dict[str, Any]:
    listed = (await session.list_tools()).tools
    results = {name: await session.call_tool(name, args) for name, args in CALLS}
    bad = await session.call_tool("search_messages", {"limit": 3})  # no query
    wrong_type = await session.call_tool("get_conversation_context", {"message_id": ["x"]})
    from mcp import MCPError

    try:
        await session.call_tool("delete_messages", {})
        unknown = None
    except MCPError as exc:
        unknown = exc
    again = await session.call_tool("list_contacts", {"limit": 1})  # still serving
    return {"listed": listed, "results": results, "bad": bad, "wrong_type": wrong_type,
            "unknown": unknown, "again": again}  # fmt: skip


def _check_session(seen: dict[str, Any], home: Path) -> None:
    listed = {tool.name: tool for tool in seen["listed"]}
    assert list(listed) == [spec.name for spec in SPECS]
    for spec in SPECS:
        # the model's schema, with the cap on strings a client is told (casper.agent.tool_args)
        assert listed[spec.name].input_schema == client_schema(spec.parameters)
        assert listed[spec.name].description == spec.description
        assert listed[spec.name].annotations.read_only_hint is True
    results = seen["results"]
    for name, _ in CALLS:
        assert results[name].is_error is False, (name, results[name].content)
        assert results[name].structured_content["ok"] is True
    found = results["search_messages"]
    cited = found.structured_content["citations"]
    assert cited and all(c["guid"] and isinstance(c["rowid"], int) for c in cited)
    thanksgiving = [c for c in cited if "thanksgiving" in c["text"].lower()]
    assert len(thanksgiving) >= 2
    text = found.content[0].text
    assert all(f"[#{c['rowid']}]" in text for c in cited)  # the ids in the text are the cited ones
    assert len(text) <= 2000 + 100  # the agent's cap (and its notice)
    # an id the client got back opens the message with `casper show`
    shown = runner.invoke(app, ["show", str(thanksgiving[0]["rowid"]), "--json", "--home",
                                str(home)])  # fmt: skip
    assert json.loads(shown.stdout)["message"]["guid"] == thanksgiving[0]["guid"]
    assert "Sam Rivera" in results["list_contacts"].content[0].text
    context = results["get_conversation_context"].structured_content["citations"]
    assert 2441 in [c["rowid"] for c in context]
    assert results["get_message_volume_by_period"].content[0].text.startswith("whole range:")
    for bad in (seen["bad"], seen["wrong_type"]):
        assert bad.is_error is True
        assert bad.content[0].text.startswith("error: bad arguments for ")
    assert "query is required" in seen["bad"].content[0].text
    assert seen["unknown"] is not None and "unknown tool 'delete_messages'" in str(seen["unknown"])
    assert seen["again"].is_error is False


def test_mcp_through_the_warm_service(home: Path, services) -> None:  # noqa: ANN001
    services.start(home)
    seen = with_client(home, ["-m", "casper", "mcp", "--home", str(home)], env_on(), _every_tool)
    _check_session(seen, home)
    # answered by the service: one `tool` request per call that reached a tool
    assert status(home)["by_command"]["tool"] == len(CALLS) + 3


def test_mcp_in_its_own_process(home: Path) -> None:
    env = {**env_on(), "CASPER_SERVICE": "0"}
    args = ["-m", "tests.mcp_fakes", "--home", str(home), "--no-service"]
    seen = with_client(home, args, env, _every_tool)
    _check_session(seen, home)
    assert not (home / "service.sock").exists()


def test_mcp_on_an_empty_home_answers_errors_not_a_crash(tmp_path: Path) -> None:
    home = tmp_path / "empty"
    home.mkdir(mode=0o700)

    async def work(session: Session) -> Any:
        first = await session.call_tool("list_contacts", {})
        return first, await session.list_tools()

    env = {**env_on(), "CASPER_SERVICE": "0"}
    result, listed = with_client(home, ["-m", "casper", "mcp", "--home", str(home)], env, work)
    assert result.is_error is True and "nothing indexed yet" in result.content[0].text
    assert "(hint: run `" in result.content[0].text  # the hint comes along
    assert len(listed.tools) == 5


def test_the_mcp_path_through_the_service_loads_no_model_library(
    home: Path,
    services,  # noqa: ANN001
) -> None:
    services.start(home)
    code = (
        "import sys, json\n"
        "from casper.cli.mcp import build_server, run_tool\n"
        "from casper.cli.transport import Session\n"
        "from casper.config import load_config\n"
        f"session = Session(load_config({str(home)!r}))\n"
        "build_server(session)\n"
        "doc, _ = run_tool(session, 'search_messages', {'query': 'thanksgiving'})\n"
        "assert doc['citations'], doc\n"
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'lancedb', 'pyarrow',\n"
        "         'mlx', 'mlx_lm', 'openai', 'dateparser')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env_on(), capture_output=True, text=True,
        timeout=120, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_server_sends_no_telemetry() -> None:
    """The SDK's default OpenTelemetry tracing is taken out (an exporter configured on the
    machine would otherwise receive every tool call)."""
    from mcp.server.lowlevel import Server

    from casper.cli.mcp import build_server

    def tracing(server: Any) -> list[str]:
        return [type(m).__name__ for m in server.middleware if "Telemetry" in type(m).__name__]

    assert tracing(Server("any")) == ["OpenTelemetryMiddleware"]  # the SDK's default
    assert tracing(build_server(session=None)) == []  # type: ignore[arg-type]  # not called
