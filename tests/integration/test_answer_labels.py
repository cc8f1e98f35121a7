"""Every label an answer carries is exact: one-to-one counts are one-to-one, group
messages said apart; `grounding` names what happened; notices are not guards; model calls are
the requests the engine sent; the search that ran first is in `tool_calls`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from casper.backends.factory import make_engine as real_make_engine
from casper.store.db import Store
from tests.model_servers import chunk, scripted_server, send_json, send_sse, usage_chunk
from tests.service_helpers import runner


@pytest.fixture(autouse=True)
def _fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.service_helpers import fake_factory

    fake_factory(monkeypatch)


def _cli(home: Path, *args: str):  # noqa: ANN202
    from casper.cli import app

    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 0, result.output
    return result


def _count(store: Store, sender: str, groups: bool, person: str) -> int:
    """`sender`'s messages in our 1:1 chats with `person`, or in the groups we share: the ones
    they are in, and the ones they wrote in (a member who left is gone from the list only)."""
    wrote = {
        c
        for (c,) in store.conn.execute(
            "SELECT DISTINCT chat_id FROM messages WHERE sender = ? AND kind != 'system'", (person,)
        )
    }
    chats = [
        c.id
        for c in store.chats()
        if (c.is_group and (person in c.members or c.id in wrote))
        or (not groups and c.members == (person,))
        if c.is_group == groups
    ]
    marks = ",".join("?" * len(chats))
    sql = f"SELECT count(*) FROM messages WHERE kind != 'system' AND sender = ? AND chat_id IN ({marks})"  # noqa: E501
    return int(store.conn.execute(sql, [sender, *chats]).fetchone()[0]) if chats else 0


def test_a_count_with_someone_says_one_to_one_and_groups_apart(home: Path) -> None:
    store = Store.open(home / "casper.sqlite", create=False)
    sam = store.resolve_person("Sam Rivera")
    doc = json.loads(
        _cli(home, "ask", "how many messages with Sam Rivera?", "--no-llm", "--json").stdout
    )
    one_sent, one_received = (
        _count(store, "me", False, sam.id),
        _count(store, sam.id, False, sam.id),
    )
    group_sent, group_received = (
        _count(store, "me", True, sam.id),
        _count(store, sam.id, True, sam.id),
    )
    assert group_received > 0  # the demo's Sam writes in groups too: the case to say apart
    figures = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", doc["answer"])]
    assert figures == [one_sent, one_received, group_sent, group_received]
    assert "one-to-one" in doc["answer"] and "group" in doc["answer"]
    assert doc["guards"] == [] and doc["notices"] == ["no_llm"] and doc["grounding"] == "stats"
    stats = json.loads(_cli(home, "stats", "Sam Rivera", "--json").stdout)
    assert stats["chats"] == {
        "sent_one_to_one": one_sent,
        "received_one_to_one": one_received,
        "sent_in_groups": group_sent,
        "received_in_groups": group_received,
    }


def test_contacts_count_the_owners_group_messages_apart(home: Path) -> None:
    from casper.cli.render import contacts_notes

    store = Store.open(home / "casper.sqlite", create=False)
    rows = json.loads(_cli(home, "contacts", "--json").stdout)
    for row in rows:
        assert row["sent_in_groups"] == _count(store, "me", True, row["id"])
    assert any(r["sent_in_groups"] for r in rows)
    only_groups = [r for r in rows if not r["sent"] and r["sent_in_groups"]]
    assert only_groups  # the demo's Dana: you write to her in groups only
    screen = " ".join(_cli(home, "contacts").stdout.split())
    for row in only_groups:
        assert f"{row['name']}: sent 0 one-to-one; {row['sent_in_groups']:,} in groups" in screen
    assert contacts_notes(rows)


def test_a_word_in_no_message_is_nothing_found_not_cited(home: Path) -> None:
    doc = json.loads(_cli(home, "ask", "xylophone", "--no-llm", "--json").stdout)
    assert doc["words_not_found"] == ["xylophone"] and doc["grounding"] == "nothing_found"


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_model_calls_are_the_requests_the_server_received(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import casper.backends.factory as factory

    # the real engine factory: an OpenAIEngine on the scripted server
    monkeypatch.setattr(factory, "make_engine", real_make_engine)
    loop = "It was planned. " * 4  # a loop: the synthesis pass is one more request

    def reply(handler, seen) -> None:  # noqa: ANN001
        if seen.method == "GET":
            send_json(handler, 200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
            return
        text = loop if len(server.posts()) % 2 == 1 else "Nothing about that, sorry."
        send_sse(handler, [chunk(text), chunk(finish="stop"), usage_chunk(9, 9)])

    with scripted_server(reply) as server:
        question = "when did Sam and I plan Thanksgiving?"
        args = ("ask", question, "--base-url", server.base_url, "--model", "m")
        doc = json.loads(_cli(home, *args, "--json").stdout)
        said = _cli(home, *args).stderr
        posts = len(server.posts())
    assert "repetitive_answer" in doc["guards"]
    assert doc["usage"]["model_calls"] == 2 and posts == 4  # two asks, two requests each
    assert "2 model calls" in " ".join(said.split())
    assert [c["prefetch"] for c in doc["tool_calls"]][:1] == [True]  # the search that ran
