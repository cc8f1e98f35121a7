"""PURE: the agent's state machine: State, Limits, actions, transitions and their guards.

Imports: stdlib, casper.protocols, casper.agent.{prompts,grounding,quoting}. No I/O, clock or
randomness.

Grounding: the opening state may carry evidence (the prefetch, a ToolResult shown in the first
user turn). A final answer must cite a message some result showed (`[#rowid]`), repeat a figure
from a stats result, or say nothing was found; otherwise `ungrounded_answer` nudges once and then
the deterministic cited summary answers. Invented `[#rowid]`s are removed and counted. An answer
made only of words Casper wrote into the prompt (`echo_sources`) counts as empty
(`echoed_prompt`). Questions that need no messages (`exempt`) skip the grounding guard.

Citation contract with the Toolbox: a result's `text` marks every message it shows with
`[#rowid]` (`prompts.cite_tag`) at the start of its line, and its distinct markers appear in the
same order as `ToolResult.message_guids`; the core pairs them to map rowids the answer cites back
to guids. Only a marker that starts a line counts: message text is quoted (`agent.quoting`) and
never starts one, so a message cannot make an id citable that no result retrieved.
A result whose marker count differs from its guid count maps no rowids (guid mentions still count).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from casper.agent import grounding, prompts, quoting
from casper.agent.replies import collapse_repeats, is_narrated, is_repetitive, overlap
from casper.protocols import ChatMessage, Reply, ToolCall, ToolResult

_T = TypeVar("_T")
Reason = Literal["answered", "synthesized", "fallback"]
Grounding = Literal["cited", "stats", "abstained", "exempt", "ungrounded"]
GUARDS = (
    "repeat_call",
    "empty_reply",
    "narrated_intent",
    "repetitive_answer",
    "max_iterations",
    "empty_synthesis",
    "malformed_call",
    "model_unavailable",
    "ungrounded_answer",
    "echoed_prompt",
    "misattributed_quote",  # set by agent.answer's citation check, after the core
    "wrong_figure",  # set by agent.answer: a figure in the model's words the stats do not give
)
REPEAT_OVERLAP = 0.8  # word-shingle Jaccard at which a reply counts as a repeat of an earlier one

_CITE_TAG = re.compile(r"\[#(\d+)\]")
_CITED_ROWID = re.compile(r"#(\d+)\b")


@dataclass(frozen=True, slots=True)
class Limits:
    """Budgets: model calls in the loop, tool calls per step, characters per tool result and
    for the prefetched evidence."""

    max_iterations: int = 5
    max_calls_per_step: int = 3
    max_result_chars: int = 2000
    prefetch_chars: int = 1200

    def __post_init__(self) -> None:
        budgets = (
            self.max_iterations,
            self.max_calls_per_step,
            self.max_result_chars,
            self.prefetch_chars,
        )
        if min(budgets) < 1:
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
    exempt: bool = False  # the question needs no messages (greeting, "what can you do")
    echo_sources: tuple[str, ...] = ()  # text Casper wrote into the prompt (coverage, dates)
    figures: tuple[str, ...] = ()  # stats evidence outside tool results (contact ranking note)
    coverage: str = ""  # "your messages here run from … to …", said when abstaining
    invalid_citations: int = 0  # `[#rowid]`s no result showed, removed from answers


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
    """The final answer, why the loop ended, the guids it cites and what it rests on."""

    answer: str
    reason: Reason
    guards: tuple[str, ...] = ()
    cited_guids: tuple[str, ...] = ()
    grounding: Grounding = "cited"
    invalid_citations: int = 0


Action = AskModel | RunTools | Done


def call_key(call: ToolCall) -> str:
    """Canonical JSON of name + sorted arguments: identical calls have identical keys."""
    payload = {"name": call.name, "arguments": call.arguments}
    return json.dumps(
        payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )


def start(
    question: str,
    system: str,
    hints: Sequence[str] = (),
    *,
    evidence: ToolResult | None = None,
    evidence_chars: int = 1200,
    exempt: bool = False,
    figures: Sequence[str] = (),
    coverage: str = "",
) -> tuple[State, Action]:
    """The opening state: system prompt, the question with the prefetched evidence and hints.

    Args:
        evidence: the prefetch (a search result marked with `[#rowid]`), capped at
            `evidence_chars`; its messages count as shown, like any tool result's.
        exempt: the question needs no messages; the grounding guard does not apply.
        figures: notes (among `hints`) that are stats evidence, not prompt boilerplate.
        coverage: what the index spans, appended when the answer is that nothing was found.
    """
    shown = _capped(evidence, evidence_chars) if evidence is not None and evidence.ok else None
    block = prompts.evidence_block(shown.text if shown and shown.message_guids else "")
    messages = (
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content=prompts.user_message(question, hints, block)),
    )
    state = State(
        messages=messages,
        exempt=exempt,
        echo_sources=tuple(h for h in hints if h not in figures),
        figures=tuple(figures),
        coverage=coverage,
    )
    if shown is not None and shown.message_guids:
        state = replace(state, gathered=(shown,), rowids=_rowid_pairs((shown,)))
    return state, AskModel()


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
    state, text = _check_citations(_record(state, text), text)
    if _is_empty(state, text):
        name = "echoed_prompt" if text else "empty_reply"
        return _nudge_once(_guard(state, name), name, prompts.NUDGE_EMPTY, limits)
    kind = _grounding(state, text)
    if kind == "ungrounded":
        if "ungrounded_answer" in state.nudged or state.iterations >= limits.max_iterations:
            return _summarise(_guard(state, "ungrounded_answer"))
        return _nudge(state, "ungrounded_answer", prompts.NUDGE_UNGROUNDED, limits)
    return state, _done(state, text, "answered", kind)


def after_tools(
    state: State, results: Sequence[ToolResult], limits: Limits
) -> tuple[State, Action]:
    """Append the tool results (capped: the only truncation), then ask again or synthesise."""
    shown = tuple(_capped(r, limits.max_result_chars) for r in results)
    tool_messages = tuple(ChatMessage(role="tool", content=r.text, name=r.call.name) for r in shown)
    state = replace(
        state,
        messages=state.messages + tool_messages,
        gathered=state.gathered + shown,
        rowids=state.rowids + _rowid_pairs(shown),
    )
    if state.iterations >= limits.max_iterations:
        return _synthesize(_guard(state, "max_iterations"))
    return state, AskModel()


def after_synthesis(state: State, reply: Reply) -> tuple[State, Done]:
    """Finish with the synthesis reply when it is grounded, else the deterministic summary."""
    text = reply.text.strip()
    if not text:
        return _summarise(_guard(state, "empty_synthesis"))
    collapsed = collapse_repeats(text)
    if collapsed != text:
        state = _guard(state, "repetitive_answer")
    state, collapsed = _check_citations(_record(state, collapsed), collapsed)
    if _is_empty(state, collapsed):
        return _summarise(_guard(state, "echoed_prompt" if collapsed else "empty_synthesis"))
    kind = _grounding(state, collapsed)
    if kind == "ungrounded":
        return _summarise(_guard(state, "ungrounded_answer"))
    return state, _done(state, collapsed, "synthesized", kind)


def cited_guids(answer: str, state: State) -> tuple[str, ...]:
    """Guids the answer cites, by `#rowid` a result showed or by guid, in answer order."""
    known = dict(state.rowids)
    shown = _ordered_unique(g for r in state.gathered for g in r.message_guids)
    found: list[tuple[int, str]] = [
        (m.start(), known[int(m.group(1))])
        for m in _CITED_ROWID.finditer(answer)
        if int(m.group(1)) in known
    ]
    found += [(answer.find(g), g) for g in shown if g and g in answer]
    return _ordered_unique(g for _, g in sorted(found))


def fallback_summary(gathered: Sequence[ToolResult], coverage: str = "") -> str:
    """A deterministic answer from the tool results: their cited lines, else their first lines;
    with none, that nothing was found and what the index covers."""
    lines: list[str] = []
    for result in gathered:
        if not result.ok:
            continue
        body = [
            ln.strip()
            for ln in result.text.splitlines()
            if ln.strip() and not quoting.is_boundary(ln)
        ]
        cited = [ln for ln in body if _CITE_TAG.search(ln)]
        lines += (cited or body[:2])[:3]
    picked = _ordered_unique(_clip(ln, 200) for ln in lines)[:8]
    if not picked:
        return f"{prompts.FALLBACK_NOTHING} {coverage}".strip()
    return "\n".join([prompts.FALLBACK_INTRO, *(f"- {ln}" for ln in picked)])


def _check_citations(state: State, text: str) -> tuple[State, str]:
    """Drop `[#rowid]`s no result showed; count them (citations written another way are written
    `[#rowid]` first)."""
    cleaned, removed = grounding.check_citations(text, {rowid for rowid, _ in state.rowids})
    if not removed:
        return state, cleaned
    return replace(state, invalid_citations=state.invalid_citations + removed), cleaned


def _is_empty(state: State, text: str) -> bool:
    """Nothing left, or only Casper's own prompt text said back (not an honest "not found")."""
    if not text:
        return True
    return not grounding.abstains(text) and grounding.is_echo(text, state.echo_sources)


