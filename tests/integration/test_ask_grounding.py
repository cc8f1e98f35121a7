"""`casper ask` grounding through the CLI: prefetch, citation check, exemptions, abstention,
usage, and bad input (error + hint or a grounded answer, never a traceback)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from casper.agent import prompts
from casper.backends.factory import make_engine as real_make_engine
from casper.protocols import ChatMessage, Reply, ToolSpec
from tests.fakes import ScriptedEngine
from tests.integration.test_cli import fake_models, indexed, run  # noqa: F401

USAGE_KEYS = {
    "prompt_tokens",
    "completion_tokens",
    "tokens_per_s",
    "first_token_s",
    "model_s",
    "tools_s",
    "iterations",
    "model_calls",
}


class CitingEngine:
    """Answers by citing the first `[#rowid]` in its prompt, plus one id it never saw."""

    name = "citing"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        prompt = "\n".join(m.content for m in messages)
        self.prompts.append(prompt)
        shown = [n for n in re.findall(r"\[#(\d+)\]", messages[1].content) if n != "1234"]
        text = f"That was settled [#{shown[0]}] and [#987654]." if shown else "No idea."
        return Reply(text, prompt_tokens=100, completion_tokens=9, prompt_s=0.2, generation_s=0.3)


def ask_json(home: Path, *args: str) -> dict:
    result = run(home, "ask", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_prefetched_messages_are_cited_and_invented_ids_removed(indexed, fake_models) -> None:  # noqa: ANN001, F811
    home, _ = indexed
    engine = fake_models["engine"] = CitingEngine()
    data = ask_json(home, "what's the climbing gym wifi password?")
    assert prompts.EVIDENCE_HEADER in engine.prompts[0]  # evidence before the first model call
    # the search that ran before the model is in the trace, marked
    assert [(c["name"], c["prefetch"]) for c in data["tool_calls"]] == [("search_messages", True)]
    assert data["iterations"] == 1 and data["usage"]["model_calls"] == 1
    assert data["grounding"] == "cited" and data["invalid_citations"] == 1
    assert "987654" not in data["answer"] and len(data["citations"]) == 1
    assert f"[#{data['citations'][0]['rowid']}]" in data["answer"]
    assert set(data["usage"]) == USAGE_KEYS
    assert data["usage"]["prompt_tokens"] == 100 and data["usage"]["tokens_per_s"] == 30.0
    assert data["elapsed_s"] >= data["load_s"] >= 0


def test_greetings_need_no_messages_and_say_so(indexed, fake_models) -> None:  # noqa: ANN001, F811
    home, _ = indexed
    engine = fake_models["engine"] = ScriptedEngine("Hello! Ask me about your messages.")
    data = ask_json(home, "hi there")
    assert data["grounding"] == "exempt" and data["guards"] == [] and data["citations"] == []
    assert prompts.EVIDENCE_HEADER not in engine.calls[0].messages[1].content


def test_nothing_found_abstains_with_the_coverage(indexed, fake_models) -> None:  # noqa: ANN001, F811
    home, _ = indexed
    fake_models["engine"] = ScriptedEngine("I could not find anything about that.")
    data = ask_json(home, "what did the zeppelin mechanic say about quasars?")
    assert data["grounding"] == "abstained" and data["citations"] == []
    assert re.search(r"run from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d", data["answer"])


def test_an_answer_echoing_the_prompt_is_not_an_answer(indexed, fake_models) -> None:  # noqa: ANN001, F811
    home, _ = indexed

    class Echo(ScriptedEngine):
        def chat(self, messages, tools, on_token=None):  # noqa: ANN001, ANN201
            notes = messages[1].content.split("Notes:\n- ", 1)[-1]
            self.enqueue(notes.splitlines()[-1].removeprefix("- "))
            return super().chat(messages, tools, on_token)

    fake_models["engine"] = Echo()
    data = ask_json(home, "what's the climbing gym wifi password?", "--max-iterations", "2")
    assert "echoed_prompt" in data["guards"]
    assert data["grounding"] in ("cited", "abstained", "fallback", "nothing_found")
    assert "cover" not in data["answer"]


def test_text_output_has_a_usage_footer_unless_quiet(indexed, fake_models) -> None:  # noqa: ANN001, F811
    home, _ = indexed
    fake_models["engine"] = CitingEngine()
    loud = run(home, "ask", "what's the climbing gym wifi password?")
    assert loud.exit_code == 0 and re.search(
        r"1 model call\b.*100 prompt \+ 9 completion tokens",
        loud.stderr,  # casper.cli.live footer
    )
    fake_models["engine"] = CitingEngine()
    quiet = run(home, "ask", "what's the climbing gym wifi password?", "--quiet")
    assert quiet.exit_code == 0 and "tok/s" not in quiet.stderr and "Sources" in quiet.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["", "--no-llm"], "empty"),
        (["   ", "--no-llm"], "empty"),
        (["x" * 20_000, "--no-llm"], "20,000 characters"),
        (["when?", "--max-iterations", "0"], "--max-iterations must be at least 1"),
    ],
    ids=["empty", "blank", "20k", "zero-iterations"],
)
def test_bad_questions_are_errors_with_hints(indexed, args: list[str], needle: str) -> None:  # noqa: ANN001, F811
    home, _ = indexed
    result = run(home, "ask", *args)
    assert result.exit_code == 1
    assert f"error: {needle}" in result.output or needle in result.output
    assert "hint:" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("question", ["孩子们什么时候放假？", "متى موعد العشاء؟", "🍕🍕❓"])
def test_other_scripts_get_a_grounded_answer_or_an_abstention(
    indexed,  # noqa: ANN001, F811
    fake_models,  # noqa: ANN001, F811
    question: str,
) -> None:
    home, _ = indexed
    fake_models["engine"] = ScriptedEngine("我不知道", "لا أعرف")  # uncited, twice
    data = ask_json(home, question)
    assert data["grounding"] in ("cited", "abstained", "fallback", "nothing_found")
    assert bool(data["citations"]) == (data["grounding"] in ("cited", "fallback"))


def test_a_directory_that_is_not_a_model_falls_back_to_search(
    indexed,  # noqa: ANN001, F811
    fake_models,  # noqa: ANN001, F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import casper.backends.factory as factory

    monkeypatch.setattr(factory, "make_engine", real_make_engine)
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "config.json").write_text("{}")
    home, _ = indexed
    result = run(home, "ask", "climbing gym wifi password", "--model", str(not_a_model), "--json")
    assert result.exit_code == 0 and "Traceback" not in result.output
    # one notice line naming the folder (doctor has the whole reason), said once per data dir
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("notice: ")
    assert f"{not_a_model} is not a model folder" in result.stderr
    data = json.loads(result.stdout)
    assert data["guards"] == [] and data["notices"] == ["model_unavailable"] and data["citations"]
    again = run(home, "ask", "climbing gym wifi password", "--model", str(not_a_model), "--json")
    assert again.exit_code == 0 and "not a model folder" not in again.stderr
    assert json.loads(again.stdout)["notices"] == ["model_unavailable"]


def test_no_llm_counting_questions_use_the_stats_tools(indexed) -> None:  # noqa: ANN001, F811
    from zoneinfo import ZoneInfo

    from casper.app.runtime import open_store
    from casper.config import load_config
    from casper.store.stats_query import person_stats, top_people

    home, _ = indexed
    ranking = ask_json(home, "who do I text the most?", "--no-llm")
    counted = ask_json(home, "how many messages have I exchanged with Priya?", "--no-llm")
    store = open_store(load_config(home))
    try:
        names = store.names()
        top = top_people(store, ZoneInfo("UTC"), None, None, 5)
        priya = next(p for p, n in names.items() if n.startswith("Priya"))
        stats = person_stats(store, priya, ZoneInfo("UTC"))
    finally:
        store.close()
    assert ranking["grounding"] == "stats" and ranking["citations"] == []
    assert f"1. {names[top[0][0]]}: {top[0][1]:,} messages" in ranking["answer"]
    # the stats' `received` counts groups too; the sentence says the one-to-one part and the
    # groups apart, and together they are the stats' figure
    split = re.search(
        r"you sent ([\d,]+) messages and received ([\d,]+) in your one-to-one chat; in group "
        r"chats you both are in, you sent ([\d,]+) and they sent ([\d,]+)",
        counted["answer"],
    )
    assert split is not None, counted["answer"]
    sent, received, _, theirs = (int(n.replace(",", "")) for n in split.groups())
    assert sent == stats["sent"] and received + theirs == stats["received"]


def test_no_llm_prints_each_message_once(indexed) -> None:  # noqa: ANN001, F811
    home, _ = indexed
    result = run(home, "ask", "climbing gym wifi password", "--no-llm")
    assert result.exit_code == 0, result.output
    rowids = re.findall(r"#(\d+)", result.stdout)
    assert rowids and len(rowids) == len(set(rowids))
