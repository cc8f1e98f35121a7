"""The disclosure ceiling over the demo corpus (a few of its messages carry the cast's phone
numbers, emails, links, codes and addresses, as real texts do): under `redacted` no MCP tool
result shows any of them, under `aggregate` none shows any message's text, a request cannot
loosen config.toml's ceiling, and a model server on another machine reads its tool results
through the same ceiling. Real store and index; fake embedder, reranker and engine."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import casper.backends.factory as factory
from casper.app import handlers
from casper.app.runtime import Runtime
from casper.config import load_config, remember
from ingest.synthetic import build_demo_corpus
from ingest.synthetic.cast import PEOPLE, SAM_PATEL
from ingest.synthetic.writer import ChatDbWriter
from tests.fakes import ScriptedEngine
from tests.helpers import index_home, use_fake_search_models

pytestmark = pytest.mark.slow  # indexes its own demo corpus (≈ 10 s), then ≈ 30 s of calls

PLANTED = [
    "my new number is (415) 555-0132, or try +1 510 555 0186",
    "email me at Sam.Rivera@Example.com or dana.okafor@example.org",
    "tickets: https://tickets.example.com/order/88213?ref=sam and www.granitearch.com/hours",
    "the door code is 48213, wifi 5512 9901",
    "party at 1600 Pennsylvania Ave, then 12 Ocean Drive",
    "mom's other line 617-555-0143; priya +44 20 7946 0958; alex 415.555.0199",
]
URLS = ["https://tickets.example.com/order/88213?ref=sam", "www.granitearch.com/hours"]


def _secrets() -> list[str]:
    """Every phone, email and URL of the demo, in every form it is written in."""
    out: set[str] = set(URLS)
    for spec in (*PEOPLE, SAM_PATEL):
        for phone in spec.card.phones if spec.card else ():
            out.add(phone)
            out.add(re.sub(r"\D", "", phone)[-10:])  # the digits, however they are spaced
        for email in spec.card.emails if spec.card else ():
            out.update((email, email.lower()))
        for address, *_ in spec.handles:
            out.add(address)
    return sorted(out, key=len, reverse=True)


SECRETS = _secrets()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = build_demo_corpus(tmp_path_factory.mktemp("privacy") / "src")
    with ChatDbWriter(corpus.chat_db) as writer:
        chats = writer.conn.execute(
            "SELECT j.chat_id, j.handle_id FROM chat_handle_join j ORDER BY j.chat_id"
        ).fetchall()
        for i, text in enumerate(PLANTED):
            chat, handle = chats[i % len(chats)]
            writer.add_message(chat, text, from_me=i % 2 == 0, handle=handle,
                               ts=1_700_000_000 + 3600 * i, body="attributed")  # fmt: skip
    home = tmp_path_factory.mktemp("privacy") / "home"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(home, corpus, "--json")
    return home


@pytest.fixture
def runtime(home: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    use_fake_search_models(monkeypatch)

    def make(privacy: str) -> Runtime:
        return Runtime(load_config(home, privacy=privacy))

    return make


def _bodies(rt: Runtime) -> list[str]:
    rows = rt.store().conn.execute("SELECT text FROM messages WHERE length(text) >= 12")
    return [text for (text,) in rows]


def _calls(rt: Runtime, rowid: int, words: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("search_messages", {"query": words}),
        ("get_conversation_context", {"message_id": str(rowid), "before": 3, "after": 3}),
        ("list_contacts", {}),
        ("get_contact_stats", {"person": "Jordan"}),
        ("get_message_volume_by_period",
         {"start_date": "2022-01-01", "end_date": "2024-12-31", "period": "year"}),
    ]  # fmt: skip


def _shown(doc: dict[str, Any]) -> str:
    return doc["text"] + "\n" + json.dumps(doc["citations"], ensure_ascii=False)


def _planted_and_some(rt: Runtime) -> list[tuple[int, str]]:
    rows = rt.store().conn.execute("SELECT rowid, text FROM messages ORDER BY rowid").fetchall()
    planted = [(r, t) for r, t in rows if t in PLANTED]
    assert len(planted) == len(PLANTED)
    return planted + rows[:: max(len(rows) // 60, 1)]


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_redacted_shows_no_phone_email_or_url_of_the_demo(runtime, data) -> None:  # noqa: ANN001
    rt = runtime("redacted")
    rowid, text = data.draw(st.sampled_from(_planted_and_some(rt)))
    words = " ".join(data.draw(st.lists(st.sampled_from(text.split()), min_size=1, max_size=4)))
    for name, arguments in _calls(rt, rowid, words):
        doc = handlers.run(rt, "tool", {"name": name, "arguments": arguments})
        shown = _shown(doc)
        leaked = [s for s in SECRETS if s in shown or s in re.sub(r"\D", "", shown)]
        assert not leaked, (name, arguments, leaked, doc["text"][:500])
        if name == "get_conversation_context":
            assert f"[#{rowid}]" in doc["text"]  # ids stay: the client can still cite


def test_every_planted_message_is_masked_in_every_tool(runtime) -> None:  # noqa: ANN001
    rt = runtime("redacted")
    for rowid, text in _planted_and_some(rt)[: len(PLANTED)]:
        for name, arguments in _calls(rt, rowid, text):
            shown = _shown(handlers.run(rt, "tool", {"name": name, "arguments": arguments}))
            leaked = [s for s in SECRETS if s in shown or s in re.sub(r"\D", "", shown)]
            assert not leaked, (name, arguments, leaked)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_aggregate_shows_no_message_text(runtime, data) -> None:  # noqa: ANN001
    rt = runtime("aggregate")
    bodies = _bodies(rt)
    rowid, text = data.draw(st.sampled_from(_planted_and_some(rt)))
    words = " ".join(data.draw(st.lists(st.sampled_from(text.split()), min_size=1, max_size=4)))
    for name, arguments in _calls(rt, rowid, words):
        doc = handlers.run(rt, "tool", {"name": name, "arguments": arguments})
        shown = _shown(doc)
        assert not [b for b in bodies if b in shown], (name, arguments)
        assert all(c["text"] == "" for c in doc["citations"])
        if name == "get_conversation_context":
            assert f"[#{rowid}]" in doc["text"] and "message text is withheld" in doc["text"]


def test_full_shows_the_text_and_a_request_cannot_loosen_the_setting(runtime) -> None:  # noqa: ANN001
    planted = PLANTED[1]
    args = {"name": "search_messages", "arguments": {"query": "email me at Sam.Rivera"}}
    full = handlers.run(runtime("full"), "tool", args)
    assert planted in _shown(full)  # the test would see a leak: the text is findable
    looser = handlers.run(runtime("redacted"), "tool", {**args, "privacy": "full"})
    assert "Sam.Rivera@Example.com" not in _shown(looser) and "[email]" in looser["text"]
    stricter = handlers.run(runtime("full"), "tool", {**args, "privacy": "aggregate"})
    assert "email me" not in _shown(stricter) and "withheld" in stricter["text"]


def test_a_model_on_another_machine_reads_tool_results_through_the_ceiling(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    call = json.dumps({"name": "search_messages", "arguments": {"query": "email me at"}})
    engines: list[ScriptedEngine] = []

    def make_engine(cfg: Any) -> ScriptedEngine:
        engines.append(ScriptedEngine(f"<tool_call>{call}</tool_call>", "Done."))
        return engines[-1]

    monkeypatch.setattr(factory, "make_engine", make_engine)

    def tool_texts(privacy: str, base_url: str) -> str:
        cfg = load_config(home, privacy=privacy, allow_remote_llm=True)
        handlers.run(Runtime(cfg), "ask", {"question": "what is Sam's email?",
                                           "base_url": base_url})  # fmt: skip
        return "\n".join(m.content for c in engines[-1].calls for m in c.messages
                         if m.role == "tool")  # fmt: skip

    remote = tool_texts("redacted", "http://models.example.net/v1")
    assert "[email]" in remote and "Sam.Rivera@Example.com" not in remote
    local = tool_texts("redacted", "http://127.0.0.1:9/v1")  # this machine: the owner's reader
    assert "Sam.Rivera@Example.com" in local


def test_mcp_says_which_mode_it_serves() -> None:
    from casper.cli.mcp import serving_line

    assert serving_line("redacted", "full", "redacted").startswith(
        "casper mcp: privacy redacted (privacy = 'redacted' in config.toml (--privacy full "
        "cannot loosen it))"
    )
    assert "no message text" in serving_line("full", "aggregate", "aggregate")


def test_remember_keeps_the_setting(tmp_path: Path) -> None:
    remember(tmp_path, privacy="aggregate")
    assert load_config(tmp_path).privacy == "aggregate"
