"""The agent's five tools called from outside the agent (`casper mcp`, through the service or
in process): the same Toolbox the agent uses, so the same arguments, validation and caps, and
the messages a result shows come back as citations (rowid and guid: `casper show` and
`get_conversation_context` take either).

Imports: casper.app.runtime, casper.agent (tools, core, answer), casper.dates.zones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from casper.app.requests import ToolRequest
from casper.app.runtime import Runtime, me_names

if TYPE_CHECKING:
    from casper.protocols import Hit

Emit = Callable[[dict[str, Any]], None]
log = logging.getLogger("casper.service")  # the service log, when the service runs the call


def call_tool(rt: Runtime, req: ToolRequest, emit: Emit) -> dict[str, Any]:
    """Run one tool call; a tool's own failure (a bad argument, an unknown name, a person not
    found) is `ok: false` with the tool's message, exactly as the model would read it."""
    from casper.agent.answer import citations_for
    from casper.agent.ceiling import limit_citations, limit_result
    from casper.agent.core import cap_result
    from casper.agent.redact import stricter
    from casper.agent.tools import Toolbox
    from casper.dates.zones import iso, local_tz
    from casper.protocols import ToolCall

    tz = local_tz(rt.cfg.timezone)
    store = rt.store()
    through = store.indexed_through()

    def search(query: str, **options: Any) -> list[Hit]:
        # the agent's search: hybrid, this runtime's reranker, notices once per process
        result = rt.retriever().search(query, reranker=rt.reranker(_say(emit)), **options)
        for notice in result.notices:
            if rt.first_time(notice.key):
                emit({"event": "notice", "text": notice.text})
        return result.hits

    toolbox = Toolbox(store, search, tz, me_names=me_names(rt.cfg, store))
    mode = stricter(rt.cfg.privacy, req.privacy)  # a request never loosens config.toml's
    result = cap_result(limit_result(toolbox.call(ToolCall(req.name, req.arguments)), mode,
                                     store, tz))  # fmt: skip
    citations = limit_citations(citations_for(store, result.message_guids, tz), mode)
    # counts only, never text: which client was shown how many messages, under which ceiling
    log.info("mcp client %r: %s shown %d messages (privacy %s)", req.client or "unnamed",
             req.name, len(citations), mode)  # fmt: skip
    return {
        "tool": req.name,
        "arguments": dict(req.arguments),
        "ok": result.ok,
        "text": result.text,
        "citations": citations,
        "indexed_through": iso(through, tz),
    }


def _say(emit: Emit) -> Callable[[str], None]:
    return lambda text: emit({"event": "notice", "text": text})
