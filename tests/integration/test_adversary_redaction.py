"""Under `privacy = "redacted"`, what an adversary's probes got past the tools
(bench/results/adversary.md), planted in the tiny demo and read back through the handlers
`casper mcp` uses: a phone in superscript, circled or marked digits, with no-break spaces or
one group a line; a link with an ideographic full stop or in fullwidth letters; an email with a
fullwidth at; a Title-case `.Com`. None shows in a result's text or its citations, in a body or
in a group's name; an amount stays as written. Real store and index; fake models."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from casper.app import handlers
from casper.app.runtime import Runtime
from casper.config import load_config
from ingest.synthetic.writer import ChatDbWriter
from tests.helpers import index_home, use_fake_search_models

# (its word, the body, what no result may show of it)
PLANTED = (
    ("supphone", "supphone ⁴¹⁵⁵⁵⁵⁰¹⁹⁹ ok", "⁴¹⁵"),
    ("circphone", "circphone ④①⑤-⑤⑤⑤-⓪①⑨⑨ ok", "④①⑤"),
    ("markphone", "markphone 4\u03015\u03015\u0301 555 0199 ok", "0199"),
    ("nbspphone", "nbspphone 415\u00a0555\u00a00199 ok", "0199"),
    ("splitphone", "splitphone 415\n555\n0199 ok", "0199"),
    ("idealink", "idealink evil\u3002com/x ok", "evil"),
    ("widelink", "widelink ｅｖｉｌ．ｃｏｍ ok", "ｅｖｉｌ"),
    ("widemail", "widemail dana＠example.com ok", "dana"),
    ("titlelink", "titlelink Evil.Com ok", "Evil"),
)
GROUP = "Call ⁴¹⁵⁵⁵⁵⁰¹⁹⁹ crew"
AMOUNT = "amountkeep paid $1,234.56 ok"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ingest.synthetic import build_tiny_corpus

    root = tmp_path_factory.mktemp("adversary-redaction")
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        corpus = build_tiny_corpus(root / "src")
        start = datetime(2024, 3, 1, 12, tzinfo=UTC)
        with ChatDbWriter(corpus.chat_db, seed=46) as w:
            stranger = w.add_handle("+13125550155")
            chat = w.add_chat([stranger])
            for hour, (_, body, _) in enumerate(PLANTED):
                w.add_message(chat, body, from_me=False, handle=stranger,
                              ts=start + timedelta(hours=hour))  # fmt: skip
            w.add_message(chat, AMOUNT, from_me=False, handle=stranger,
                          ts=start + timedelta(days=1))  # fmt: skip
            other = w.add_handle("+13125550166")
            group = w.add_chat([stranger, other], display_name=GROUP, group=True)
            w.add_message(group, "grpphone hello", from_me=False, handle=other,
                          ts=start + timedelta(days=2))  # fmt: skip
        index_home(root / "home", corpus)
    return root / "home"


def _tool(home: Path, privacy: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return handlers.run(Runtime(load_config(home, privacy=privacy)), "tool",
                        {"name": name, "arguments": arguments})  # fmt: skip


def _shown(doc: dict[str, Any]) -> str:
    return doc["text"] + "\n" + json.dumps(doc["citations"], ensure_ascii=False)


@pytest.mark.parametrize(("word", "body", "secret"), PLANTED, ids=[p[0] for p in PLANTED])
def test_what_got_past_the_tools_is_masked(
    home: Path, word: str, body: str, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    found = _tool(home, "full", "search_messages", {"query": word, "limit": 1})
    rowid = next(c["id"] for c in found["citations"] if word in c["text"])
    assert secret in _shown(found)  # the full view shows it: the test would see it
    for name, arguments in (
        ("search_messages", {"query": word, "limit": 3}),
        ("get_conversation_context", {"message_id": str(rowid), "before": 1, "after": 1}),
    ):
        shown = _shown(_tool(home, "redacted", name, arguments))
        assert word in shown and secret not in shown, (name, shown[:800])


def test_a_group_named_with_a_phone_and_an_amount(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    shown = _shown(_tool(home, "redacted", "search_messages", {"query": "grpphone"}))
    assert "grpphone" in shown and "Call [phone] crew" in shown and "⁴¹⁵" not in shown, shown
    shown = _shown(_tool(home, "redacted", "search_messages", {"query": "amountkeep"}))
    assert "$1,234.56" in shown, shown
