"""The disclosure ceiling on what a tool result shows a reader that is not the owner's own
terminal: an MCP client (whose model may run on someone else's computer) or a model server on
another machine (`allow_remote_llm`).

- `full`: the result as the tool wrote it (people's words quoted, control characters out).
- `redacted`: the same lines with phone numbers, emails, links, card and account numbers, IBANs,
  other long digit runs and street addresses masked (casper.agent.redact.mask) in what people
  wrote — each body, sender's and group's name masked before it is framed
  (`casper.agent.redact.Ceiling.field`), so the tool's own ids, dates, headers and counts stay
  as they are.
- `aggregate`: no message text at all. The tools that show messages (`search_messages`,
  `get_conversation_context`: those declared `shows_messages` in casper.agent.tools) answer
  with the messages' ids, times, senders and chats, counted, built from the store (never from
  the text the tool wrote, so no part of a body can slip through); the counting tools answer
  as they are. Masked as `redacted` too, so it never shows more than `redacted` does.

What else reaches such a reader passes the same gate (`Ceiling.shown`): a result's citations
(`limit_citations`), the notices said while it ran, errors, and the prompt hints a model on
another machine is given (casper.agent.answer).

Imports: casper.agent (redact, tools), casper.protocols, casper.records, casper.store,
casper.dates.zones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, TypeVar, cast

from casper.agent.redact import Ceiling
from casper.agent.tools import Toolbox, shows_messages
from casper.dates.zones import iso
from casper.protocols import ToolCall, ToolResult, ToolSpec
from casper.records import ME
from casper.vocab import Privacy

if TYPE_CHECKING:
    from casper.agent.loop import ToolRunner
    from casper.store.db import Store

C = TypeVar("C", bound=Mapping[str, Any])  # a citation (casper.agent.answer.Citation)
AGGREGATE_NOTE = (
    "(privacy: aggregate: message text is withheld; ids, times, senders and chats only; "
    "use get_conversation_context for more ids, the counting tools for numbers)"
)


AGGREGATE = Ceiling("aggregate")


def aggregate_text(
    store: Store, guids: Sequence[str], tz: tzinfo, ceiling: Ceiling = AGGREGATE
) -> str:
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
        who = "me" if m.sender == ME else ceiling.field(names.get(m.sender, m.sender))
        by_chat.setdefault(m.chat_id, []).append(f"[#{m.rowid}] {when} {who}")
    if not by_chat:
        return f"0 messages\n{AGGREGATE_NOTE}"
    blocks = []
    for chat_id, lines in by_chat.items():
        chat = store.chat(chat_id)
        head = ceiling.field(chat.name) if chat else "Unknown chat"
        blocks.append("\n".join([f"{head} ({len(lines)}):", *lines]))
    count = sum(len(lines) for lines in by_chat.values())
    return f"{count} messages in {len(by_chat)} chats\n{AGGREGATE_NOTE}\n\n" + "\n\n".join(blocks)


def limit_citations(citations: Sequence[C], ceiling: Ceiling) -> list[C]:
    """The citations an MCP result carries, under the same ceiling as its text: quoted as its
    lines are (`full`), masked too (`redacted`), without their text (`aggregate`)."""
    return [
        cast(C, {**c, "sender": ceiling.field(c["sender"]), "chat": ceiling.field(c["chat"]),
                 "text": "" if ceiling.mode == "aggregate" else ceiling.field(c["text"])})
        for c in citations
    ]  # fmt: skip


class CeilingToolbox:
    """The agent's tools with every result limited to the ceiling: for an MCP client and for a
    model on another machine. A Toolbox is rebuilt to mask what people wrote field by field; any
    other runner's text is masked whole."""

    def __init__(
        self, tools: ToolRunner, ceiling: Ceiling | Privacy, store: Store, tz: tzinfo
    ) -> None:
        self.ceiling = ceiling if isinstance(ceiling, Ceiling) else Ceiling(ceiling)
        self.tools: ToolRunner = (
            tools.limited(self.ceiling) if isinstance(tools, Toolbox) else tools
        )
        self.whole = not isinstance(tools, Toolbox)
        self.store, self.tz = store, tz
        self.specs: tuple[ToolSpec, ...] = tools.specs

    def call(self, call: ToolCall) -> ToolResult:
        result = self.tools.call(call)
        withheld = self.ceiling.mode == "aggregate" and result.ok and shows_messages(call.name)
        if withheld:
            text = aggregate_text(self.store, result.message_guids, self.tz, self.ceiling)
            return replace(result, text=text)
        return replace(result, text=self.ceiling.shown(result.text)) if self.whole else result
