"""PURE: the agent's state machine: State, Limits, actions, transitions and their guards.

Imports: stdlib, casper.protocols, casper.agent.prompts. No I/O, clock or randomness.

Citation contract with the Toolbox: a result's `text` marks every message it shows with
`[#rowid]` (`prompts.cite_tag`), and its distinct markers appear in the same order as
`ToolResult.message_guids`; the core pairs them to map rowids the answer cites back to guids.
A result whose marker count differs from its guid count maps no rowids (guid mentions still count).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from casper.agent import prompts
from casper.protocols import ChatMessage, Reply, ToolCall, ToolResult

_T = TypeVar("_T")
Reason = Literal["answered", "synthesized", "fallback"]
GUARDS = (
    "repeat_call",
    "empty_reply",
    "narrated_intent",
    "repetitive_answer",
    "max_iterations",
    "empty_synthesis",
    "malformed_call",
    "model_unavailable",
)
REPEAT_OVERLAP = 0.8  # word-shingle Jaccard at which a reply counts as a repeat of an earlier one
FALLBACK_CITATIONS = 5

_CITE_TAG = re.compile(r"\[#(\d+)\]")
_CITED_ROWID = re.compile(r"#(\d+)\b")
_NARRATED = re.compile(
    r"\b(?:let me|let's|i'll|i will|i'm going to|i am going to|i'm gonna|i need to|i should)"
    r"\s+(?:\w+\s+){0,2}?"
    r"(?:search|look|check|find|query|call|use|pull|retrieve|fetch|get|see|dig|scan|"
    r"go through|review|try|browse)\b"
    r"|^(?:searching|looking|checking)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")
_NOTHING_FOUND = re.compile(
    r"\b(?:could ?n[o']?t|can ?not|can't|did ?n[o']?t|was ?n[o']?t able to|unable to) find"
    r"|\bno (?:relevant |matching )?(?:messages?|results?|mentions?)\b"
    r"|\bnothing (?:relevant|about|found|matching|mentioning)\b",
    re.IGNORECASE,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Limits:
    """Budgets: model calls in the loop, tool calls per step, characters per tool result."""

    max_iterations: int = 5
    max_calls_per_step: int = 3
    max_result_chars: int = 2000

    def __post_init__(self) -> None:
        if min(self.max_iterations, self.max_calls_per_step, self.max_result_chars) < 1:
            raise ValueError("agent limits must be positive")


@dataclass(frozen=True, slots=True)
class State:
    """Everything the agent knows between steps."""

    messages: tuple[ChatMessage, ...]
    iterations: int = 0  # model calls in the loop so far; the synthesis pass is not counted
    seen: frozenset[str] = frozenset()  # call_key of every tool call already run
    guards: tuple[str, ...] = ()  # guards that fired, first occurrence order
    nudged: frozenset[str] = frozenset()  # guards whose one nudge was already spent
    gathered: tuple[ToolResult, ...] = ()
    replies: tuple[str, ...] = ()  # visible text of earlier non-empty replies
    rowids: tuple[tuple[int, str], ...] = ()  # (rowid, guid) pairs seen in tool results


@dataclass(frozen=True, slots=True)
class AskModel:
    """Call the model; tools_enabled=False is the synthesis pass (feed it to after_synthesis)."""

    tools_enabled: bool = True


@dataclass(frozen=True, slots=True)
class RunTools:
    """Run these calls, in order, and feed the results to after_tools."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class Done:
    """The final answer, why the loop ended, and the guids it cites."""

    answer: str
    reason: Reason
    guards: tuple[str, ...] = ()
    cited_guids: tuple[str, ...] = ()


Action = AskModel | RunTools | Done


def call_key(call: ToolCall) -> str:
    """Canonical JSON of name + sorted arguments: identical calls have identical keys."""
    payload = {"name": call.name, "arguments": call.arguments}
    return json.dumps(
        payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )


