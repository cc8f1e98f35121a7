"""`casper mcp` against a line too big to read (bench/results/adversary.md): 60 MB of short
strings in one request — no string over the 2,000-character cap — took 13 s to parse and
held every other call meanwhile. A line over 1 MiB is refused unparsed (`-32600`, to the id
written at either end of it) and the call after it is answered as quickly as any other."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.integration.test_mcp_wire import REPLY_WITHIN_S, RawClient, planted_client

pytestmark = pytest.mark.slow  # a casper mcp process of its own and 60 MB through its stdin


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    with planted_client(tmp_path_factory.mktemp("mcp-adversary")) as raw:
        yield raw


def test_a_60_mb_line_of_short_strings_holds_nothing(client: RawClient) -> None:
    pad = b",".join([b'"a"'] * 15_000_000)
    line = (b'{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":{"name":"list_contacts",'
            b'"arguments":{"name_like":"x","pad":[' + pad + b"]}}}")  # fmt: skip
    started = time.perf_counter()
    client.send(line)
    reply, _ = client.reply(60.0)
    refused = time.perf_counter() - started
    assert reply is not None and reply["id"] == 9001, reply  # to its request, unparsed
    assert reply["error"]["code"] == -32600 and "bytes" in reply["error"]["message"], reply
    assert refused < 5.0, f"{refused:.1f} s to refuse"
    started = time.perf_counter()
    answer = client.call("list_contacts", {"limit": 1})
    assert answer["result"]["isError"] is False, json.dumps(answer)[:300]
    assert time.perf_counter() - started < REPLY_WITHIN_S * 2
