"""The request parser, fuzzed: whatever bytes a client sends, the service's path (decode the line,
read the envelope, parse the command's arguments) ends in a typed request that holds only what a
handler accepts, or in one of the two errors the service answers (a line it cannot read, a
BadRequest); never anything else."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from casper.app.requests import (
    COMMANDS,
    MAX_CONTEXT,
    MAX_ITERATIONS,
    MAX_K,
    AskRequest,
    SearchRequest,
    ShowRequest,
    parse,
)
from casper.errors import BadRequest
from casper.service import protocol
from casper.service.server import _envelope
from casper.vocab import LEXICAL, MODES

# per test in the suite; `CASPER_FUZZ_EXAMPLES=20000 pytest tests/unit/test_requests_fuzz.py`
# for a longer run
EXAMPLES = int(os.environ.get("CASPER_FUZZ_EXAMPLES", "400"))
NAMES = st.sampled_from(
    ["query", "person", "chat", "since", "until", "k", "mode", "lexical", "rerank", "literal",
     "ref", "before", "after", "question", "model", "max_iterations", "no_llm", "history"]
)  # fmt: skip
TEXT = st.text(alphabet=st.characters(codec=None), max_size=40) | st.sampled_from(
    ["", "  ", "\udcff", "caf\udce9", "a\x00b", "hybrid", "bm25", "lancedb", "Sam"]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**13), max_value=10**13)
    | st.floats(allow_nan=True)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
ARGS = st.dictionaries(NAMES | TEXT, VALUES, max_size=6) | VALUES
CMDS = st.sampled_from([*COMMANDS, "ping", "status", "format-disk"]) | SCALARS


def check(request: Any) -> None:
    """What a handler may rely on, whatever arrived."""
    for name in getattr(request, "__slots__", ()):
        value = getattr(request, name)
        if isinstance(value, str):
            value.encode("utf-8")  # text, nothing a terminal or the socket cannot carry
            assert "\x00" not in value
    if isinstance(request, SearchRequest):
        assert request.query.strip() and request.mode in MODES
        assert request.lexical is None or request.lexical in LEXICAL
        assert request.k is None or (type(request.k) is int and 1 <= request.k <= MAX_K)
        assert type(request.rerank) is bool and type(request.literal) is bool
    if isinstance(request, ShowRequest):
        assert 0 <= request.before <= MAX_CONTEXT and 0 <= request.after <= MAX_CONTEXT
    if isinstance(request, AskRequest):
        assert request.question.strip() and type(request.no_llm) is bool
        iterations = request.max_iterations
        assert iterations is None or 1 <= iterations <= MAX_ITERATIONS
        assert all(isinstance(h, str) for h in request.history)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CMDS, ARGS)
@example("search", {"query": "caf\udce9"})
@example("search", {"query": "x", "k": True})
@example("ask", {"question": "hi", "history": [["nested"]]})
def test_any_arguments_parse_to_a_checked_request_or_a_bad_request(cmd: Any, args: Any) -> None:
    try:
        request = parse(cmd, args)
    except BadRequest as exc:
        protocol.encode({"event": "error", "message": exc.message, "hint": exc.hint})
        return
    check(request)


def _line(body: Any) -> bytes:
    return json.dumps(body).encode() + b"\n"


LINES = (
    st.binary(max_size=300)
    | st.builds(
        lambda c, a: _line({"version": protocol.build_id(), "cmd": c, "args": a}), CMDS, ARGS
    )  # fmt: skip
    | st.builds(lambda depth: b"[" * depth + b"]" * depth + b"\n", st.integers(0, 5_000))
    | st.builds(lambda v: _line(v), VALUES)
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES)
@example(b'{"cmd": "search", "args": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
@example(b'{"version": "x", "cmd": "search", "args": {"query": "\\udcff"}}\n')
@example(b"\xff\xfe\n")
def test_any_line_the_service_reads_ends_in_a_request_or_a_reply_it_can_send(line: bytes) -> None:
    try:
        decoded = protocol.decode(line)
    except ValueError:
        return  # answered "malformed request: not one JSON object on one line"
    envelope = _envelope(decoded)
    if isinstance(envelope, BadRequest):
        protocol.encode({"event": "error", "message": envelope.message, "hint": envelope.hint})
        return
    cmd, args, _version = envelope
    if cmd in ("ping", "status", "stop"):
        return
    try:
        check(parse(cmd, args))
    except BadRequest as exc:
        protocol.encode({"event": "error", "message": exc.message, "hint": exc.hint})