def start(question: str, system: str, hints: Sequence[str] = ()) -> tuple[State, Action]:
    """The opening state: system prompt plus the question (with hints), and a first model call."""
    messages = (
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content=prompts.user_message(question, hints)),
    )
    return State(messages=messages), AskModel()


def after_reply(state: State, reply: Reply, limits: Limits) -> tuple[State, Action]:
    """Apply the guards to one loop reply and decide the next action."""
    state = replace(state, iterations=state.iterations + 1)
    text = reply.text.strip()
    if reply.malformed:
        state = _guard(state, "malformed_call")
    if reply.tool_calls:
        fresh = tuple(c for c in _unique(reply.tool_calls) if call_key(c) not in state.seen)
        fresh = fresh[: limits.max_calls_per_step]
        if not fresh:
            return _synthesize(_guard(_record(state, text), "repeat_call"))
        state = _record(state, text, fresh)
        state = replace(state, seen=state.seen | {call_key(c) for c in fresh})
        return state, RunTools(fresh)
    if reply.malformed:
        return _nudge(
            _record(state, text), "malformed_call", prompts.nudge_malformed(reply.malformed), limits
        )
    if not text:
        return _nudge_once(_guard(state, "empty_reply"), "empty_reply", prompts.NUDGE_EMPTY, limits)
    if is_narrated(text):
        state = _guard(_record(state, text), "narrated_intent")
        return _nudge_once(state, "narrated_intent", prompts.NUDGE_NARRATED, limits)
    if is_repetitive(text) or any(overlap(text, old) >= REPEAT_OVERLAP for old in state.replies):
        return _synthesize(_guard(_record(state, text), "repetitive_answer"))
    state = _record(state, text)
    return state, Done(text, "answered", state.guards, cited_guids(text, state))


def after_tools(
    state: State, results: Sequence[ToolResult], limits: Limits
) -> tuple[State, Action]:
    """Append the (truncated) tool results, then ask the model again or synthesise at the cap."""
    tool_messages = tuple(
        ChatMessage(
            role="tool",
            content=prompts.format_tool_result(r.text, limits.max_result_chars),
            name=r.call.name,
        )
        for r in results
    )
    state = replace(
        state,
        messages=state.messages + tool_messages,
        gathered=state.gathered + tuple(results),
        rowids=state.rowids + _rowid_pairs(results),
    )
    if state.iterations >= limits.max_iterations:
        return _synthesize(_guard(state, "max_iterations"))
    return state, AskModel()


def after_synthesis(state: State, reply: Reply) -> tuple[State, Done]:
    """Finish with the synthesis reply, or a deterministic summary when it is empty."""
    text = reply.text.strip()
    if text:
        collapsed = collapse_repeats(text)
        if collapsed != text:
            state = _guard(state, "repetitive_answer")
        state = _record(state, collapsed)
        return state, Done(collapsed, "synthesized", state.guards, cited_guids(collapsed, state))
    state = _guard(state, "empty_synthesis")
    summary = fallback_summary(state.gathered)
    return state, Done(summary, "fallback", state.guards, cited_guids(summary, state))


def cited_guids(answer: str, state: State) -> tuple[str, ...]:
    """Guids the answer cites (`#rowid` or a guid), else the top gathered results."""
    known = dict(state.rowids)
    shown = _ordered_unique(g for r in state.gathered for g in r.message_guids)
    found: list[tuple[int, str]] = [
        (m.start(), known[int(m.group(1))])
        for m in _CITED_ROWID.finditer(answer)
        if int(m.group(1)) in known
    ]
    found += [(answer.find(g), g) for g in shown if g and g in answer]
    if found:
        return _ordered_unique(g for _, g in sorted(found))
    if not shown or _NOTHING_FOUND.search(answer):
        return ()
    top = (g for r in state.gathered if r.ok for g in r.message_guids[:3])
    return _ordered_unique(top)[:FALLBACK_CITATIONS]


