"""Test fakes for the model Protocols: structural matches, no inheritance, deterministic."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from casper.backends.toolcalls import reply_from_text
from casper.protocols import ChatMessage, Reply, ToolSpec

# ---------------------------------------------------------------------------------------------
# ScriptedEngine (Engine)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineCall:
    """What one `ScriptedEngine.chat` call was given."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...]


class ScriptedEngine:
    """Pops scripted replies in order; a `str` is parsed like raw Qwen output. Empty when done."""

    name = "scripted"

    def __init__(self, *replies: Reply | str) -> None:
        self.script: list[Reply | str] = list(replies)
        self.calls: list[EngineCall] = []

    def enqueue(self, *replies: Reply | str) -> None:
        """Append more scripted replies."""
        self.script.extend(replies)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        """Record the call and return the next scripted reply (streamed whole to `on_token`)."""
        self.calls.append(EngineCall(tuple(messages), tuple(tools)))
        item = self.script.pop(0) if self.script else Reply(text="")
        reply = reply_from_text(item, tools) if isinstance(item, str) else item
        if on_token is not None and reply.text:
            on_token(reply.text)
        return reply


class SameAnswer:
    """A model that gives the same answer to every call (no tool calls)."""

    name = "scripted"

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        return Reply(self.answer)
