"""`casper serve` over a real Unix socket: lifecycle, identical documents, streaming, freshness.

The service runs as its own process (tests/service_server.py: the real server with the test
fakes as models); this process is the client, through the same code the CLI uses.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from casper.errors import CasperError
from casper.service import client
from tests.service_helpers import cli, fake_factory, index_demo, socket_file, status

COMMANDS = [
    ("search", "wifi password climbing gym", "--json", "-k", "3"),
    ("search", "dentist", "--person", "Priya", "--since", "2023-01-01", "--json"),
    ("search", "寿司", "--mode", "bm25", "--json"),
    ("contacts", "--json"),
    ("stats", "Priya", "--json"),
    ("stats", "Priya", "--since", "2024-01-01", "--until", "2024-06-30", "--json"),
    ("show", "1481", "--before", "2", "--after", "2", "--json"),
]


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_factory(monkeypatch)


def test_start_status_stop_and_permissions(home: Path, services) -> None:  # noqa: ANN001
    proc = services.start(home)
    doc = status(home)
    assert doc["running"] and doc["pid"] == proc.pid and doc["requests"] == 0
    assert doc["loaded"]["embedder"] is None  # nothing loads before it is needed
    sock = socket_file(home)
    assert stat.S_ISSOCK(os.stat(sock).st_mode)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(home / "service.pid").st_mode) == 0o600
    assert client.stop(home) == proc.pid
    assert proc.wait(timeout=10) == 0
    assert not sock.exists() and not (home / "service.pid").exists()
    assert status(home) == {"running": False, "data_dir": str(home)}


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_service_prints_exactly_the_in_process_document(
    home: Path,
    services,
    fakes,
    args: tuple[str, ...],  # noqa: ANN001
) -> None:
    services.start(home)
    here = cli(home, *args, service=False)
    there = cli(home, *args, service=True)
    assert json.loads(here)  # a real document, not an empty one
    assert there == here
    assert status(home)["requests"] == 1


def test_human_output_is_the_same_too(home: Path, services, fakes) -> None:  # noqa: ANN001
    services.start(home)
    for args in (("search", "wifi password"), ("show", "1481"), ("stats", "Sam")):
        assert cli(home, *args, service=True) == cli(home, *args, service=False)


def test_ask_streams_progress_then_the_document(home: Path, services, fakes) -> None:  # noqa: ANN001
    services.start(home)
    events: list[dict] = []
    doc = client.call(
        home, "ask", {"question": "what is the climbing gym wifi?"}, on_event=events.append
    )
    kinds = [e["event"] for e in events]
    assert kinds[:1] == ["loading"] and "step" in kinds and "token" in kinds
    tools = [e for e in events if e["event"] == "tool"]
    assert tools[0].get("prefetch") is True  # grounding: the search the question implies first
    tool = next(e for e in tools if not e.get("prefetch"))
    assert tool == {
        "event": "tool",
        "name": "search_messages",
        "arguments": {"query": "what is the climbing gym wifi?"},
    }
    done = next(e for e in events if e["event"] == "tool_done")
    assert done["ok"] is True and done["elapsed_s"] >= 0
    assert kinds.index("tool") < kinds.index("tool_done") < len(kinds)
    assert "".join(e["text"] for e in events if e["event"] == "token").strip() == doc["answer"]
    assert doc["tool_calls"][0]["name"] == "search_messages" and doc["citations"]
    # the same document as in-process, but for the clock
    here = json.loads(cli(home, "ask", "what is the climbing gym wifi?", "--json", service=False))
    there = json.loads(cli(home, "ask", "what is the climbing gym wifi?", "--json", service=True))
    clock = ("tokens_per_s", "first_token_s", "model_s", "tools_s")
    for doc in (here, there):
        doc.pop("elapsed_s"), doc.pop("load_s", None)
        doc["usage"] = {k: v for k, v in doc["usage"].items() if k not in clock}
    assert there == here
    # the model was built once for the two questions the service answered
    assert status(home)["loaded"]["loads"]["engine"] == 1


def test_eight_concurrent_clients_get_their_own_answers(home: Path, services, fakes) -> None:  # noqa: ANN001
    services.start(home)
    queries = ["wifi", "dentist", "thanksgiving", "pumpkin pie", "sushi", "gym", "birthday", "寿司"]
    expected = {q: json.loads(cli(home, "search", q, "--json", service=False)) for q in queries}
    got: dict[str, object] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(queries))

    def one(q: str) -> None:
        try:
            barrier.wait()
            got[q] = client.call(home, "search", {"query": q}, autostart=False)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(q,)) for q in queries]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert got == expected
    assert status(home)["by_command"]["search"] == len(queries)


def test_new_index_generation_is_served_without_restart(
    home: Path,
    services,
    fakes,
    indexed_template,  # noqa: ANN001
) -> None:
    import shutil

    from ingest.synthetic.bulk import append_messages

    src = home.parent / "src"
    shutil.copytree(indexed_template[1], src)
    proc = services.start(home)
    before = json.loads(cli(home, "contacts", "--json", service=True))
    generation = status(home)["index_generation"]
    added = append_messages(src / "chat.db", 300)
    index_demo(home, src)  # `casper index` in another process than the service
    after = json.loads(cli(home, "contacts", "--json", service=True))
    total = lambda doc: sum(p["sent"] + p["received"] for p in doc)  # noqa: E731
    # group messages count once per member they reach, so at least the 1:1 share is new
    assert total(after) > total(before) and added.rows - added.tapbacks > 0
    assert after == json.loads(cli(home, "contacts", "--json", service=False))
    # a new message can be shown and found by its own words, in the service as in-process
    new = next(
        doc
        for rowid in range(added.first_rowid, added.last_rowid + 1)
        if (doc := _show(home, rowid)) and len(doc["message"]["text"].split()) >= 3
    )
    text = new["message"]["text"]
    query = ("search", text, "--json", "-k", "8", "--mode", "vector", "--no-rerank", "--literal")
    served = cli(home, *query, service=True)
    assert served == cli(home, *query, service=False)
    rowids = [m["rowid"] for h in json.loads(served)["hits"] for m in h["messages"]]
    assert new["message"]["rowid"] in rowids
    doc = status(home)
    assert doc["index_generation"] != generation and doc["pid"] == proc.pid
    assert doc["loaded"]["loads"]["embedder"] == 1  # data reopened, models kept


def _show(home: Path, rowid: int) -> dict | None:
    try:
        return client.call(home, "show", {"ref": str(rowid)}, autostart=False)
    except CasperError:  # a tapback or a row folded into another message
        return None
