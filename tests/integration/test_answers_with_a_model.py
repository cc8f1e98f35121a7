"""Answers with a model attached, as a new user meets them: the cases a real small model
(SmolLM2-135M through `mlx_lm.server`) produced on the demo, replayed by a scripted model server
that answers exactly what that model wrote, every time.

What the reader sees of a cited message is that message (tests/attributions.py judges each
line against the store); a count the stats know is the stats' count, with or without a model;
when the model's answer is not used, the reader gets the search answer `--no-llm` gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from casper.agent.quotes import MARK, MARKS
from casper.store.db import Store
from tests.attributions import false_attributions, store_lookup
from tests.helpers import use_fake_search_models
from tests.model_servers import (
    LOOPBACK,
    Seen,
    chunk,
    scripted_server,
    send_json,
    send_sse,
    usage_chunk,
)

pytestmark = pytest.mark.allow_hosts(LOOPBACK)
runner = CliRunner()
Turn = str | dict[str, Any]  # the model's text, or one tool call {"name":…, "arguments":…}


def model_server(
    *turns: Turn, finish: str = "stop"
) -> Callable[[BaseHTTPRequestHandler, Seen], None]:
    """A model server whose n-th reply is turns[n] (the last one again once they run out)."""
    posts: list[Seen] = []

    def reply(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        if seen.method == "GET":
            send_json(handler, 200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
            return
        posts.append(seen)
        turn = turns[min(len(posts), len(turns)) - 1]
        if isinstance(turn, dict):
            function = {"name": turn["name"], "arguments": json.dumps(turn["arguments"])}
            call = {"index": 0, "id": f"call_{len(posts)}", "type": "function",
                    "function": function}  # fmt: skip
            events = [chunk(tool_calls=[call]), chunk(finish="tool_calls")]
        else:
            events = [chunk(turn), chunk(finish=finish)]
        send_sse(handler, [*events, usage_chunk(9, 9)])

    return reply


def ask(home: Path, question: str, *extra: str, server: Any = None) -> tuple[dict, str]:
    """`casper ask QUESTION --json` on the demo, through `server` when given."""
    model = ["--base-url", server.base_url, "--model", "m"] if server is not None else []
    result = runner.invoke(app(), ["ask", question, "--json", "--home", str(home), *extra, *model])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def judged(home: Path, doc: dict) -> list[str]:
    store = Store.open(home / "casper.sqlite", create=False)
    return false_attributions(doc["answer"], store_lookup(store, _tz(home)), MARKS)


def _tz(home: Path) -> ZoneInfo:
    from casper.config import load_config
    from casper.dates.zones import local_tz

    return local_tz(load_config(home).timezone)


@pytest.fixture(autouse=True)
def _fake_search(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_search_models(monkeypatch)


# ---- a false quote on a real id, with a real sender and date ------------------------------
PIE = "what did Sam say about the pumpkin pie?"
# what SmolLM2 answered: #2447 is the owner's "perfect, I'll do the turkey and stuffing",
# #2448 Sam's "should I bring wine too"; "YES. I'm in" is #2442, five messages up
PIE_ANSWER = (
    "[#2447] 2023-11-28 15:35 Sam Rivera: I'm in.\n[#2448] 2023-11-28 15:36 Sam Rivera: I'm in."
)


def test_a_false_quote_on_a_real_id_never_reaches_the_reader(home: Path) -> None:
    with scripted_server(model_server(PIE_ANSWER)) as server:
        doc, _ = ask(home, PIE, server=server)
    assert judged(home, doc) == []
    assert doc["grounding"] != "cited"  # not every citation held
    assert doc["misattributed_citations"] == [2447, 2448]


def test_chat_shows_the_messages_not_the_models_words_for_them(home: Path) -> None:
    with scripted_server(model_server(PIE_ANSWER)) as server:
        result = runner.invoke(
            app(), ["chat", "--home", str(home), "--base-url", server.base_url, "--model", "m"],
            input=f"{PIE}\n/quit\n",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())  # rich wraps long lines
    assert "Sam Rivera: I'm in." not in said
    assert "15:35" not in said and "15:36" not in said  # the model's times, not the messages'


# ---- a wrong line passes beside a marked one; the answer breaks off mid-citation ----------
CLIMBING = "where did we plan to go climbing?"
# #2606 Dana "anyone climbing saturday?" 17:41, #2607 Alex "yes! 7?", #2608 Dana "6:30 works"
CLIMBING_ANSWER = (
    "The crew planned to go climbing on Saturday:\n"
    "[#2606] Dana Okafor: anyone climbing saturday?\n"
    "[#2607] 2023-12-16 17:41 Dana Okafor: 7:30 works\n"
    "[#2608] 2023-12-16 17:49 Dana Okafor: the gym on 5th street\n"
    "[#2"
)


def test_each_line_is_judged_on_its_own_and_a_cut_off_answer_says_so(home: Path) -> None:
    context = {"name": "get_conversation_context",
               "arguments": {"message_id": "2607", "before": 3, "after": 3}}  # fmt: skip
    with scripted_server(model_server(context, CLIMBING_ANSWER, finish="length")) as server:
        doc, _ = ask(home, CLIMBING, "--chat", "Climbing crew", server=server)
    assert judged(home, doc) == []  # "7:30 works" is not #2607's, whatever #2608 says
    lines = doc["answer"].splitlines()
    on_2607 = [line for line in lines if "[#2607]" in line or "7:30 works" in line]
    assert on_2607 and all(MARK.strip() in line or "yes! 7?" in line for line in on_2607)
    # each line is judged on its own: the one that holds stands as it was written
    assert "[#2606] Dana Okafor: anyone climbing saturday?" in lines
    assert doc["grounding"] != "cited"
    assert not re.search(r"\[#?\d*\s*$", doc["answer"])  # no half citation at the end
    assert "cut off" in doc["answer"] and "cut_off" in doc["notices"]


# ---- numbers: what the stats say, whatever the model says ---------------------------------
def _figures(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*", text)


@pytest.mark.parametrize(
    ("question", "model_says", "wrong"),
    [
        ("how many messages with Sam in 2023?",
         "You exchanged 5 messages with Sam in 2023 [#2441].", r"\b5 messages"),
        ("who do I text the most?", "You text Mom the most: 900 messages.", r"\b900\b"),
        ("which month did I text Sam the most?",
         "Your busiest month with Sam was 2023-05, with 999 messages.", r"\b999\b"),
        ("when did I last talk to Alex?", "You last talked to Alex on 2024-01-01.",
         r"2024-01-01"),
    ],
)  # fmt: skip
def test_a_count_with_a_model_is_the_count_without_one(
    home: Path, question: str, model_says: str, wrong: str
) -> None:
    plain, _ = ask(home, question, "--no-llm")
    assert plain["grounding"] == "stats"
    with scripted_server(model_server(model_says)) as server:
        doc, _ = ask(home, question, server=server)
    assert doc["grounding"] == "stats"
    for figure in _figures(plain["answer"]):
        assert figure in doc["answer"], f"{figure} of the stats is not in {doc['answer']!r}"
    for line in doc["answer"].splitlines():
        assert not re.search(wrong, line) or MARK.strip() in line, line


def test_the_models_words_that_agree_with_the_stats_follow_them(home: Path) -> None:
    question = "how many messages with Sam in 2023?"
    plain, _ = ask(home, question, "--no-llm")
    found = re.search(r"sent ([\d,]+) messages and received ([\d,]+)", plain["answer"])
    assert found is not None
    sent, received = (int(n.replace(",", "")) for n in found.groups())
    words = f"So you and Sam exchanged {sent + received:,} messages one-to-one in 2023."
    with scripted_server(model_server(words)) as server:
        doc, _ = ask(home, question, server=server)
    assert doc["answer"] == f"{plain['answer']}\n\n{words}"
    assert "wrong_figure" not in doc["guards"]


def test_a_model_going_round_in_circles_adds_nothing_to_the_stats(home: Path) -> None:
    question = "how many messages did I exchange with Mom?"
    plain, _ = ask(home, question, "--no-llm")
    loop = "\n".join(["You can't have a message with messages in one-to-one chat."] * 6)
    with scripted_server(model_server(loop)) as server:
        doc, _ = ask(home, question, server=server)
    assert doc["answer"] == plain["answer"] and doc["grounding"] == "stats"


# ---- the fallback is the search answer --------------------------------------------------
BRING = "what did Sam say he would bring for Thanksgiving?"


def test_when_the_models_answer_is_not_used_the_reader_gets_the_search_answer(
    home: Path,
) -> None:
    plain, _ = ask(home, BRING, "--person", "Sam", "--no-llm")
    ungrounded = "Thanksgiving is a holiday in November, a time for family and food."
    with scripted_server(model_server(ungrounded)) as server:
        doc, _ = ask(home, BRING, "--person", "Sam", server=server)
    assert doc["grounding"] == "fallback"
    assert [c["rowid"] for c in doc["citations"]] == [c["rowid"] for c in plain["citations"]]
    cited = lambda d: re.findall(r"\[#(\d+)\]", d["answer"])  # noqa: E731
    assert cited(doc) == cited(plain)


def test_small_talk_the_model_cannot_answer_gets_no_search_results(home: Path) -> None:
    with scripted_server(model_server("")) as server:
        doc, _ = ask(home, "hi", server=server)
    assert doc["citations"] == [] and "[#" not in doc["answer"]


# ---- a model server that fails says which call failed -----------------------------------
def test_a_server_whose_model_list_breaks_is_named_with_the_call(home: Path) -> None:
    """`mlx_lm.server` started without `--model` answers GET /v1/models with a 200 and no
    body (it crashes scanning the Hugging Face cache)."""

    def reply(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with scripted_server(reply) as server:
        result = runner.invoke(
            app(), ["ask", PIE, "--json", "--home", str(home), "--base-url", server.base_url]
        )
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert "GET /v1/models" in said and "JSONDecodeError" not in said
    assert "--model" in said  # what to do about it
    assert json.loads(result.stdout)["citations"]  # answered from search, as always


def app():  # noqa: ANN201
    from casper.cli import app as casper

    return casper
