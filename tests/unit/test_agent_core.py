"""Agent core: table-driven transitions for every path and guard, plus the pure helpers."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from casper.agent import core, prompts
from casper.agent.core import AskModel, Done, Limits, RunTools, State
from casper.protocols import Reply, ToolCall, ToolResult

LIMITS = Limits()


def call(name: str = "search_messages", **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments or {"query": "dinner"})


def result(c: ToolCall, text: str, guids: tuple[str, ...] = (), ok: bool = True) -> ToolResult:
    return ToolResult(call=c, ok=ok, text=text, message_guids=guids)


def fresh() -> State:
    return core.start("What did Sam say about dinner?", "SYSTEM")[0]


def test_start() -> None:
    state, action = core.start("Q?", "SYS", hints=["dates: 2025"])
    assert action == AskModel(tools_enabled=True)
    assert [m.role for m in state.messages] == ["system", "user"]
    assert state.messages[0].content == "SYS"
    assert state.messages[1].content == "Q?\n\nNotes:\n- dates: 2025"
    assert state.iterations == 0 and state.guards == ()


SEARCH = call(query="dinner")
OTHER = call(query="restaurant")

# (id, state tweak, reply, expected action type, tools_enabled, guards, last message role)
REPLY_CASES: list[tuple[str, dict[str, Any], Reply, type, bool | None, tuple[str, ...], str]] = [
    ("cited answer", {"rowids": ((3, "g3"),)}, Reply("Pizza [#3]."), Done, None, (), "assistant"),
    (
        "uncited answer nudges once",
        {},
        Reply("Sam suggested pizza."),
        AskModel,
        True,
        ("ungrounded_answer",),
        "user",
    ),
    (
        "an invented citation does not ground an answer",
        {},
        Reply("Sam suggested pizza [#3]."),
        AskModel,
        True,
        ("ungrounded_answer",),
        "user",
    ),
    (
        "second uncited answer ends in the summary",
        {"nudged": frozenset({"ungrounded_answer"}), "guards": ("ungrounded_answer",)},
        Reply("Sam suggested pizza."),
        Done,
        None,
        ("ungrounded_answer",),
        "assistant",
    ),
    (
        "an echo of the prompt counts as empty",
        {"echo_sources": ("The user's messages cover 2023-12 → 2024-02.",)},
        Reply("The user's messages cover 2023-12 → 2024-02."),
        AskModel,
        True,
        ("echoed_prompt",),
        "user",
    ),
    ("an abstention is done", {}, Reply("I could not find that."), Done, None, (), "assistant"),
    ("small talk is exempt", {"exempt": True}, Reply("Hi!"), Done, None, (), "assistant"),
    ("one call", {}, Reply("", (SEARCH,)), RunTools, None, (), "assistant"),
    ("empty reply nudges", {}, Reply(""), AskModel, True, ("empty_reply",), "user"),
    (
        "second empty reply synthesises",
        {"nudged": frozenset({"empty_reply"}), "guards": ("empty_reply",)},
        Reply("   "),
        AskModel,
        False,
        ("empty_reply",),
        "user",
    ),
    (
        "narrated intent nudges",
        {},
        Reply("Let me search your messages for that."),
        AskModel,
        True,
        ("narrated_intent",),
        "user",
    ),
    (
        "second narration synthesises",
        {"nudged": frozenset({"narrated_intent"})},
        Reply("I'll check the messages now."),
        AskModel,
        False,
        ("narrated_intent",),
        "user",
    ),
    (
        "repeat call synthesises",
        {"seen": frozenset({core.call_key(SEARCH)})},
        Reply("", (SEARCH,)),
        AskModel,
        False,
        ("repeat_call",),
        "user",
    ),
    (
        "repeat with a new call runs only the new one",
        {"seen": frozenset({core.call_key(SEARCH)})},
        Reply("", (SEARCH, OTHER)),
        RunTools,
        None,
        (),
        "assistant",
    ),
    (
        "repetitive answer synthesises",
        {"replies": ("Sam said pizza at eight on Friday at Luigi's place",)},
        Reply("Sam said pizza at eight on Friday at Luigi's place!"),
        AskModel,
        False,
        ("repetitive_answer",),
        "user",
    ),
    (
        "looping answer synthesises",
        {},
        Reply("Sam likes pizza a lot. " * 4),
        AskModel,
        False,
        ("repetitive_answer",),
        "user",
    ),
    (
        "malformed call nudges with the error",
        {},
        Reply("", malformed=("<tool_call>{bad",)),
        AskModel,
        True,
        ("malformed_call",),
        "user",
    ),
    (
        "malformed beside a good call runs the good one",
        {},
        Reply("", (SEARCH,), malformed=("<tool_call>{bad",)),
        RunTools,
        None,
        ("malformed_call",),
        "assistant",
    ),
    (
        "nudge at the cap synthesises instead",
        {"iterations": 4},
        Reply(""),
        AskModel,
        False,
        ("empty_reply", "max_iterations"),
        "user",
    ),
    (
        "a call at the cap still runs",
        {"iterations": 4},
        Reply("", (SEARCH,)),
        RunTools,
        None,
        (),
        "assistant",
    ),
]


@pytest.mark.parametrize(
    ("tweak", "reply", "kind", "tools", "guards", "role"),
    [c[1:] for c in REPLY_CASES],
    ids=[c[0] for c in REPLY_CASES],
)
def test_after_reply(
    tweak: dict[str, Any],
    reply: Reply,
    kind: type,
    tools: bool | None,
    guards: tuple[str, ...],
    role: str,
) -> None:
    before = replace(fresh(), **tweak)
    state, action = core.after_reply(before, reply, LIMITS)
    assert isinstance(action, kind)
    if tools is not None:
        assert isinstance(action, AskModel) and action.tools_enabled is tools
    assert state.guards == guards
    assert state.iterations == before.iterations + 1
    assert state.messages[-1].role == role


def test_direct_answer_is_done() -> None:
    state, action = core.after_reply(gathered_state(), Reply("Sam suggested pizza [#3]."), LIMITS)
    assert action == Done("Sam suggested pizza [#3].", "answered", (), ("g3",), "cited")
    assert state.messages[-1].content == "Sam suggested pizza [#3]."


def test_invented_citations_are_removed_and_counted() -> None:
    _, action = core.after_reply(gathered_state(), Reply("Pizza [#3] at Luigi's [#77]."), LIMITS)
    assert isinstance(action, Done)
    assert action.answer == "Pizza [#3] at Luigi's."
    assert action.cited_guids == ("g3",) and action.invalid_citations == 1


def test_ungrounded_twice_gives_the_cited_summary() -> None:
    state, action = core.after_reply(gathered_state(), Reply("Sam likes pizza."), LIMITS)
    assert action == AskModel() and state.messages[-1].content == prompts.NUDGE_UNGROUNDED
    state, action = core.after_reply(state, Reply("Sam really likes pizza."), LIMITS)
    assert isinstance(action, Done) and action.reason == "fallback"
    assert action.grounding == "cited" and action.cited_guids == ("g3", "g4", "g9")
    assert state.guards == ("ungrounded_answer",)


def test_abstention_carries_the_coverage() -> None:
    state = replace(fresh(), coverage="Your messages here run from 2024-01-01 to 2024-02-01.")
    _, action = core.after_reply(state, Reply("I could not find anything about that."), LIMITS)
    assert isinstance(action, Done) and action.grounding == "abstained"
    assert action.answer.endswith("run from 2024-01-01 to 2024-02-01.")
    assert action.cited_guids == ()


def test_an_answer_repeating_a_stats_figure_is_grounded() -> None:
    stats = result(call("get_contact_stats", person="Sam"), "Sam: 120 sent\n90 received")
    state, _ = core.after_tools(fresh(), [stats], LIMITS)
    _, action = core.after_reply(state, Reply("You sent Sam 120 messages."), LIMITS)
    assert isinstance(action, Done) and action.grounding == "stats"


def test_prefetched_evidence_is_shown_capped_and_citable() -> None:
    text = "[#3] Sam: pizza?\n[#4] me: yes " + "y" * 150 + "\n[#5] Sam: " + "x" * 900
    evidence = result(SEARCH, text, ("g3", "g4", "g5"))
    state, action = core.start("Q?", "SYS", ("dates: 2025",), evidence=evidence,
                               evidence_chars=200)  # fmt: skip
    assert action == AskModel()
    user = state.messages[1].content
    assert (
        user.startswith("Q?\n\n" + prompts.EVIDENCE_HEADER)
        and "[#4] me: yes" in user
        and "[#5]" not in user
    )
    assert "truncated" in user and user.endswith("- dates: 2025")
    assert state.rowids == ((3, "g3"), (4, "g4"))  # [#5] was cut: not citable
    _, done = core.after_reply(state, Reply("Pizza [#3], not [#5]."), LIMITS)
    assert isinstance(done, Done) and done.cited_guids == ("g3",) and done.invalid_citations == 1


def test_tool_calls_are_deduped_capped_and_marked_seen() -> None:
    calls = (SEARCH, SEARCH, OTHER, call(query="c"), call(query="d"))
    state, action = core.after_reply(fresh(), Reply("Looking.", calls), LIMITS)
    assert action == RunTools((SEARCH, OTHER, call(query="c")))
    assert state.seen == {core.call_key(c) for c in action.calls}
    assert state.messages[-1].tool_calls == action.calls
    assert state.messages[-1].content == "Looking."


def test_nudge_texts() -> None:
    state, _ = core.after_reply(fresh(), Reply("", malformed=("<tool_call>{bad",)), LIMITS)
    assert "<tool_call>{bad" in state.messages[-1].content
    assert "malformed_call" in state.nudged
    state, _ = core.after_reply(fresh(), Reply("Let me look that up."), LIMITS)
    assert state.messages[-1].content == prompts.NUDGE_NARRATED
    assert state.messages[-2].content == "Let me look that up."
    state, _ = core.after_reply(fresh(), Reply(""), LIMITS)
    assert state.messages[-1].content == prompts.NUDGE_EMPTY
    state, action = core.after_reply(replace(fresh(), seen=frozenset({core.call_key(SEARCH)})),
                                     Reply("", (SEARCH,)), LIMITS)  # fmt: skip
    assert state.messages[-1].content == prompts.SYNTHESIS
    assert action == AskModel(tools_enabled=False)


def test_after_tools_truncates_and_maps_rowids() -> None:
    state, _ = core.after_reply(fresh(), Reply("", (SEARCH,)), LIMITS)
    text = "[#3] Sam: pizza?\n[#4] me: yes\n" + "x" * 3000
    state, action = core.after_tools(state, [result(SEARCH, text, ("g3", "g4"))], LIMITS)
    assert action == AskModel()
    assert state.messages[-1].role == "tool" and state.messages[-1].name == "search_messages"
    assert "truncated" in state.messages[-1].content
    assert len(state.messages[-1].content) < 2100
    assert state.rowids == ((3, "g3"), (4, "g4"))
    assert len(state.gathered) == 1


def test_after_tools_at_cap_synthesises() -> None:
    state = replace(fresh(), iterations=5)
    state, action = core.after_tools(state, [result(SEARCH, "nothing")], LIMITS)
    assert action == AskModel(tools_enabled=False)
    assert state.guards == ("max_iterations",)
    assert state.messages[-1].content == prompts.SYNTHESIS


def test_after_tools_mismatched_markers_map_nothing() -> None:
    state, _ = core.after_tools(fresh(), [result(SEARCH, "[#3] a\n[#4] b", ("g3",))], LIMITS)
    assert state.rowids == ()


GATHERED = (
    result(SEARCH, "[#3] Sam: pizza?\n[#4] me: yes", ("g3", "g4")),
    result(OTHER, "[#9] Alex: Luigi's", ("g9",)),
    result(call("get_contact_stats", person="Zed"), "error: no such person", ok=False),
)


def gathered_state() -> State:
    state, _ = core.after_tools(fresh(), list(GATHERED), LIMITS)
    return state


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Sam asked about pizza [#3] and you agreed [#4].", ("g3", "g4")),
        ("You agreed [#4]; Sam asked [#3].", ("g4", "g3")),
        ("Alex suggested Luigi's (#9).", ("g9",)),
        ("See message g9.", ("g9",)),
        ("Unknown id [#77] only.", ()),
        ("Sam wanted pizza.", ()),
        ("I couldn't find anything about that.", ()),
        ("No messages mention it.", ()),
    ],
)
def test_cited_guids(answer: str, expected: tuple[str, ...]) -> None:
    assert core.cited_guids(answer, gathered_state()) == expected


def test_cited_guids_without_results() -> None:
    assert core.cited_guids("Sam wanted pizza [#3].", fresh()) == ()


def test_after_synthesis_answer() -> None:
    state, done = core.after_synthesis(gathered_state(), Reply("Pizza [#3]."))
    assert done == Done("Pizza [#3].", "synthesized", (), ("g3",))


def test_after_synthesis_collapses_loops() -> None:
    _, done = core.after_synthesis(gathered_state(), Reply("Sam wants pizza now [#3]. " * 5))
    assert done.answer == "Sam wants pizza now [#3]."
    assert done.guards == ("repetitive_answer",)


def test_empty_synthesis_falls_back_to_a_cited_summary() -> None:
    state, done = core.after_synthesis(gathered_state(), Reply("", (SEARCH,)))
    assert done.reason == "fallback"
    assert done.guards == ("empty_synthesis",)
    assert done.answer.splitlines() == [
        prompts.FALLBACK_INTRO,
        "- [#3] Sam: pizza?",
        "- [#4] me: yes",
        "- [#9] Alex: Luigi's",
    ]
    assert done.cited_guids == ("g3", "g4", "g9")


def test_empty_synthesis_without_results() -> None:
    _, done = core.after_synthesis(fresh(), Reply(""))
    assert done == Done(prompts.FALLBACK_NOTHING, "fallback", ("empty_synthesis",), (), "abstained")


def test_ungrounded_synthesis_falls_back() -> None:
    _, done = core.after_synthesis(gathered_state(), Reply("Sam loves pizza."))
    assert done.reason == "fallback" and done.guards == ("ungrounded_answer",)
    assert done.cited_guids == ("g3", "g4", "g9")


def test_fallback_summary_uses_first_lines_without_markers() -> None:
    stats = result(call("get_contact_stats", person="Sam"), "Sam: 120 sent\n90 received\nmore")
    assert core.fallback_summary([stats]).splitlines()[1:] == ["- Sam: 120 sent", "- 90 received"]


@pytest.mark.parametrize(
    ("text", "narrated"),
    [
        ("Let me search for that.", True),
        ("I'll look through your messages.", True),
        ("I’ll now check the messages with Sam.", True),
        ("I will check your conversations.", True),
        ("Let me find the dinner plans.", True),
        ("Searching your messages for Thanksgiving...", True),
        ("I'm going to quickly search for it.", True),
        ("Sam said pizza [#3]. Let me know if you need more.", False),
        ('Sam wrote "let me check the calendar".', False),
        ("Sam suggested pizza on Friday.", False),
        ("Let me search. " + "word " * 200, False),
    ],
)
def test_is_narrated(text: str, narrated: bool) -> None:
    assert core.is_narrated(text) is narrated


@pytest.mark.parametrize(
    ("text", "repetitive"),
    [
        ("Sam said yes. Sam said yes. Sam said yes.", True),
        ("the the the the " * 10, True),
        ("Sam said yes. Alex said no. You said maybe.", False),
        ("Sam said yes. Sam said yes.", False),
        ("ok " * 5, False),
    ],
)
def test_is_repetitive(text: str, repetitive: bool) -> None:
    assert core.is_repetitive(text) is repetitive


def test_overlap() -> None:
    assert core.overlap("a b c d", "a b c d") == 1.0
    assert core.overlap("", "a") == 0.0
    assert core.overlap("Sam said pizza at eight", "Alex wants sushi tonight") == 0.0
    assert core.overlap("yes", "Yes!") == 1.0


def test_call_key_is_canonical() -> None:
    a = ToolCall("search_messages", {"query": "x", "limit": 5}, id="1")
    b = ToolCall("search_messages", {"limit": 5, "query": "x"}, id="2")
    assert core.call_key(a) == core.call_key(b)
    assert core.call_key(a) != core.call_key(ToolCall("search_messages", {"query": "x"}))


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Limits(max_iterations=0)
