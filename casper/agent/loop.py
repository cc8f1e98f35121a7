"""The agent's imperative shell: drives `agent.core` with a real Engine and ToolRunner.

Imports: casper.agent.core, casper.agent.prompts, casper.protocols. The only agent part with
effects (the prefetch, the engine call, tool calls, the clock for timings and the prompt).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from casper.agent import core, prompts
from casper.agent.answer_json import UsageJson
from casper.dates.zones import local_tz
from casper.events import Emit, StepEvent, TokenEvent, ToolEvent, ignore
from casper.protocols import ChatMessage, Engine, Reply, ToolCall, ToolResult, ToolSpec

log = logging.getLogger(__name__)


class ToolRunner(Protocol):
    """What the loop needs of the tools the agent may call (`casper.agent.tools.Toolbox` is
    the real one): their specs, and `call`, which never raises (failures come back as
    ok=False)."""

    specs: tuple[ToolSpec, ...]

    def call(self, call: ToolCall) -> ToolResult:
        """Run one tool call."""
        ...


@dataclass(frozen=True, slots=True)
class Usage:
    """Per-answer cost, from the engine's own counters plus the shell's clock."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_per_s: float = 0.0  # completion tokens / the engine's generation seconds
    first_token_s: float = 0.0  # the engine's prompt time for the first model call
    model_s: float = 0.0  # wall time inside engine.chat
    tools_s: float = 0.0  # wall time inside tools, prefetch included
    iterations: int = 0
    model_calls: int = 0  # requests sent to the engine: loop calls, the synthesis, retries

    def to_dict(self) -> UsageJson:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens_per_s": round(self.tokens_per_s, 2),
            "first_token_s": round(self.first_token_s, 3),
            "model_s": round(self.model_s, 3),
            "tools_s": round(self.tools_s, 3),
            "iterations": self.iterations,
            "model_calls": self.model_calls,
        }


class Meter:
    """What one answer spends, added up as it runs: the engine's token counters and timings,
    and the wall time inside the model and inside the tools (`usage` reads it out)."""

    def __init__(self) -> None:
        self.prompt_tokens = self.completion_tokens = 0
        self.model_s = self.tools_s = self.generation_s = 0.0
        self.first_token_s: float | None = None  # the first model call's prompt time
        self.model_calls = 0

    def reply(self, reply: Reply, wall_s: float) -> None:
        """One model call: its reply (the engine's counters) and the wall time it took."""
        self.model_s += wall_s
        self.model_calls += reply.requests
        self.generation_s += reply.generation_s
        if self.first_token_s is None:
            self.first_token_s = reply.prompt_s
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens

    def tool(self, wall_s: float) -> None:
        self.tools_s += wall_s

    def usage(self, iterations: int) -> Usage:
        gen = self.generation_s
        return Usage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            tokens_per_s=self.completion_tokens / gen if gen > 0 else 0.0,
            first_token_s=self.first_token_s or 0.0,
            model_s=self.model_s,
            tools_s=self.tools_s,
            iterations=iterations,
            model_calls=self.model_calls,
        )


@dataclass(frozen=True, slots=True)
class AgentResult:
    """What `casper ask` reports: the answer, its cited guids and a trace of the run."""

    answer: str
    citations: tuple[str, ...]
    iterations: int
    tool_calls: tuple[tuple[str, Mapping[str, object], bool], ...]  # (name, arguments, ok)
    guards: tuple[str, ...]
    reason: core.Reason
    messages: tuple[ChatMessage, ...] = ()  # the final transcript, for `casper chat` and eval
    grounding: core.Grounding = "cited"
    invalid_citations: int = 0
    usage: Usage = Usage()
    prefetched: tuple[tuple[str, Mapping[str, object], bool], ...] = ()  # the search run first


@dataclass(frozen=True, slots=True)
class Grounding:
    """What the grounding guard needs to know about the question (see `agent.core`)."""

    exempt: bool = False  # the question needs no messages
    figures: tuple[str, ...] = ()  # hints that are stats evidence
    coverage: str = ""  # what the index spans, for honest abstentions


