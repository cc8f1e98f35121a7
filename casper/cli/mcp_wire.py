"""`casper mcp`'s stdio wire: every line a client writes gets an answer, never a silent drop.

The SDK's stdio transport decodes stdin with `errors="replace"` (a byte that is not UTF-8 is
searched for as `�`) and drops a line it cannot read as a JSON-RPC message without a word: the
client waits for its own timeout. So each line is screened here first (`screen`): a line over
1 MiB is refused unread (`-32600`); bytes that are not UTF-8 and text that is not JSON get a
`-32700` parse error; JSON that is not one JSON-RPC message (a batch array, a number, a
request without a method) `-32600`; a lone surrogate
(`"\\ud800"`) anywhere in a request `-32602`. The reply goes to the request's id when one can be
read, else to id null (JSON-RPC's rule for a message whose id is unknown). Only lines that pass
reach the SDK, through the `stdin` stream `stdio_server` accepts; stdin's descriptor is claimed
here as the SDK claims it (fd 0 then reads /dev/null, so no child process can take the
protocol's bytes), and the SDK claims stdout as always.

Imports: stdlib; anyio, mcp and mcp_types inside functions (casper mcp loads them anyway).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TypeAlias

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream
    from mcp.server.lowlevel import Server
    from mcp.shared.message import SessionMessage

    from casper.protocols import JSONValue

from casper.vocab import MAX_ARGUMENT_CHARS

PARSE_ERROR = -32700  # JSON-RPC 2.0's codes (mcp_types has the same numbers)
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
# every string a request's params carry (a tool's query, a person, a date; the client's name):
# past this it is refused at once, before anything searches (the tools' schemas say it as
# `maxLength`: casper.agent.tool_args)
MAX_STRING_CHARS = MAX_ARGUMENT_CHARS
# a whole line: refused unread past this, before JSON parses it (60 MB of short strings in one
# request held every call for 13 s). A call at every cap, each character written as a \u
# escape pair, is ~130 KB
MAX_LINE_BYTES = 1 << 20

Reply: TypeAlias = "dict[str, JSONValue]"  # a JSON-RPC error response


def screen(raw: bytes, validate: Callable[[str], object] | None = None) -> str | Reply | None:
    """One line from the client → the text to hand the SDK, an error reply to write back, or
    None for a blank line. `validate` is the SDK's own message check (raises on a bad one)."""
    line = raw.rstrip(b"\r\n")
    if len(line) > MAX_LINE_BYTES:
        return error(_id_at_an_end(line), INVALID_REQUEST, f"Invalid Request: the line is "
                     f"{len(line):,} bytes; at most {MAX_LINE_BYTES:,}")  # fmt: skip
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        ident = _id_of(_loads(line.decode("utf-8", "replace")))
        byte = f"0x{line[exc.start]:02x} at byte {exc.start + 1}"
        return error(ident, PARSE_ERROR, f"Parse error: the line is not UTF-8 text ({byte})")
    message = _loads(text)
    if message is _NOT_JSON:
        return error(None, PARSE_ERROR, "Parse error: the line is not JSON")
    if not isinstance(message, dict):
        return error(
            None,
            INVALID_REQUEST,
            "Invalid Request: one JSON-RPC message per line, a JSON object (MCP has no batches)",
        )
    if "id" in message and not _is_id(message["id"]):
        shown = json.dumps(message["id"], ensure_ascii=False)[:40]
        return error(
            None,
            INVALID_REQUEST,
            f"Invalid Request: id {shown} is not a string or "
            "a whole number (JSON-RPC 2.0); a request without one is a notification",
        )
    ident = _id_of(message)
    where = _surrogate(message, "")
    if where is not None:
        code = INVALID_PARAMS if where.startswith("params") else INVALID_REQUEST
        reason = "Invalid params" if code == INVALID_PARAMS else "Invalid Request"
        return error(
            ident, code, f"{reason}: {where} holds a lone surrogate: it is not Unicode text"
        )
    long = _too_long(message.get("params"), "params")
    if long is not None:
        path, length = long
        return error(
            ident,
            INVALID_PARAMS,
            f"Invalid params: {path} is {length:,} characters; at most {MAX_STRING_CHARS:,}",
        )
    if validate is not None:
        try:
            validate(text)
        except Exception as exc:  # noqa: BLE001 - the SDK's reason, said to the client
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            return error(
                ident, INVALID_REQUEST, f"Invalid Request: not a JSON-RPC message ({first})"
            )
    return text


