"""`casper mcp` on the wire against a client that sends what JSON-RPC does not allow: a request
whose id is an object, an array, a fraction, a bool or null is answered (`-32600`, id null)
instead of being taken for a notification and never answered; a 20 MB `query` is refused
(`-32602`) at once, and the call after it is answered as quickly as any other."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.integration.test_mcp_wire import REPLY_WITHIN_S, RawClient, planted_client

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    with planted_client(tmp_path_factory.mktemp("mcp-limits")) as raw:
        yield raw


@pytest.mark.parametrize("ident", ['{"a": 1}', "[1, 2]", "1.5", "true", "null"])
@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
def test_a_request_with_an_id_it_cannot_answer_to_gets_a_reply(
    client: RawClient, ident: str, method: str
) -> None:
    params = '{"name": "list_contacts", "arguments": {}}' if method == "tools/call" else "{}"
    client.send(f'{{"jsonrpc": "2.0", "id": {ident}, "method": "{method}", '
                f'"params": {params}}}'.encode())  # fmt: skip
    reply, _ = client.reply(REPLY_WITHIN_S)
    assert reply is not None, "no reply: the client would wait forever"
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply
    assert client.call("list_contacts", {"limit": 1})["result"]["isError"] is False


def test_a_20_mb_query_is_refused_at_once_and_holds_nothing(client: RawClient) -> None:
    query = "divorce lawyer " * (20_000_000 // 15)
    line = {"jsonrpc": "2.0", "id": 501, "method": "tools/call",
            "params": {"name": "search_messages", "arguments": {"query": query}}}  # fmt: skip
    started = time.perf_counter()
    client.send(json.dumps(line).encode())
    reply, _ = client.reply(10.0)
    refused = time.perf_counter() - started
    assert reply is not None and reply["id"] == 501, "no reply within 10 s"
    # past the 1 MiB line cap: refused unparsed, to its own id (a shorter query past the
    # 2,000-character cap gets -32602: tests/unit/test_mcp_limits.py)
    assert reply["error"]["code"] == -32600 and "bytes" in reply["error"]["message"], reply
    assert refused < 5.0, f"{refused:.1f} s to refuse"
    started = time.perf_counter()
    assert client.call("search_messages", {"query": "zorblax"})["result"]["isError"] is False
    assert time.perf_counter() - started < REPLY_WITHIN_S * 2
