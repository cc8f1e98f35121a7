"""`casper mcp`: the agent's five tools as an MCP server over stdio (the official `mcp` SDK),
for desktop MCP clients (Claude Desktop, LM Studio, Cursor, Zed, local agents).

Each tool keeps its agent name, JSON Schema, validation and caps (casper.agent.tools through
casper.app.tool_calls); the messages a result shows come back as citations with their ids
(`casper show ID` and `get_conversation_context` take them). Calls run where every read
command runs (casper.cli.transport): in the warm service, or in this process. stdout carries
only the protocol; notices go into the tool's result text and to stderr.

Imports: typer, casper.cli.base, casper.errors, casper.vocab; mcp, anyio, the work and the version
lazily (`casper --help` imports this module; a CLI module imports only light ones at its top).
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer

from casper.cli.base import Home, NoService, Verbose, app, config, guarded
from casper.errors import CasperError
from casper.vocab import PRIVACY_MODES

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from casper.agent.redact import Ceiling as Gate
    from casper.app.documents import ToolDoc
    from casper.cli.transport import Session
    from casper.events import Event
    from casper.protocols import JSONValue, ToolSpec
    from casper.vocab import Privacy as Ceiling

SERVER_NAME = "casper"
INSTRUCTIONS = (
    "Search and read the user's own iMessage history on this Mac. Cite messages by their "
    "[#id]; get_conversation_context takes an id to show the exchange around it."
)


Privacy = Annotated[
    str | None,
    typer.Option(
        "--privacy",
        help="what the client may read: full, redacted (phones, emails, links, long numbers, "
        "street addresses masked) or aggregate (no message text); only stricter than the "
        "setting `privacy`",
        show_default=False,
    ),
]


@app.command()
@guarded
def mcp(
    home: Home = None,
    privacy: Privacy = None,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """Serve the five agent tools to an MCP client over stdio (stdin/stdout)."""
    import anyio

    from casper.agent.redact import stricter
    from casper.cli.transport import Session

    asked = next((mode for mode in PRIVACY_MODES if mode == privacy), None)
    if privacy is not None and asked is None:
        raise CasperError(f"--privacy {privacy!r} is not a mode",
                          hint="one of " + ", ".join(PRIVACY_MODES))  # fmt: skip
    cfg = config(home)
    mode = stricter(cfg.privacy, asked)
    print(serving_line(cfg.privacy, asked, mode), file=sys.stderr, flush=True)
    server = build_server(Session(cfg, no_service=no_service), privacy=mode)
    anyio.run(_serve_stdio, server)


def serving_line(setting: Ceiling, asked: Ceiling | None, mode: Ceiling) -> str:
    """What `casper mcp` says on stderr when it starts: the ceiling it serves, and why."""
    said: dict[Ceiling, str] = {
        "full": "full message text",
        "redacted": "message text with phone numbers, emails, links, long numbers and street "
        "addresses masked",
        "aggregate": "ids, dates, senders and counts; no message text",
    }
    why = f"--privacy {asked}" if asked == mode else f"privacy = {setting!r} in config.toml"
    if asked is not None and asked != mode:
        why += f" (--privacy {asked} cannot loosen it)"
    return f"casper mcp: privacy {mode} ({why}): clients are shown {said[mode]}"


async def _serve_stdio(server: Server) -> None:
    # the SDK's stdio transport, each line screened first: every line gets an answer
    from casper.cli.mcp_wire import serve_stdio

    await serve_stdio(server)


def tool_specs() -> tuple[ToolSpec, ...]:
    """The tools as registered (casper.agent.tools.TOOLS), in the order the model sees them."""
    from casper.agent.tools import TOOLS

    return tuple(t.spec for t in TOOLS.values())


def build_server(session: Session, privacy: Ceiling | None = None) -> Server:
    """An MCP low-level Server whose tools are the agent's, answered through `session`."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from casper import __version__
    from casper.agent.ceiling import limit_citations
    from casper.agent.tool_args import client_schema
    from casper.plaintext import plain

    specs = {spec.name: spec for spec in tool_specs()}
    ceiling = _ceiling(session, privacy)
    one_at_a_time = threading.Lock()  # a Session runs one command at a time

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=spec.name,
                    description=spec.description,
                    input_schema=client_schema(spec.parameters),
                    # they read the index and change nothing; what they read is this machine's
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                )
                for spec in specs.values()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in specs:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name!r}; tools: {', '.join(specs)}",
            )
        arguments = dict(params.arguments or {})

        client = _client_name(ctx)

        def run() -> tuple[ToolDoc, list[str]]:
            with one_at_a_time:
                return run_tool(session, params.name, arguments, privacy=privacy, client=client)

        try:
            doc, said = await anyio.to_thread.run_sync(run)
        except Exception as exc:  # noqa: BLE001 - said to the client, the server keeps serving
            return _error_result(exc, ceiling)
        # the one place a result leaves for the client: everything in it through the gate (the
        # tool's text was built from gated fields; its own ids, dates and counts stay)
        notices = [ceiling.shown(n) for n in said]
        text = plain(doc["text"]) + "".join(f"\n(note: {n})" for n in notices)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={
                "ok": doc["ok"],
                "citations": limit_citations(doc["citations"], ceiling),
                "indexed_through": doc["indexed_through"],
                # what the text's notes say, and the searched words no message contains
                "notices": notices,
                "words_not_found": [ceiling.shown(w) for w in doc.get("words_not_found", [])],
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


def run_tool(
    session: Session,
    name: str,
    arguments: dict[str, JSONValue],
    *,
    privacy: Ceiling | None = None,
    client: str | None = None,
) -> tuple[ToolDoc, list[str]]:
    """(the `tool` document, the notices said while it ran) for one call."""
    from casper.app.requests import ToolRequest, parse_as

    notices: list[str] = []

    def on_event(event: Event) -> None:
        if event["event"] == "notice":
            notices.append(event["text"])

    request = {"name": name, "arguments": arguments, "privacy": privacy, "client": client}
    doc = session.answer(parse_as(ToolRequest, "tool", request), on_event=on_event)
    return doc, notices


def _client_name(ctx: Any) -> str | None:
    """The name the client gave in its `initialize` (for the service log), if it gave one."""
    try:
        name = ctx.connection.client_params.client_info.name
    except AttributeError:
        return None
    return str(name)[:200] if name else None


def _ceiling(session: Any, privacy: Ceiling | None) -> Gate:
    """What this server's client is shown: `privacy` (already the stricter of the setting and
    `--privacy`), numbers read in the region of the setting `locale`."""
    from casper.agent import redact

    cfg = getattr(session, "cfg", None)
    region = redact.region_of(getattr(cfg, "locale", "en_US"))
    return redact.Ceiling(privacy or "full", region)


def _error_result(exc: Exception, ceiling: Gate) -> types.CallToolResult:
    """A failure the client's model can read (an error result), not a broken connection; what
    it says passes the ceiling's gate like any result."""
    import mcp_types as types

    if isinstance(exc, CasperError):
        text = f"error: {exc.message}" + (f" (hint: {exc.hint})" if exc.hint else "")
    else:
        text = f"error: unexpected {type(exc).__name__} in casper"
    shown = types.TextContent(type="text", text=ceiling.shown(text))
    return types.CallToolResult(content=[shown], is_error=True)
