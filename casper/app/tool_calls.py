"""The agent's five tools called from outside the agent (`casper mcp`, through the service or
in process): the same Toolbox the agent uses, so the same arguments, validation and caps, and
the messages a result shows come back as citations (rowid and guid: `casper show` and
`get_conversation_context` take either). Unlike the agent's model, a client is held to each
tool's JSON Schema (casper.agent.schema_check): `"limit": "7"` or an unknown argument is an error.

Imports: casper.app (runtime, coverage), casper.agent (tools, core, answer, ceiling, redact,
schema_check), casper.search.words, casper.dates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from casper.agent import tools
from casper.agent.answer import citations_for
from casper.agent.ceiling import CeilingToolbox, limit_citations
from casper.agent.core import cap_result
from casper.agent.redact import Ceiling, region_of, stricter
from casper.agent.schema_check import problem
from casper.agent.tool_args import client_schema
from casper.agent.tools import Toolbox
from casper.app.coverage import coverage_days, outside
from casper.app.requests import ToolRequest
from casper.app.runtime import Runtime, me_names
from casper.dates.ranges import span_days
from casper.dates.zones import iso, local_tz
from casper.errors import CasperError
from casper.events import Emit, Event
from casper.protocols import ToolCall, ToolResult
from casper.search.words import absent_notice

if TYPE_CHECKING:
    from datetime import tzinfo

    from casper.agent.tool_args import Arguments
    from casper.app.documents import ToolDoc
    from casper.protocols import Hit

log = logging.getLogger("casper.service")  # the service log, when the service runs the call


def call_tool(rt: Runtime, req: ToolRequest, emit: Emit) -> ToolDoc:
    """Run one tool call; a tool's own failure (a bad argument, an unknown name, a person not
    found) is `ok: false` with the tool's message, exactly as the model would read it."""
    tz = local_tz(rt.cfg.timezone)
    # a request never loosens config.toml's ceiling; everything the client reads passes it
    ceiling = Ceiling(stricter(rt.cfg.privacy, req.privacy), region_of(rt.cfg.locale))
    emit = _gated(emit, ceiling)
    store = rt.store()
    through = store.indexed_through()

    absent: dict[str, None] = {}  # the searched words no message contains, as `search --json`

    def search(query: str, **options: Any) -> list[Hit]:
        # the agent's search: hybrid, this runtime's reranker, notices once per process
        # the words no message holds within the call's filters, as its hits: a client is told
        # nothing of the history beyond what it is shown (Retriever.search, `words_within`)
        result = rt.retriever().search(query, reranker=rt.reranker(_say(emit)),
                                       words_within=True, **options)  # fmt: skip
        for notice in result.notices:
            if rt.first_time(notice.key):
                emit({"event": "notice", "text": notice.text})
        if result.words_not_found:  # every call: the hits must not pass for matches of them
            emit({"event": "notice", "text": absent_notice(result.words_not_found, result.words)})
            absent.update(dict.fromkeys(result.words_not_found))
        return result.hits

    toolbox = CeilingToolbox(Toolbox(store, search, tz, me_names=me_names(rt.cfg, store)),
                             ceiling, store, tz)  # fmt: skip
    call = ToolCall(req.name, req.arguments)
    wrong = _schema_problem(req)  # a client was given the schema: held to it, unlike a model
    result = (ToolResult(call, False, ceiling.shown(wrong)) if wrong
              else cap_result(toolbox.call(call)))  # fmt: skip
    citations = limit_citations(citations_for(store, result.message_guids, tz), ceiling)
    mode = ceiling.mode
    # counts only, never text: which client was shown how many messages, under which ceiling
    log.info("mcp client %r: %s shown %d messages (privacy %s)", req.client or "unnamed",
             req.name, len(citations), mode)  # fmt: skip
    if result.ok:  # "last March" on a history that ended earlier: said, as `search` says it
        said = _outside(req.arguments, coverage_days(*store.coverage(), tz), tz)
        if said:
            emit({"event": "notice", "text": said})
    return {
        "tool": req.name,
        "arguments": dict(req.arguments),
        "ok": result.ok,
        "text": result.text,
        "citations": citations,
        "words_not_found": list(absent),
        "indexed_through": iso(through, tz),
    }


def _schema_problem(req: ToolRequest) -> str | None:
    """`error: bad arguments for NAME: …` when the arguments break the tool's JSON Schema (a
    wrong type, an unknown argument, a missing one); an unknown tool is the Toolbox's to say."""
    declared = tools.TOOLS.get(req.name)  # read at the call: tests swap it
    schema = client_schema(declared.spec.parameters) if declared is not None else None
    wrong = problem(schema, req.arguments) if schema is not None else None
    return f"error: bad arguments for {req.name}: {wrong}" if wrong else None


def _outside(arguments: Arguments, coverage: tuple[str, str] | None, tz: tzinfo) -> str | None:
    """The call's start_date/end_date against the history, in `search`'s words."""
    start, end = (arguments.get(k) for k in ("start_date", "end_date"))
    if not (isinstance(start, str | None) and isinstance(end, str | None)) or not (start or end):
        return None
    try:
        return outside(span_days(start, end, tz), coverage)
    except CasperError:  # a date it cannot read: the tool said so already
        return None


def _gated(emit: Emit, ceiling: Any) -> Emit:
    """`emit` with every notice's text through the ceiling's gate first."""

    def gated(event: Event) -> None:
        if event["event"] == "notice":
            event = {**event, "text": ceiling.shown(event["text"])}
        emit(event)

    return gated


def _say(emit: Emit) -> Callable[[str], None]:
    return lambda text: emit({"event": "notice", "text": text})
