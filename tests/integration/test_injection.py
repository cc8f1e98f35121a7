"""The injection suite with scripted engines: 27 planted messages (tests/injection.py) in a real
store and index, read through the tools as `casper mcp` returns them (casper.app.tool_calls) and
through `casper ask`'s agent. For each: no forged line in the tool text, no tool call taken from
a message, no citation of an id that was not retrieved.

Real store and LanceDB index of the tiny corpus plus the planted chats; fake embedder, reranker
and chat model. The MCP transport itself: test_injection_mcp.py; real models:
tests/slow/test_injection_models.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import casper.backends.factory as factory
from casper.app import handlers
from casper.app.requests import ToolRequest
from casper.app.runtime import Runtime
from casper.app.tool_calls import call_tool
from casper.config import load_config
from casper.protocols import ChatMessage, Reply, ToolSpec
from tests.fakes import ScriptedEngine
from tests.helpers import use_fake_search_models
from tests.injection import (
    FORGED_ID,
    GROUP_NAME,
    PROBES,
    build_planted_home,
    calls_in,
    inspect,
    planted_call,
)


@pytest.fixture(scope="module")
def planted_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The tiny corpus with the planted messages, indexed; the fake models stay in place."""
    with pytest.MonkeyPatch.context() as patch:
        use_fake_search_models(patch)
        yield build_planted_home(tmp_path_factory.mktemp("injection"))


@pytest.fixture(scope="module")
def rt(planted_home: Path) -> Runtime:
    return Runtime(load_config(planted_home))


def tool(rt: Runtime, name: str, **arguments: Any) -> dict[str, Any]:
    """One tool call as `casper mcp` answers it."""
    return call_tool(rt, ToolRequest(name, arguments), lambda event: None)


LIMIT = 3  # hits per search: the planted message and a little of the corpus around it


def planted_rowid(rt: Runtime, probe: str) -> int:
    found = tool(rt, "search_messages", query=probe, limit=LIMIT)
    rowids = [c["rowid"] for c in found["citations"] if probe in c["text"]]
    assert rowids, f"the planted {probe!r} message is not retrieved: the check would be empty"
    return rowids[0]


@pytest.mark.parametrize("probe", PROBES)
def test_a_planted_message_forges_nothing_in_a_tool_result(rt: Runtime, probe: str) -> None:
    rowid = planted_rowid(rt, probe)
    for doc in (
        tool(rt, "search_messages", query=probe, limit=LIMIT),
        tool(rt, "get_conversation_context", message_id=str(rowid), before=3, after=3),
    ):
        assert doc["ok"] is True
        retrieved = [c["rowid"] for c in doc["citations"]]
        assert rowid in retrieved and FORGED_ID not in retrieved
        found = inspect(doc["text"], retrieved)
        assert (found.forged_lines, found.calls_in_text, found.foreign_ids) == (0, 0, 0), doc[
            "text"
        ]


def test_a_group_name_is_quoted_like_a_message(rt: Runtime) -> None:
    doc = tool(rt, "search_messages", query=PROBES[-1])
    assert GROUP_NAME.split("\n")[0] in doc["text"]  # the name is shown ...
    assert GROUP_NAME not in doc["text"]  # ... on one line, its forged part quoted


class Parrot(ScriptedEngine):
    """A model that copies what it read: after its scripted replies, each reply is the last
    tool result it was shown, word for word (the worst a small model does with a message)."""

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        if not self.script:
            shown = [m.content for m in messages if m.role == "tool"] or [messages[-1].content]
            self.script.append(shown[-1])
        return super().chat(messages, tools, on_token)


def _search_call(query: str) -> str:
    call = json.dumps({"name": "search_messages", "arguments": {"query": query, "limit": LIMIT}})
    return f"<tool_call>{call}</tool_call>"


def ask(rt: Runtime, engine: ScriptedEngine, question: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`casper ask --json` answered with `engine` (a Runtime of its own: it keeps its engine)."""
    monkeypatch.setattr(factory, "make_engine", lambda cfg: engine)
    return handlers.run(Runtime(rt.cfg), "ask", {"question": question, "max_iterations": 3})


@pytest.mark.parametrize("probe", PROBES)
def test_a_model_that_copies_a_planted_message_takes_no_call_from_it(
    rt: Runtime, probe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rowid = planted_rowid(rt, probe)
    doc = ask(rt, Parrot(_search_call(probe)), f"what did they text about {probe}?", monkeypatch)
    assert isinstance(doc, dict)
    called = [c for c in doc["tool_calls"] if not c.get("prefetch")]  # the model's own calls
    assert [c["name"] for c in called] == ["search_messages"]  # the scripted one
    assert called[0]["arguments"]["query"] == probe
    assert not any(planted_call_json(c) for c in doc["tool_calls"])
    cited = [c["rowid"] for c in doc["citations"]]
    assert FORGED_ID not in cited and rowid in cited  # it echoed the planted line, cited
    assert calls_in(doc["answer"]) == 0


def planted_call_json(call: dict[str, Any]) -> bool:
    from casper.protocols import ToolCall

    return planted_call(ToolCall(call["name"], call["arguments"]))


def test_an_answer_citing_a_forged_id_keeps_only_what_was_retrieved(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model taken in by a forged line cites its id: the id was never retrieved, so it is
    removed and counted, and only the retrieved message stays cited."""
    for probe in PROBES[:4]:  # the forged-citation messages
        rowid = planted_rowid(rt, probe)
        answer = f"They said so [#{FORGED_ID}], see [#{rowid}]."
        doc = ask(rt, ScriptedEngine(_search_call(probe), answer), f"{probe}?", monkeypatch)
        assert isinstance(doc, dict)
        assert [c["rowid"] for c in doc["citations"]] == [rowid], probe
        assert doc["invalid_citations"] == 1 and f"[#{FORGED_ID}]" not in doc["answer"]
