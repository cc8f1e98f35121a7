"""`casper mcp`: the agent's five tools as an MCP server over stdio (the official `mcp` SDK),
for desktop MCP clients (Claude Desktop, LM Studio, Cursor, Zed, local agents).

Each tool keeps its agent name, JSON Schema, validation and caps (casper.agent.tools through
casper.app.tool_calls); the messages a result shows come back as citations with their ids
(`casper show ID` and `get_conversation_context` take them). Calls run where every read
command runs (casper.cli.transport): in the warm service, or in this process. stdout carries
only the protocol; notices go into the tool's result text and to stderr.

Imports: typer, casper.cli.base; mcp, anyio and the work lazily.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from casper.cli.base import Home, NoService, Verbose, app, config, guarded

if TYPE_CHECKING:
    from casper.cli.transport import Session
    from casper.protocols import ToolSpec

SERVER_NAME = "casper"
INSTRUCTIONS = (
    "Search and read the user's own iMessage history on this Mac. Cite messages by their "
    "[#id]; get_conversation_context takes an id to show the exchange around it."
)


@app.command()
@guarded
def mcp(home: Home = None, no_service: NoService = False, verbose: Verbose = False) -> None:
    """Serve the five agent tools to an MCP client over stdio (stdin/stdout)."""
    import anyio

    from casper.cli.transport import Session

    cfg = config(home)
    server = build_server(Session(cfg, no_service=no_service))
    anyio.run(_serve_stdio, server)


async def _serve_stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def tool_specs() -> tuple[ToolSpec, ...]:
    from casper.agent.tools import SPECS

    return SPECS


def build_server(session: Session) -> Any:
    """An MCP low-level Server whose tools are the agent's, answered through `session`."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from casper import __version__

    specs = {spec.name: spec for spec in tool_specs()}
    one_at_a_time = threading.Lock()  # a Session runs one command at a time

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=spec.name,
                    description=spec.description,
                    input_schema=dict(spec.parameters),
                    # they read the index and change nothing; what they read is this machine's
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                )
                for spec in specs.values()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in specs:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name!r}; tools: {', '.join(specs)}",
            )
        arguments = dict(params.arguments or {})

        def run() -> tuple[dict[str, Any], list[str]]:
            with one_at_a_time:
                return run_tool(session, params.name, arguments)

        try:
            doc, notices = await anyio.to_thread.run_sync(run)
        except Exception as exc:  # noqa: BLE001 - said to the client, the server keeps serving
            return _error_result(exc)
        text = doc["text"] + "".join(f"\n(note: {n})" for n in notices)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={
                "ok": doc["ok"],
                "citations": doc["citations"],
                "indexed_through": doc["indexed_through"],
                # what the text's notes say, and the searched words no message contains
                "notices": notices,
                "words_not_found": doc.get("words_not_found", []),
            },
            is_error=not doc["ok"],
        )

    server = Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # the SDK traces every message with OpenTelemetry by default: a no-op without an exporter,
    # but a machine configured with one would ship tool names and timings off it
    server.middleware = [m for m in server.middleware if "OpenTelemetry" not in type(m).__name__]
    return server


def run_tool(session: Session, name: str, arguments: dict[str, Any]) -> tuple[Any, list[str]]:
    """(the `tool` document, the notices said while it ran) for one call."""
    notices: list[str] = []

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "notice":
            notices.append(str(event.get("text", "")))

    doc = session.execute("tool", {"name": name, "arguments": arguments}, on_event=on_event)
    return doc, notices


def _error_result(exc: Exception) -> Any:
    """A failure the client's model can read (an error result), not a broken connection."""
    import mcp_types as types

    from casper.errors import CasperError

    if isinstance(exc, CasperError):
        text = f"error: {exc.message}" + (f" (hint: {exc.hint})" if exc.hint else "")
    else:
        text = f"error: unexpected {type(exc).__name__} in casper"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