def fallback_summary(gathered: Sequence[ToolResult]) -> str:
    """A deterministic answer from the tool results: their cited lines, else their first lines."""
    lines: list[str] = []
    for result in gathered:
        if not result.ok:
            continue
        body = [ln.strip() for ln in result.text.splitlines() if ln.strip()]
        cited = [ln for ln in body if _CITE_TAG.search(ln)]
        lines += (cited or body[:2])[:3]
    picked = _ordered_unique(_clip(ln, 200) for ln in lines)[:8]
    if not picked:
        return prompts.FALLBACK_NOTHING
    return "\n".join([prompts.FALLBACK_INTRO, *(f"- {ln}" for ln in picked)])


def is_narrated(text: str) -> bool:
    """True when a short reply announces a lookup ("let me search…") instead of answering."""
    if len(text) > 600 or _CITE_TAG.search(text):
        return False
    plain = _QUOTED.sub("", text.replace("\u2019", "'"))
    return bool(_NARRATED.search(plain.strip()))


def is_repetitive(text: str) -> bool:
    """True when a reply loops: a sentence three times, or mostly repeated word 4-grams."""
    sentences = [_norm(s) for s in _SENTENCE_SPLIT.split(text) if len(s.split()) >= 3]
    if sentences and Counter(sentences).most_common(1)[0][1] >= 3:
        return True
    words = _WORD.findall(text.lower())
    if len(words) < 24:
        return False
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    return len(set(grams)) / len(grams) < 0.3


def overlap(a: str, b: str) -> float:
    """Jaccard similarity of the word 3-shingles of two texts (whole text when shorter)."""
    sa, sb = _shingles(a), _shingles(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def collapse_repeats(text: str) -> str:
    """Drop sentences that repeat an earlier one word for word (degenerate loops)."""
    if not is_repetitive(text):
        return text
    kept: list[str] = []
    seen: set[str] = set()
    for sentence in _SENTENCE_SPLIT.split(text):
        key = _norm(sentence)
        if key and key not in seen:
            seen.add(key)
            kept.append(sentence.strip())
    return " ".join(kept)


def _record(state: State, text: str, calls: tuple[ToolCall, ...] = ()) -> State:
    if not text and not calls:
        return state
    message = ChatMessage(role="assistant", content=text, tool_calls=calls)
    replies = state.replies + (text,) if text else state.replies
    return replace(state, messages=state.messages + (message,), replies=replies)


def _guard(state: State, name: str) -> State:
    return state if name in state.guards else replace(state, guards=state.guards + (name,))


def _ask_again(state: State, nudge: str, limits: Limits) -> tuple[State, Action]:
    if state.iterations >= limits.max_iterations:
        return _synthesize(_guard(state, "max_iterations"))
    nudge_message = ChatMessage(role="user", content=nudge)
    return replace(state, messages=state.messages + (nudge_message,)), AskModel()


def _nudge(state: State, guard: str, nudge: str, limits: Limits) -> tuple[State, Action]:
    return _ask_again(replace(_guard(state, guard), nudged=state.nudged | {guard}), nudge, limits)


def _nudge_once(state: State, guard: str, nudge: str, limits: Limits) -> tuple[State, Action]:
    if guard in state.nudged:
        return _synthesize(state)
    return _nudge(state, guard, nudge, limits)


def _synthesize(state: State) -> tuple[State, Action]:
    message = ChatMessage(role="user", content=prompts.SYNTHESIS)
    return replace(state, messages=state.messages + (message,)), AskModel(tools_enabled=False)


def _unique(calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    by_key: dict[str, ToolCall] = {}
    for call in calls:
        by_key.setdefault(call_key(call), call)
    return tuple(by_key.values())


def _rowid_pairs(results: Sequence[ToolResult]) -> tuple[tuple[int, str], ...]:
    pairs: list[tuple[int, str]] = []
    for result in results:
        tags = _ordered_unique(int(m) for m in _CITE_TAG.findall(result.text))
        if len(tags) == len(result.message_guids):
            pairs += zip(tags, result.message_guids, strict=True)
    return tuple(pairs)


def _ordered_unique(items: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(items))


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < 3:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