# a request's id where clients write it, read without parsing the line: first (or after
# "jsonrpc", as the Python SDK orders it) or last (as the TypeScript SDK does); a nested "id"
# is never there (it would be followed by two closing braces, or preceded by another member)
_ID = rb'"id"\s*:\s*(-?\d{1,19}|"[^"\\]{0,200}")'
_HEAD_ID = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID + rb"\s*[,}]")
_TAIL_ID = re.compile(rb",\s*" + _ID + rb"\s*\}\s*\Z")


def _id_at_an_end(line: bytes) -> str | int | None:
    """The id of a line too long to parse (parsing one was the harm: a megabyte of nested
    lists is a gigabyte of objects), so the client is answered on its request, not left
    waiting; None when it is not written at either end."""
    found = _HEAD_ID.match(line[:512]) or _TAIL_ID.search(line[-512:])
    if found is None:
        return None
    try:
        ident = json.loads(found.group(1))
    except ValueError:  # not UTF-8 (UnicodeDecodeError is one)
        return None
    return ident if isinstance(ident, int | str) else None


def error(ident: str | int | None, code: int, message: str) -> Reply:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


_NOT_JSON = object()


def _loads(text: str) -> object:
    def refuse(constant: str) -> NoReturn:
        raise ValueError(f"{constant} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _id_of(message: object) -> str | int | None:
    ident = message.get("id") if isinstance(message, dict) else None
    if isinstance(ident, str) and _has_surrogate(ident):
        return None  # a reply cannot carry it: JSON-RPC's id null
    return ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None


def _is_id(value: object) -> bool:
    """JSON-RPC's id: a string or a whole number (a fraction, a bool, null, an object or an
    array is none: the SDK would take the request for a notification and never answer)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _too_long(value: object, path: str) -> tuple[str, int] | None:
    """(where, its length) of the first string in `value` longer than MAX_STRING_CHARS."""
    if isinstance(value, str):
        return (path, len(value)) if len(value) > MAX_STRING_CHARS else None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        here = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]"
        found = _too_long(key, here) if isinstance(key, str) else None
        found = found or _too_long(item, here)
        if found is not None:
            return found
    return None


def _surrogate(value: object, path: str) -> str | None:
    """Where in the message a string or a key holds a lone surrogate (`params.arguments.query`)."""
    if isinstance(value, str):
        return path or "the message" if _has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
            here = f"{path}.{shown}" if path else shown
            if _has_surrogate(str(key)):
                return here
            found = _surrogate(item, here)
            if found is not None:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _surrogate(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


async def serve_stdio(server: Server) -> None:
    """Run the MCP `server` over this process's stdin and stdout, every line screened."""
    import anyio
    import mcp_types as types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    wire, restore = _claim_stdin()
    passed, to_sdk = anyio.create_memory_object_stream[str](0)

    def validate(text: str) -> object:
        return types.jsonrpc_message_adapter.validate_json(text, by_name=False)

    async def pump(write: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        """Read the client's lines; pass the good ones on, answer the rest."""
        source = anyio.wrap_file(os.fdopen(wire, "rb", closefd=False))
        async with passed:
            async for raw in source:
                checked = screen(raw, validate)
                if isinstance(checked, str):
                    await passed.send(checked)
                elif checked is not None:
                    reply = types.JSONRPCError.model_validate(checked)
                    await write.send(SessionMessage(reply))

    try:
        async with (
            stdio_server(stdin=to_sdk) as (read, write),  # type: ignore[arg-type]
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(pump, write)
            await server.run(read, write, server.create_initialization_options())
            tasks.cancel_scope.cancel()
    finally:
        restore()


def _claim_stdin() -> tuple[int, Callable[[], None]]:
    """A private copy of fd 0 for the wire, and fd 0 pointed at /dev/null meanwhile; the
    function that points it back. The copy is never closed: a reading thread may outlive us."""
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)

    def restore() -> None:
        os.dup2(wire, 0)

    return wire, restore
