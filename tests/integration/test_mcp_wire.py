"""`casper mcp` as a client sees it on the wire: a raw subprocess written to line by line.

Every edge case gets its reply within 2 s (invalid JSON, a lone surrogate, bytes
that are not UTF-8, a batch, out-of-range numbers and dates, a 26-digit id, types and arguments
the schema does not allow), and the server keeps serving after them. Then the injection suite's
planted messages (tests/injection.py) through the real protocol: no forged line in the text a
client reads, no tool call in it, no `[#id]` line that is not one of the result's citations.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO, use_fake_search_models
from tests.injection import FORGED_ID, PROBES, build_planted_home, inspect

pytestmark = pytest.mark.slow
REPLY_WITHIN_S = 2.0


class RawClient:
    """`python -m tests.mcp_fakes` (casper mcp with the fake models) driven line by line."""

    def __init__(self, home: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "CASPER_SERVICE": "0"}
        args = [sys.executable, "-m", "tests.mcp_fakes", "--home", str(home), "--no-service"]
        self.errors = open(home.parent / "mcp-wire-stderr.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
            env=env, cwd=str(REPO),
        )  # fmt: skip
        self.next_id = 0

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def reply(self, within: float) -> tuple[dict[str, Any] | None, float]:
        """The next line the server writes, parsed, and how long it took (None: none came)."""
        assert self.proc.stdout is not None
        started = time.perf_counter()
        ready, _, _ = select.select([self.proc.stdout], [], [], within)
        if not ready:
            return None, within
        line = self.proc.stdout.readline()
        return json.loads(line), time.perf_counter() - started

    def call(self, name: str, arguments: Any, within: float = 30.0) -> dict[str, Any]:
        self.next_id += 1
        params = {"name": name, "arguments": arguments}
        self.send(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                              "params": params}).encode())  # fmt: skip
        reply, _ = self.reply(within)
        assert reply is not None and reply["id"] == self.next_id, reply
        return reply

    def start(self) -> None:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "raw", "version": "1"}}  # fmt: skip
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": hello}).encode())  # fmt: skip
        reply, _ = self.reply(60.0)
        assert reply is not None and reply["result"]["serverInfo"]["name"] == "casper"
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        self.call("list_contacts", {"limit": 1}, within=60.0)  # loads the store: warm now

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.errors.close()


@contextmanager
def planted_client(folder: Path) -> Iterator[RawClient]:
    """A running `casper mcp` over a home with planted messages (fake search models), as raw
    lines; closed after."""
    with pytest.MonkeyPatch.context() as patch:
        use_fake_search_models(patch)
        home = build_planted_home(folder)
    raw = RawClient(home)
    try:
        raw.start()
        yield raw
    finally:
        raw.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    with planted_client(tmp_path_factory.mktemp("mcp-wire")) as raw:
        yield raw


def _call(ident: int, name: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": name, "arguments": arguments}
    line = {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}
    return json.dumps(line).encode()


SEARCH = "search_messages"
VOLUME = "get_message_volume_by_period"
CONTEXT = "get_conversation_context"
# (what is sent, the id the reply must carry, what it must say: an error code or a tool error)
EDGES: list[tuple[str, bytes, int | None, str]] = [
    ("not JSON", b"this is not json", None, "-32700"),
    ("cut-off JSON", b'{"jsonrpc":"2.0","id":101,"method":', None, "-32700"),
    ("a lone surrogate", _call(102, SEARCH, {"query": "?"}).replace(b"?", b"\\ud800 x"), 102,
     "-32602"),
    ("bytes not UTF-8", _call(103, SEARCH, {"query": "?"}).replace(b"?", b"\xff\xfe x"), 103,
     "-32700"),
    ("a batch", b"[" + _call(104, SEARCH, {"query": "x"}) + b"]", None, "-32600"),
    ("no method", b'{"jsonrpc":"2.0","id":105}', 105, "-32600"),
    ("an unknown method", b'{"jsonrpc":"2.0","id":106,"method":"nope"}', 106, "-32601"),
    ("limit 1e309", _call(107, SEARCH, {"query": "x", "limit": 1}).replace(b'"limit": 1',
                                                                          b'"limit": 1e309'),
     107, "limit must be a whole number, not inf"),
    ("a 9999-12-31 range by day", _call(108, VOLUME, {"start_date": "0001-01-01",
     "end_date": "9999-12-31", "period": "day"}), 108, "the date 9999-12-31 is out of range"),
    ("a 26-digit id", _call(109, CONTEXT, {"message_id": "12345678901234567890123456"}), 109,
     "no message with id 12345678901234567890123456"),
    ("query 12345", _call(110, SEARCH, {"query": 12345}), 110,
     "query must be a string, not 12345"),
    ("limit '7'", _call(111, SEARCH, {"query": "x", "limit": "7"}), 111,
     "limit must be a whole number, not '7'"),
    ("an unknown argument", _call(112, SEARCH, {"query": "x", "colour": "red"}), 112,
     "unknown colour"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "raw", "ident", "says"), EDGES, ids=[e[0] for e in EDGES])
def test_every_edge_case_gets_a_reply_within_2_s(
    client: RawClient, case: str, raw: bytes, ident: int | None, says: str
) -> None:
    client.send(raw)
    reply, took = client.reply(REPLY_WITHIN_S)
    assert reply is not None, f"{case}: no reply within {REPLY_WITHIN_S} s"
    assert reply["id"] == ident
    if says.startswith("-32"):
        assert reply["error"]["code"] == int(says), reply
    else:
        assert reply["result"]["isError"] is True
        assert says in reply["result"]["content"][0]["text"], reply
    assert client.call("list_contacts", {"limit": 1})["result"]["isError"] is False  # serving


@pytest.mark.parametrize("probe", PROBES)
def test_a_planted_message_forges_nothing_a_client_reads(client: RawClient, probe: str) -> None:
    found = client.call(SEARCH, {"query": probe, "limit": 3})["result"]
    cited = {c["rowid"]: c for c in found["structuredContent"]["citations"]}
    planted = [rowid for rowid, c in cited.items() if probe in c["text"]]
    assert planted and FORGED_ID not in cited
    context = client.call(CONTEXT, {"message_id": str(planted[0]), "before": 2, "after": 2})
    for result in (found, context["result"]):
        text = result["content"][0]["text"]
        rowids = [c["rowid"] for c in result["structuredContent"]["citations"]]
        findings = inspect(text, rowids)
        assert (findings.forged_lines, findings.calls_in_text, findings.foreign_ids) == (0, 0, 0)
