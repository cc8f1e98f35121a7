"""The citation check every answer passes: words an answer attributes to `[#rowid]` must be in
that message or its neighbours, in `ask` and `chat`, in-process and through a model server;
misquotes are removed and marked, or the answer falls back to search alone, said. Measured on
the demo corpus (bench/citations.py): every misattributed case caught, no faithful one flagged,
and the committed report is the one this code makes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from casper.agent.answer import MISQUOTED
from casper.agent.quotes import MARK
from casper.protocols import ChatMessage, Reply, ToolSpec
from casper.store.db import Store
from tests.model_servers import chunk, scripted_server, send_sse, usage_chunk
from tests.service_helpers import fake_factory, runner

QUESTION = "when did Sam and I plan Thanksgiving?"
LOOP = "- Alex Chen: same energy as me and the dentist"


def misquote(prompt: str, loop: bool = True) -> str:
    """A reported answer: two shown ids given words from other conversations, then (`loop`)
    one line eight times, with a new id each time."""
    lines = re.findall(r"\[#(\d+)\]([^\n]*)", prompt)
    shown = [n for n, _ in lines if n != "1234"]  # not the prompt's example id
    first, second = shown[0], shown[-1]
    lines = [
        "You planned Thanksgiving:",
        f"[#{first}] … Sam Rivera: I'm planning to celebrate my 2023-11-28th birthday…",
        # (the demo has "same energy as me and the dentist" right next to Thanksgiving: a
        # quote of the cited conversation, which the check lets through; bench/citations.py
        # has the reported misquote on an id far from it)
        f"[#{second}] Alex Chen: the boat gets painted purple on Sunday",
    ]
    lines += [f"{LOOP} [#{n}]" for n in (shown * 8)[:8]] if loop else []
    return "\n".join(lines)


class MisquotingEngine:
    name = "misquoting"

    def __init__(self, loop: bool = True) -> None:
        self.loop = loop

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        return Reply(misquote("\n".join(m.content for m in messages), self.loop))


class FaithfulEngine:
    """Quotes the first message it was shown, word for word, and paraphrases another."""

    name = "faithful"

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        prompt = "\n".join(m.content for m in messages)
        rowid, text = re.findall(r"\[#(\d+)\] [^\n]*?\w: ([^\n]+)", prompt)[0]
        return Reply(f'They wrote "{text}" [#{rowid}], and that settled it.')


def _engine(monkeypatch: pytest.MonkeyPatch, engine: object) -> None:
    import casper.backends.factory as factory

    fake_factory(monkeypatch)
    monkeypatch.setattr(factory, "make_engine", lambda cfg: engine)


@pytest.mark.parametrize("loop", [True, False])
def test_misquotes_and_loops_never_reach_the_chat_screen(
    home: Path, monkeypatch: pytest.MonkeyPatch, loop: bool
) -> None:
    _engine(monkeypatch, MisquotingEngine(loop))
    result = runner.invoke(app(), ["chat", "--home", str(home)], input=f"{QUESTION}\n/quit\n")
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())  # rich wraps long lines
    assert all(MARK.strip() in part for part in said.split("birthday…")[1:])  # marked
    assert result.stdout.count("Alex Chen: same energy as me") <= 1
    if not loop:  # the loop's guard answers first; a misquote alone: said, search answers
        assert MISQUOTED in said and "misquoted" in " ".join(result.stderr.split())


def test_ask_json_names_the_misquoted_ids_and_the_guard(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _engine(monkeypatch, MisquotingEngine(loop=False))
    doc = _ask(home)
    assert "misattributed_quote" in doc["guards"]
    assert doc["misattributed_citations"] and doc["grounding"] == "search_only"
    assert "misattributed_quote" in doc["notices"]
    cited = {c["rowid"] for c in doc["citations"]}
    store = Store.open(home / "casper.sqlite", create=False)
    for rowid in cited:  # what is still cited is the search's own lines, word for word
        message = store.message(rowid)
        assert message is not None and message.text in doc["answer"]


def test_a_faithful_quote_keeps_its_citation(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _engine(monkeypatch, FaithfulEngine())
    doc = _ask(home)
    assert doc["grounding"] == "cited" and doc["misattributed_citations"] == []
    assert "misattributed_quote" not in doc["guards"] and MARK not in doc["answer"]
    assert doc["citations"]


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_through_a_model_server_the_same_check_runs(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers import use_fake_search_models

    use_fake_search_models(monkeypatch)

    def reply(handler, seen) -> None:  # noqa: ANN001
        if seen.method == "GET":
            from tests.model_servers import send_json

            send_json(handler, 200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
            return
        prompt = "\n".join(str(m.get("content") or "") for m in seen.body["messages"])
        answer = misquote(prompt, loop=False)
        send_sse(handler, [chunk(answer), chunk(finish="stop"), usage_chunk(9, 9)])

    with scripted_server(reply) as server:
        doc = _ask(home, "--base-url", server.base_url, "--model", "m")
    assert doc["llm_server"] and doc["misattributed_citations"]
    assert "misattributed_quote" in doc["guards"] and doc["grounding"] == "search_only"


def test_the_measured_catch_and_false_flag_rates_are_the_committed_ones(home: Path) -> None:
    from bench import citations

    store = Store.open(home / "casper.sqlite", create=False)
    cases = citations.build_cases(store)
    bad = [c for c in cases if not c.faithful]
    good = [c for c in cases if c.faithful]
    assert len(bad) >= 30 and len(good) >= 30
    missed = [c.answer for c in bad if not citations.judge(store, c)]
    flagged = [c.answer for c in good if citations.judge(store, c)]
    assert missed == [] and flagged == []
    made = citations.report(store)
    assert citations.RESULTS.read_text() == made, (
        "regenerate: python -m bench.citations --home <an indexed demo home>"
    )
    reliability = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    figures = [line for line in made.splitlines() if line.startswith("- ")]
    assert len(figures) == 2 and all(line in reliability for line in figures)


def _ask(home: Path, *extra: str) -> dict:
    result = runner.invoke(app(), ["ask", QUESTION, "--json", "--home", str(home), *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def app():  # noqa: ANN201
    from casper.cli import app as casper

    return casper
