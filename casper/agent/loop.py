"""The agent's imperative shell: drives `agent.core` with a real Engine and Toolbox.

Imports: casper.agent.core, casper.agent.prompts, casper.protocols. The only agent part with
effects (the engine call, tool calls, the clock for the default prompt).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from casper.agent import core, prompts
from casper.protocols import ChatMessage, Engine, Reply, ToolCall, ToolResult, ToolSpec

log = logging.getLogger(__name__)


class Toolbox(Protocol):
    """The tools the agent may call; `call` never raises (failures come back as ok=False)."""

    specs: tuple[ToolSpec, ...]

    def call(self, call: ToolCall) -> ToolResult:
        """Run one tool call."""
        ...


@dataclass(frozen=True, slots=True)
class Thinking:
    """A loop model call is starting (1-based)."""

    iteration: int


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolFinished:
    result: ToolResult


@dataclass(frozen=True, slots=True)
class Answering:
    """The final answer is being written (synthesis pass) or is ready; sent once."""


@dataclass(frozen=True, slots=True)
class Token:
    """Streamed model text; it may belong to a reply that turns out to be a tool call."""

    text: str


Event = Thinking | ToolStarted | ToolFinished | Answering | Token


@dataclass(frozen=True, slots=True)
class AgentResult:
    """What `casper ask` reports: the answer, its cited guids and a trace of the run."""

    answer: str
    citations: tuple[str, ...]
    iterations: int
    tool_calls: tuple[tuple[str, Mapping[str, Any], bool], ...]  # (name, arguments, ok)
    guards: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    reason: core.Reason
    messages: tuple[ChatMessage, ...] = ()  # the final transcript, for `casper chat` and eval


def _ignore(event: Event) -> None:
    return None


def run_agent(
    question: str,
    engine: Engine,
    toolbox: Toolbox,
    limits: core.Limits,
    on_event: Callable[[Event], None] = _ignore,
    hints: Sequence[str] = (),
    system: str | None = None,
) -> AgentResult:
    """Answer one question with a bounded tool loop.

    Args:
        question: the user's question.
        engine: the chat model; it receives `on_token` for streaming.
        toolbox: tools the model may call; `toolbox.call` must not raise.
        limits: iteration, calls-per-step and result-size budgets.
        on_event: receives Thinking/ToolStarted/ToolFinished/Answering/Token events.
        hints: notes appended under the question (e.g. resolved date ranges).
        system: the system prompt; defaults to `prompts.system_prompt` for today, local time.

    Returns:
        The answer with citations, iteration count, tool trace, guards and token totals.
    """
    state, action = core.start(question, system or _default_system(), hints)
    trace: list[tuple[str, Mapping[str, Any], bool]] = []
    tokens = [0, 0]
    answering = False

    def ask(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Reply:
        reply = engine.chat(messages, tools, on_token=lambda text: on_event(Token(text)))
        tokens[0] += reply.prompt_tokens
        tokens[1] += reply.completion_tokens
        return reply

    # Backstop only: every core path finishes within max_iterations loop calls + 1 synthesis.
    for _ in range(3 * limits.max_iterations + 3):
        match action:
            case core.AskModel(tools_enabled=True):
                on_event(Thinking(state.iterations + 1))
                state, action = core.after_reply(state, ask(state.messages, toolbox.specs), limits)
            case core.AskModel(tools_enabled=False):
                on_event(Answering())
                answering = True
                state, action = core.after_synthesis(state, ask(state.messages, ()))
            case core.RunTools(calls=calls):
                results = [_run_tool(toolbox, call, on_event) for call in calls]
                trace += [(r.call.name, r.call.arguments, r.ok) for r in results]
                state, action = core.after_tools(state, results, limits)
            case core.Done():
                if not answering:
                    on_event(Answering())
                log.debug("agent done: %s after %d iterations", action.reason, state.iterations)
                return AgentResult(
                    answer=action.answer,
                    citations=action.cited_guids,
                    iterations=state.iterations,
                    tool_calls=tuple(trace),
                    guards=action.guards,
                    prompt_tokens=tokens[0],
                    completion_tokens=tokens[1],
                    reason=action.reason,
                    messages=state.messages,
                )
    raise AssertionError("agent core did not terminate")


def _run_tool(toolbox: Toolbox, call: ToolCall, on_event: Callable[[Event], None]) -> ToolResult:
    on_event(ToolStarted(call))
    result = toolbox.call(call)
    on_event(ToolFinished(result))
    return result


def _default_system() -> str:
    from casper.timeutil import local_tz

    tz = local_tz()
    return prompts.system_prompt(datetime.now(tz).date(), tz.key)
