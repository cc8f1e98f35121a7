"""run_agent end to end with ScriptedEngine and a small fake Toolbox; property test on scripts."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casper.agent import core, loop, prompts
from casper.agent.core import Limits
from casper.agent.loop import Grounding
from casper.events import Event
from casper.protocols import Reply, ToolCall, ToolResult, ToolSpec
from tests.fakes import ScriptedEngine

MESSAGES = {  # rowid: (guid, sender, text)
    3: ("g3", "Sam", "pizza at Luigi's on Friday?"),
    4: ("g4", "me", "yes, 8pm"),
    9: ("g9", "Alex", "the dentist moved to Tuesday"),
}


class FakeToolbox:
    """Two tools over three messages; failures come back as error results, never exceptions."""

    specs = (
        ToolSpec(
            name="search_messages",
            description="Search messages.",
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        ),
        ToolSpec(name="list_contacts", description="List people.", parameters={"type": "object"}),
    )

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    def call(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        if call.name == "list_contacts":
            return ToolResult(call, True, "Sam, Alex")
        if call.name != "search_messages":
            return ToolResult(call, False, f"error: unknown tool {call.name!r}")
        query = call.arguments.get("query")
        if not isinstance(query, str) or set(call.arguments) != {"query"}:
            return ToolResult(call, False, "error: search_messages needs one string 'query'")
        words = set(re.findall(r"\w+", query.lower()))
        hits = [
            r for r, (_, _, t) in MESSAGES.items() if words & set(re.findall(r"\w+", t.lower()))
        ]
        lines = [f"[#{r}] {MESSAGES[r][1]}: {MESSAGES[r][2]}" for r in hits]
        return ToolResult(
            call, True, "\n".join(lines) or "no results", tuple(MESSAGES[r][0] for r in hits)
        )


def qwen_call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def run(
    *script: Reply | str,
    limits: Limits | None = None,
    hints: tuple[str, ...] = (),
    question: str = "What did Sam say about pizza?",
    **options: Any,
) -> tuple[loop.AgentResult, ScriptedEngine, list[Event]]:
    engine = ScriptedEngine(*script)
    events: list[Event] = []
    result = loop.run_agent(
        question, engine, FakeToolbox(), limits or Limits(), events.append, hints, "SYS", **options
    )
    return result, engine, events


def kinds(events: list[Event]) -> list[str]:
    return [e["event"] for e in events if e["event"] != "token"]


def test_direct_answer() -> None:
    result, engine, events = run(
        Reply("Hi! Ask me about your messages.", prompt_tokens=7, completion_tokens=3),
        question="hi",
        grounding=Grounding(exempt=True),
    )
    assert result.answer == "Hi! Ask me about your messages."
    assert (result.reason, result.iterations, result.tool_calls, result.guards) == (
        "answered",
        1,
        (),
        (),
    )
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 3)
    assert engine.calls[0].tools == ()  # small talk: no tool descriptions in the prompt
    assert [m.role for m in engine.calls[0].messages] == ["system", "user"]
    assert events == [
        {"event": "step", "iteration": 1},
        {"event": "token", "text": "Hi! Ask me about your messages."},
    ]
    assert result.grounding == "exempt" and result.citations == ()


def test_one_call_then_cited_answer() -> None:
    result, engine, events = run(
        "<think>search first</think>" + qwen_call("search_messages", query="pizza"),
        "Sam suggested pizza at Luigi's on Friday [#3].",
    )
    assert result.answer == "Sam suggested pizza at Luigi's on Friday [#3]."
    assert result.citations == ("g3",)
    assert result.tool_calls == (("search_messages", {"query": "pizza"}, True),)
    assert result.iterations == 2 and result.reason == "answered"
    assert engine.calls[0].tools == FakeToolbox.specs
    tool_message = engine.calls[1].messages[-1]
    assert tool_message.role == "tool" and tool_message.content.startswith("[#3] Sam: pizza")
    assert kinds(events) == ["step", "tool", "tool_done", "step"]
    done = events[2]
    assert done["name"] == "search_messages" and done["ok"] and done["messages"] == 1
    assert done["elapsed_s"] >= 0


def test_several_calls_in_one_reply() -> None:
    result, _, events = run(
        qwen_call("search_messages", query="pizza") + qwen_call("search_messages", query="dentist"),
        "Pizza on Friday [#3]; the dentist moved [#9].",
    )
    assert [c[1]["query"] for c in result.tool_calls] == ["pizza", "dentist"]
    assert result.citations == ("g3", "g9")
    assert kinds(events).count("tool") == 2


def test_uncited_answer_is_nudged_once_then_summarised() -> None:
    result, engine, _ = run(
        qwen_call("search_messages", query="pizza yes"), "Sam wanted pizza.", "Pizza, surely."
    )
    assert engine.calls[2].messages[-1].content == prompts.NUDGE_UNGROUNDED
    assert result.guards == ("ungrounded_answer",) and result.reason == "fallback"
    assert result.citations == ("g3", "g4") and result.grounding == "cited"
    assert "[#3] Sam: pizza" in result.answer


def test_prefetch_runs_before_the_first_model_call_and_can_be_cited() -> None:
    result, engine, events = run(
        "Sam suggested Luigi's [#3], and [#42].",
        prefetch=ToolCall("search_messages", {"query": "pizza"}),
    )
    assert kinds(events)[:3] == ["tool", "tool_done", "step"] and events[0]["prefetch"] is True
    assert prompts.EVIDENCE_HEADER in engine.calls[0].messages[1].content
    assert result.citations == ("g3",) and result.invalid_citations == 1
    assert result.answer == "Sam suggested Luigi's [#3], and."
    assert result.tool_calls == ()  # the prefetch is not the model's call


def test_echoed_prompt_counts_as_empty() -> None:
    note = "The user's messages cover 2023-12 → 2024-02."
    result, engine, _ = run(note, note, hints=(note,), limits=Limits(max_iterations=2))
    assert "echoed_prompt" in result.guards
    assert note not in result.answer and result.grounding == "abstained"


def test_usage_comes_from_the_engine_counters() -> None:
    result, _, _ = run(
        Reply("", (ToolCall("search_messages", {"query": "pizza"}),), prompt_tokens=50,
              completion_tokens=10, prompt_s=0.5, generation_s=0.25),
        Reply("Pizza [#3].", prompt_tokens=80, completion_tokens=5, prompt_s=0.4,
              generation_s=0.25),
    )  # fmt: skip
    usage = result.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.iterations) == (130, 15, 2)
    assert usage.tokens_per_s == pytest.approx(30.0) and usage.first_token_s == 0.5
    assert usage.model_s >= 0 and usage.tools_s >= 0


def test_unknown_tool_and_bad_arguments_come_back_as_errors() -> None:
    result, engine, events = run(
        qwen_call("delete_everything") + qwen_call("search_messages", q="pizza"),
        qwen_call("search_messages", query="pizza"),
        "Pizza [#3].",
    )
    assert result.tool_calls == (
        ("delete_everything", {}, False),
        ("search_messages", {"q": "pizza"}, False),
        ("search_messages", {"query": "pizza"}, True),
    )
    errors = [m.content for m in engine.calls[1].messages if m.role == "tool"]
    assert errors[0].startswith("error: unknown tool") and errors[1].startswith("error:")
    finished = [e["ok"] for e in events if e["event"] == "tool_done"]
    assert finished == [False, False, True]
    assert result.answer == "Pizza [#3]." and result.guards == ()


def test_malformed_call_is_nudged_then_retried() -> None:
    result, engine, _ = run(
        '<tool_call>{"name": "search_messages", "arguments": {query: pizza}}</tool_call>',
        qwen_call("search_messages", query="pizza"),
        "Pizza [#3].",
    )
    assert result.guards == ("malformed_call",)
    assert "could not be parsed" in engine.calls[1].messages[-1].content
    assert result.iterations == 3 and result.answer == "Pizza [#3]."


def test_repeat_call_stops_and_synthesises() -> None:
    search = qwen_call("search_messages", query="pizza")
    result, engine, events = run(search, search, "Sam wants pizza [#3].")
    assert result.guards == ("repeat_call",)
    assert result.reason == "synthesized"
    assert len(result.tool_calls) == 1
    assert engine.calls[2].tools == ()
    assert result.iterations == 2 and len(engine.calls) == 3
    assert sum(bool(e.get("final")) for e in events) == 1


def test_empty_then_narrated_replies_are_nudged_once_each() -> None:
    result, engine, _ = run(
        "",
        "Let me search your messages for pizza.",
        qwen_call("search_messages", query="pizza"),
        "Pizza [#3].",
    )
    assert result.guards == ("empty_reply", "narrated_intent")
    assert result.iterations == 4 and result.reason == "answered"
    assert "call the tool now" in engine.calls[2].messages[-1].content


def test_cap_then_synthesis() -> None:
    calls = [qwen_call("search_messages", query=w) for w in ("pizza", "yes", "dentist", "a", "b")]
    result, engine, _ = run(*calls, "Friday pizza [#3], 8pm [#4].")
    assert result.iterations == 5 and len(engine.calls) == 6
    assert result.guards == ("max_iterations",)
    assert result.reason == "synthesized"
    assert result.citations == ("g3", "g4")
    assert engine.calls[-1].tools == ()


def test_empty_synthesis_falls_back_to_summary() -> None:
    search = qwen_call("search_messages", query="pizza")
    result, _, _ = run(search, Reply(""), Reply(""), Reply(""), limits=Limits(max_iterations=3))
    assert result.reason == "fallback"
    assert result.guards == ("empty_reply", "empty_synthesis")
    assert "[#3] Sam: pizza at Luigi's on Friday?" in result.answer
    assert result.citations == ("g3",)


def test_hints_reach_the_model() -> None:
    _, engine, _ = run("ok", hints=('"last week" means 2026-11-09 to 2026-11-15',))
    assert "2026-11-09" in engine.calls[0].messages[1].content


def test_default_system_prompt_has_today() -> None:
    engine = ScriptedEngine("hi")
    loop.run_agent("hello", engine, FakeToolbox(), Limits())
    assert date.today().isoformat() in engine.calls[0].messages[0].content


def test_backstop_raises_when_core_never_finishes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "after_reply", lambda s, r, lim: (s, core.AskModel()))
    with pytest.raises(AssertionError, match="did not terminate"):
        run("hello")


def canonical(name: str, arguments: Mapping[str, Any]) -> str:
    return core.call_key(ToolCall(name, arguments))


REPLIES = st.one_of(
    st.sampled_from(
        [
            "",
            "   ",
            "Sam wants pizza [#3].",
            "Sam wants pizza [#77].",
            "Sam wants pizza.",
            "What did Sam say about pizza?",
            "I couldn't find anything.",
            "Let me search for that.",
            "I'll check your messages.",
            "yes yes yes. yes yes yes. yes yes yes. yes yes yes.",
            '<tool_call>{"name": "search_messages", "arguments": {</tool_call>',
            '<tool_call>{"name": "search_messages"',
            "<think>hmm",
        ]
    ),
    st.builds(
        lambda words, name: "".join(qwen_call(name, query=w) for w in words),
        st.lists(st.sampled_from(["pizza", "yes", "dentist", "x"]), min_size=1, max_size=4),
        st.sampled_from(["search_messages", "list_contacts", "nope"]),
    ),
    st.builds(
        lambda w: (
            f"Looking.\n<tool_call>\n<function=search_messages>\n<parameter=query>\n{w}\n"
            "</parameter>\n</function>\n</tool_call>"
        ),
        st.sampled_from(["pizza", "yes"]),
    ),
)


@settings(max_examples=300, deadline=None, database=None)
@given(
    script=st.lists(REPLIES, max_size=12),
    max_iterations=st.integers(1, 6),
    per_step=st.integers(1, 3),
)
def test_any_script_terminates_without_repeating_calls(
    script: list[str], max_iterations: int, per_step: int
) -> None:
    limits = Limits(max_iterations=max_iterations, max_calls_per_step=per_step)
    result, engine, _ = run(*script, limits=limits)
    assert len(engine.calls) <= max_iterations + 1
    assert result.iterations <= max_iterations
    keys = [canonical(name, args) for name, args, _ in result.tool_calls]
    assert len(keys) == len(set(keys))
    assert result.answer.strip()
    assert set(result.guards) <= set(core.GUARDS)
    # every answer cites a message a tool showed, or says nothing was found
    assert result.grounding in ("cited", "stats", "abstained")
    assert bool(result.citations) == (result.grounding == "cited")
    assert "[#77]" not in result.answer
    synthesis = [i for i, c in enumerate(engine.calls) if not c.tools]
    assert synthesis in ([], [len(engine.calls) - 1])
