"""The disclosure ceiling on what a tool result shows a reader that is not the owner's own
terminal: an MCP client (whose model may run on someone else's computer) or a model server on
another machine (`allow_remote_llm`).

- `full`: the result as the tool wrote it.
- `redacted`: the same lines with phone numbers, emails, URLs, long digit runs and street
  addresses masked (`casper.agent.redact.mask`), ids, dates and names kept.
- `aggregate`: no message text at all. The tools that show messages (`search_messages`,
  `get_conversation_context`: those declared `shows_messages` in casper.agent.tools) answer
  with the messages' ids, times, senders and chats, counted, built from the store (never from
  the text the tool wrote, so no part of a body can slip through); the counting tools answer
  as they are. Masked as `redacted` too, so it never shows more than `redacted` does.

Imports: casper.agent (redact, tools), casper.protocols, casper.records, casper.store,
casper.dates.zones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, TypeVar, cast

from casper.agent.quoting import quote
from casper.agent.redact import mask
from casper.agent.tools import shows_messages
from casper.dates.zones import iso
from casper.protocols import ToolCall, ToolResult, ToolSpec
from casper.records import ME

if TYPE_CHECKING:
    from casper.agent.loop import ToolRunner
    from casper.store.db import Store

C = TypeVar("C", bound=Mapping[str, Any])  # a citation (casper.agent.answer.Citation)
AGGREGATE_NOTE = (
    "(privacy: aggregate: message text is withheld; ids, times, senders and chats only; "
    "use get_conversation_context for more ids, the counting tools for numbers)"
)


def limit_result(result: ToolResult, mode: str, store: Store, tz: tzinfo) -> ToolResult:
    """`result` as the ceiling `mode` lets it be shown (see the module's docstring)."""
    if mode == "full":
        return result
    text = result.text
    if mode == "aggregate" and result.ok and shows_messages(result.call.name):
        text = aggregate_text(store, result.message_guids, tz)
    return replace(result, text=mask(text))


def aggregate_text(store: Store, guids: Sequence[str], tz: tzinfo) -> str:
    """The messages `guids` names, without their text: one line each, grouped by chat in the
    order they came, and how many."""
    names = store.names()
    by_chat: dict[int, list[str]] = {}
    for guid in guids:
        m = store.message(guid)
        if m is None:
            continue
        when = (iso(m.ts, tz) or "")[:16].replace("T", " ")
        # names are people's writing too (a contact card, a group's name): quoted as bodies are
        who = "me" if m.sender == ME else quote(names.get(m.sender, m.sender))
        by_chat.setdefault(m.chat_id, []).append(f"[#{m.rowid}] {when} {who}")
    if not by_chat:
        return f"0 messages\n{AGGREGATE_NOTE}"
    blocks = []
    for chat_id, lines in by_chat.items():
        chat = store.chat(chat_id)
        blocks.append("\n".join([f"{quote(chat.name) if chat else 'Unknown chat'} ({len(lines)}):",
                                 *lines]))  # fmt: skip
    count = sum(len(lines) for lines in by_chat.values())
    return f"{count} messages in {len(by_chat)} chats\n{AGGREGATE_NOTE}\n\n" + "\n\n".join(blocks)


def limit_citations(citations: Sequence[C], mode: str) -> list[C]:
    """The citations an MCP result carries, under the same ceiling as its text: masked
    (`redacted`), without their text (`aggregate`)."""
    if mode == "full":
        return list(citations)
    return [
        cast(C, {**c, "sender": mask(c["sender"]), "chat": mask(c["chat"]),
                 "text": "" if mode == "aggregate" else mask(c["text"])})
        for c in citations
    ]  # fmt: skip


class CeilingToolbox:
    """The agent's tools with every result limited to `mode` (for a model on another machine)."""

    def __init__(self, tools: ToolRunner, mode: str, store: Store, tz: tzinfo) -> None:
        self.tools, self.mode, self.store, self.tz = tools, mode, store, tz
        self.specs: tuple[ToolSpec, ...] = tools.specs

    def call(self, call: ToolCall) -> ToolResult:
        return limit_result(self.tools.call(call), self.mode, self.store, self.tz)
