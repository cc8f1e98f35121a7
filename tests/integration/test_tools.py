"""The five agent tools over a real store: answers, ambiguous names, errors as data."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

import pytest

from casper.agent.tools import SPECS, TOOLS, Toolbox
from casper.indexer.pipeline import Indexer
from casper.protocols import Hit, HitMessage, ToolCall
from casper.store.db import Store
from ingest.synthetic import DemoToggles, build_demo_corpus

UTC = ZoneInfo("UTC")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root = tmp_path_factory.mktemp("tools")
    corpus = build_demo_corpus(root / "src", toggles=DemoToggles(ambiguous_sam=True))
    s = Store.open(root / "home" / "casper.sqlite")
    Indexer(s, corpus.chat_db, corpus.contacts, UTC).run()
    s.facts = corpus.facts  # type: ignore[attr-defined]
    return s


class RecordingSearch:
    """Stands in for Retriever.search: returns two overlapping hits and records its arguments."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: list[dict] = []

    def __call__(self, query: str, **kwargs: object) -> list[Hit]:
        self.calls.append({"query": query, **kwargs})
        msgs = self.store.chat_messages(3)[:4]
        as_hit = [HitMessage(m.rowid, m.guid, m.ts, "x", m.text) for m in msgs]
        return [
            Hit("a", "Priya", 1.0, msgs[0].ts, msgs[2].ts, ("me",), tuple(as_hit[:3])),
            Hit("b", "Priya", 0.5, msgs[1].ts, msgs[3].ts, ("me",), tuple(as_hit[1:])),
        ]


def box(store: Store) -> tuple[Toolbox, RecordingSearch]:
    search = RecordingSearch(store)
    return Toolbox(store, search, UTC), search


def test_the_five_tools_and_what_the_ceiling_withholds() -> None:
    assert {name for name, t in TOOLS.items() if t.shows_messages} == {
        "search_messages",
        "get_conversation_context",
    }
    assert {s.name for s in SPECS} == {
        "search_messages",
        "list_contacts",
        "get_contact_stats",
        "get_conversation_context",
        "get_message_volume_by_period",
    }


def test_search_passes_filters_and_lists_each_message_once(store: Store) -> None:
    tools, search = box(store)
    priya = store.resolve_person("Priya").id
    result = tools.call(
        ToolCall(
            "search_messages",
            {"query": "dentist", "person": "Priya", "start_date": "2024-01-01", "limit": 3},
        )
    )
    assert result.ok
    assert search.calls[0]["person_id"] == priya and search.calls[0]["k"] == 3
    assert search.calls[0]["since"] is not None
    assert len(result.message_guids) == 4 == len(set(result.message_guids))
    assert result.text.count("[#") == 4  # markers line up with message_guids for citations


def test_ambiguous_person_returns_candidates_instead_of_guessing(store: Store) -> None:
    tools, search = box(store)
    result = tools.call(ToolCall("get_contact_stats", {"person": "Sam"}))
    assert result.ok and "matches 2 people" in result.text and "p_" in result.text
    assert not search.calls


def test_stats_tool_matches_the_ledger(store: Store) -> None:
    """Every line the tool prints: counts and dates from the generator's ledger, the figures the
    ledger does not keep from the stats the index run precomputed (a different code path)."""
    tools, _ = box(store)
    result = tools.call(ToolCall("get_contact_stats", {"person": "Priya Natarajan"}))
    expected = store.facts["people"]["Priya Natarajan"]  # type: ignore[attr-defined]
    priya = store.resolve_person("Priya Natarajan")
    pre = store.stats(priya.id)
    assert pre is not None
    mins = lambda v: "n/a" if v is None else f"{v / 60:.0f} min"  # noqa: E731
    assert result.ok and result.message_guids == ()
    shown = result.text.splitlines()
    for line in [
        f"Priya Natarajan (id {priya.id})",
        f"sent by me: {expected['sent']}; received from them: {expected['received']}",
        f"first: {expected['first'][:10]}; last: {expected['last'][:10]}",
        f"active days: {pre['active_days']}",
        f"median reply: me {mins(pre['median_reply_s']['me'])}, "
        f"them {mins(pre['median_reply_s']['them'])}",
        f"conversations started: me {pre['initiations']['me']}, them {pre['initiations']['them']}",
        "top emoji: " + (" ".join(f"{e}x{n}" for e, n in pre["top_emoji"]) or "none"),
        "busiest hours: " + (", ".join(f"{h}h ({n})" for h, n in pre["busiest_hours"]) or "none"),
    ]:
        assert line in shown
    assert pre["active_days"] > 0 and pre["busiest_hours"]  # the figures are not all empty