def run_agent(
    question: str,
    engine: Engine,
    toolbox: ToolRunner,
    limits: core.Limits,
    on_event: Emit = ignore,
    hints: Sequence[str] = (),
    system: str | None = None,
    *,
    prefetch: ToolCall | None = None,
    grounding: Grounding = Grounding(),
) -> AgentResult:
    """Answer one question with a bounded tool loop.

    Args:
        question: the user's question.
        engine: the chat model; it receives `on_token` for streaming.
        toolbox: tools the model may call; `toolbox.call` must not raise.
        limits: iteration, calls-per-step and result-size budgets.
        on_event: receives the progress events (casper.events): `step` before each model
            call, `tool` and `tool_done` around each tool call, `token` as text streams in.
        hints: notes appended under the question (e.g. resolved date ranges).
        system: the system prompt; defaults to `prompts.system_prompt` for today, local time.
        prefetch: a tool call run before the first model call; its result is shown with the
            question (capped at `limits.prefetch_chars`) and its messages may be cited.
        grounding: exemption, stats notes and coverage for the grounding guard.

    Returns:
        The answer with citations, iteration count, tool trace, guards and usage.
    """
    trace: list[tuple[str, Mapping[str, object], bool]] = []
    meter = Meter()
    evidence = None
    prefetched: tuple[tuple[str, Mapping[str, object], bool], ...] = ()
    if prefetch is not None:
        evidence = _run_tool(toolbox, prefetch, on_event, meter, prefetch=True)
        prefetched = ((prefetch.name, prefetch.arguments, evidence.ok),)
    state, action = core.start(
        question,
        system or _default_system(),
        hints,
        evidence=evidence,
        evidence_chars=limits.prefetch_chars,
        exempt=grounding.exempt,
        figures=grounding.figures,
        coverage=grounding.coverage,
    )
    if evidence is not None:
        state = replace(state, seen=state.seen | {core.call_key(evidence.call)})

    def ask(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Reply:
        started = time.perf_counter()
        reply = engine.chat(messages, tools, on_token=lambda text: on_event(_token(text)))
        meter.reply(reply, time.perf_counter() - started)
        return reply

    # Backstop only: every core path finishes within max_iterations loop calls + 1 synthesis.
    for _ in range(3 * limits.max_iterations + 3):
        match action:
            case core.AskModel(tools_enabled=True):
                on_event(_step(state.iterations + 1))
                # small talk gets no tool descriptions: a much shorter prompt, same answer
                specs = () if grounding.exempt else toolbox.specs
                state, action = core.after_reply(state, ask(state.messages, specs), limits)
            case core.AskModel(tools_enabled=False):
                on_event(_step(state.iterations + 1, final=True))
                state, action = core.after_synthesis(state, ask(state.messages, ()))
            case core.RunTools(calls=calls):
                results = [_run_tool(toolbox, call, on_event, meter) for call in calls]
                trace += [(r.call.name, r.call.arguments, r.ok) for r in results]
                state, action = core.after_tools(state, results, limits)
            case core.Done():
                log.debug("agent done: %s after %d iterations", action.reason, state.iterations)
                return AgentResult(
                    answer=action.answer,
                    citations=action.cited_guids,
                    iterations=state.iterations,
                    tool_calls=tuple(trace),
                    guards=action.guards,
                    reason=action.reason,
                    messages=state.messages,
                    grounding=action.grounding,
                    invalid_citations=action.invalid_citations,
                    usage=meter.usage(state.iterations),
                    prefetched=prefetched,
                )
    raise AssertionError("agent core did not terminate")


def _token(text: str) -> TokenEvent:
    return {"event": "token", "text": text}


def _step(iteration: int, *, final: bool = False) -> StepEvent:
    """A model call starts; `final`: the synthesis pass."""
    if final:
        return {"event": "step", "iteration": iteration, "final": True}
    return {"event": "step", "iteration": iteration}


def _run_tool(
    toolbox: ToolRunner,
    call: ToolCall,
    on_event: Emit,
    meter: Meter,
    prefetch: bool = False,
) -> ToolResult:
    start: ToolEvent = {"event": "tool", "name": call.name, "arguments": dict(call.arguments)}
    if prefetch:
        start["prefetch"] = True
    on_event(start)
    started = time.perf_counter()
    result = toolbox.call(call)
    elapsed = time.perf_counter() - started
    meter.tool(elapsed)
    on_event(
        {
            "event": "tool_done",
            "name": call.name,
            "ok": result.ok,
            "elapsed_s": round(elapsed, 3),
            "messages": len(result.message_guids),
        }
    )
    return result


def _default_system() -> str:
    tz = local_tz()
    return prompts.system_prompt(datetime.now(tz).date(), tz.key)
