"""The handlers both transports share keep each request's state to that request: the
reranker a request asked for (or not) is its own, notices said once per process are decided from
what each search returned, and arguments are checked once, before any handler runs.

Real store and LanceDB index of the demo corpus; fake embedder, reranker and chat model.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import casper.backends.factory as factory
from casper.app import handlers
from casper.app.runtime import Runtime
from casper.config import load_config
from casper.errors import CasperError
from casper.protocols import ChatMessage, Reply, ToolSpec
from tests.fakes import ScriptedEngine
from tests.fakes_search import OverlapReranker


def _tool_call(query: str) -> str:
    call = json.dumps({"name": "search_messages", "arguments": {"query": query}})
    return f"<tool_call>{call}</tool_call>"


def test_a_request_without_rerank_leaves_an_answer_in_progress_its_reranker(
    demo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the service, an answer gives up the data lock while the model writes, and another
    request may run then: a `search --no-rerank` in between must not switch the reranker off
    for the searches the answer makes afterwards (they share one retriever)."""
    reranker = OverlapReranker()
    monkeypatch.setattr(factory, "make_reranker", lambda cfg: (reranker, None))
    rt = Runtime(load_config(demo_home))
    between: list[dict[str, Any]] = []

    class Interleaved(ScriptedEngine):
        def chat(
            self,
            messages: Sequence[ChatMessage],
            tools: Sequence[ToolSpec],
            on_token: Callable[[str], None] | None = None,
        ) -> Reply:
            if len(self.calls) == 1:  # after the answer's first search, before its second
                args = {"query": "pumpkin pie", "rerank": False}
                between.append(handlers.run(rt, "search", args))  # type: ignore[arg-type]
            return super().chat(messages, tools, on_token)

    engine = Interleaved(
        _tool_call("climbing gym wifi"), _tool_call("dentist appointment"), "Done."
    )
    monkeypatch.setattr(factory, "make_engine", lambda cfg: engine)
    doc = handlers.run(rt, "ask", {"question": "what is the climbing gym wifi password?"})
    assert isinstance(doc, dict)
    assert [c["name"] for c in doc["tool_calls"] if not c["prefetch"]] == [
        "search_messages",
        "search_messages",
    ]
    assert between and between[0]["filters"]["rerank"] is False
    reranked = [query for query, _ in reranker.calls]
    assert "dentist appointment" in reranked  # the answer's second search kept its reranker
    assert "pumpkin pie" not in reranked  # and the request in between had none
    assert rt.retriever().reranker is None  # nothing was left on the shared retriever


def _half_the_vectors_gone(home: Path) -> None:
    """A semantic index half built (as a killed fill leaves it), with no search cache yet."""
    index_dir = home / "index.lance"
    for cache in index_dir.glob("*.npy"):
        cache.unlink()
    with sqlite3.connect(index_dir / "vectors.sqlite") as conn:
        total = conn.execute("SELECT count(*) FROM vec").fetchone()[0]
        conn.execute(
            "DELETE FROM vec WHERE key IN (SELECT key FROM vec ORDER BY key LIMIT ?)",
            (total // 2,),
        )


def test_a_partly_built_semantic_index_is_said_once_per_process(demo_home: Path) -> None:
    _half_the_vectors_gone(demo_home)
    cfg = load_config(demo_home)

    def notices(rt: Runtime, *queries: str) -> list[str]:
        events: list[dict[str, Any]] = []
        for query in queries:
            handlers.run(rt, "search", {"query": query, "rerank": False}, emit=events.append)
        return [e["text"] for e in events if e["event"] == "notice"]

    first = Runtime(cfg)
    said = notices(first, "dinner", "wifi password", "dentist")
    assert len(said) == 1 and said[0].startswith("semantic index ")
    assert notices(first, "pumpkin pie") == []  # the same process: not again
    assert notices(Runtime(cfg), "dinner") == said  # another process says it once too
    # the search itself reports it every time: the caller decides what is said once
    result = first.retriever().search("dinner", rerank=False)
    assert [n.text for n in result.notices] == said


@pytest.mark.parametrize(
    ("cmd", "args", "says"),
    [
        ("search", {"query": 5}, "query must be a string, not 5"),
        ("search", {"query": "dinner", "k": "ten"}, "k must be a whole number, not 'ten'"),
        ("search", {"query": "dinner", "k": True}, "k must be a whole number, not True"),
        ("search", {"query": "dinner", "mode": "fuzzy"}, "--mode must be one of hybrid, bm25"),
        ("search", {"query": "dinner", "rerank": "yes"}, "rerank must be true or false"),
        ("search", {"query": "dinner", "bogus": 1}, "bad arguments for search: unknown bogus"),
        ("stats", {"person": " "}, "the person is empty"),
        ("stats", {"chat": ""}, "the chat is empty"),
        ("show", {"ref": "1", "before": -1}, "--before must be at least 0 (got -1)"),
        ("ask", {"question": "hi", "history": "not a list"}, "history must be a list of strings"),
        ("nope", {}, "unknown command 'nope'"),
    ],
)
def test_a_malformed_request_is_refused_before_any_handler_runs(
    cmd: str, args: dict[str, Any], says: str, tmp_path: Path
) -> None:
    rt = Runtime(load_config(tmp_path / "nothing-indexed"))
    with pytest.raises(CasperError) as info:
        handlers.run(rt, cmd, args)
    assert says in info.value.message and info.value.hint
    assert rt.loads == {}  # refused before the store or any model was opened