def test_volume_tool_ranks_who_i_talked_to_most(store: Store) -> None:
    tools, _ = box(store)
    result = tools.call(
        ToolCall(
            "get_message_volume_by_period",
            {"start_date": "2023-01-01", "end_date": "2023-12-31", "period": "year"},
        )
    )
    assert result.ok
    first = result.text.splitlines()[0]
    assert first.startswith("whole range: Sam Rivera")


def test_context_tool_shows_neighbours(store: Store) -> None:
    tools, _ = box(store)
    target = store.chat_messages(3)[10]
    result = tools.call(
        ToolCall(
            "get_conversation_context", {"message_id": f"#{target.rowid}", "before": 2, "after": 2}
        )
    )
    assert result.ok and f"[#{target.rowid}]" in result.text
    assert len(result.message_guids) == 5


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (ToolCall("delete_everything", {}), "unknown tool"),
        (ToolCall("search_messages", {}), "query is required"),
        (ToolCall("search_messages", {"query": "x", "limit": "lots"}), "limit must be an integer"),
        (
            ToolCall(
                "get_message_volume_by_period",
                {"start_date": "2023-01-01", "end_date": "2023-02-01", "period": "hour"},
            ),
            "period",
        ),
        (ToolCall("get_conversation_context", {"message_id": "999999999"}), "no message"),
        (ToolCall("get_contact_stats", {"person": "Nobody Atall"}), "no contact"),
        (ToolCall("search_messages", {"query": "x", "start_date": "the 45th of Smarch"}), "date"),
    ],
)
def test_bad_calls_come_back_as_error_results(store: Store, call: ToolCall, needle: str) -> None:
    tools, _ = box(store)
    result = tools.call(call)
    assert not result.ok and result.text.startswith("error:") and needle in result.text


def test_a_failing_search_is_data_not_an_exception(store: Store) -> None:
    def broken(query: str, **kwargs: object) -> list[Hit]:
        raise RuntimeError("index went away")

    result = Toolbox(store, broken, UTC).call(ToolCall("search_messages", {"query": "x"}))
    assert not result.ok and "RuntimeError" in result.text and "index went away" not in result.text


def test_long_results_are_capped_once_with_a_notice(store: Store) -> None:
    from casper.agent import core

    tools = Toolbox(store, RecordingSearch(store), UTC)
    full = tools.call(ToolCall("search_messages", {"query": "dinner", "limit": 10}))
    assert len(full.text) > 150 and full.text.count("[#") >= 3  # the toolbox does not cap
    state = core.start("q", "s")[0]
    state, _ = core.after_tools(state, [full], core.Limits(max_result_chars=120))
    shown = state.messages[-1].content
    assert len(shown) < 180 and shown.count("truncated") == 1
    visible = [int(t) for t in re.findall(r"\[#(\d+)\]", shown)]
    assert [rowid for rowid, _ in state.rowids] == list(dict.fromkeys(visible))
    assert state.gathered[0].message_guids == full.message_guids[: len(state.rowids)]


def test_a_number_too_large_for_an_integer_is_a_bad_argument(store: Store) -> None:
    """`limit: 1e309` arrives as inf: a bad argument the model can correct, not a failure."""
    tb, _ = box(store)
    result = tb.call(ToolCall("search_messages", {"query": "x", "limit": float("inf")}))
    assert not result.ok
    assert result.text == "error: bad arguments for search_messages: limit must be an integer"
    huge = tb.call(ToolCall("get_conversation_context", {"message_id": "9" * 26}))
    assert huge.text == f"error: no message with id {'9' * 26}"