def _grounding(state: State, text: str) -> Grounding:
    if cited_guids(text, state):
        return "cited"
    stats = [r.text for r in state.gathered if r.ok and not r.message_guids] + list(state.figures)
    if grounding.shares_figure(text, stats):
        return "stats"
    if grounding.abstains(text):
        return "abstained"
    return "exempt" if state.exempt else "ungrounded"


def _done(state: State, text: str, reason: Reason, kind: Grounding) -> Done:
    if kind == "abstained" and state.coverage and state.coverage not in text:
        text = f"{text} {state.coverage}"
    return Done(text, reason, state.guards, cited_guids(text, state), kind, state.invalid_citations)


def _summarise(state: State) -> tuple[State, Done]:
    """The deterministic answer: the cited lines of what the tools showed, or an abstention."""
    summary = fallback_summary(state.gathered, state.coverage)
    kind: Grounding = "cited" if cited_guids(summary, state) else "abstained"
    if kind == "abstained" and any(r.ok and not r.message_guids for r in state.gathered):
        kind = "stats"
    return state, Done(
        summary,
        "fallback",
        state.guards,
        cited_guids(summary, state),
        kind,
        state.invalid_citations,
    )


def cap_result(result: ToolResult, max_chars: int | None = None) -> ToolResult:
    """A tool result cut as the agent shows it to its model (default: `Limits`' budget);
    `casper mcp` gives its clients the same text, with the same messages counted as shown."""
    return _capped(result, max_chars or Limits().max_result_chars)


def _capped(result: ToolResult, max_chars: int) -> ToolResult:
    """The result as the model sees it: text capped, guids cut to the markers still visible."""
    text = prompts.format_tool_result(result.text, max_chars)
    if text == result.text:
        return result
    visible = len(_ordered_unique(quoting.marked_rowids(text)))
    all_tags = len(_ordered_unique(quoting.marked_rowids(result.text)))
    same = all_tags == len(result.message_guids)  # else guids can't be paired with markers
    guids = result.message_guids[:visible] if same else result.message_guids
    return replace(result, text=text, message_guids=guids)


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
        tags = _ordered_unique(quoting.marked_rowids(result.text))
        if len(tags) == len(result.message_guids):
            pairs += zip(tags, result.message_guids, strict=True)
    return tuple(pairs)


def _ordered_unique(items: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(items))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
