"""casper.app.requests: the one place a request's arguments are checked (both transports)."""

from __future__ import annotations

from typing import Any

import pytest

from casper.app.requests import (
    MAX_K,
    AskRequest,
    ContactsRequest,
    SearchRequest,
    ShowRequest,
    StatsRequest,
    ToolRequest,
    parse,
    wire,
)
from casper.errors import CasperError
from casper.vocab import MODES


def test_well_formed_requests_become_typed_ones_with_defaults() -> None:
    assert parse("search", {"query": "dinner"}) == SearchRequest("dinner")
    full = {
        "query": "dinner", "person": "Sam", "chat": "Trip", "since": "2024-01-01",
        "until": "last week", "k": 3, "mode": "bm25", "lexical": "rank-bm25", "rerank": False,
        "literal": True,
    }  # fmt: skip
    assert parse("search", full) == SearchRequest(**full)
    # what a CLI sends: every option present, unset ones as None
    sent = {"query": "q", "person": None, "k": None, "mode": "hybrid", "lexical": None}
    assert parse("search", sent) == SearchRequest("q")
    assert parse("contacts", {}) == parse("contacts", None) == ContactsRequest()
    assert parse("stats", {"person": "Sam"}) == StatsRequest("Sam")
    assert parse("show", {"ref": "12"}) == ShowRequest("12", before=5, after=5)
    asked = parse("ask", {"question": "  when?  ", "history": ["earlier"], "max_iterations": 2})
    assert asked == AskRequest("when?", max_iterations=2, history=("earlier",))


@pytest.mark.parametrize(
    "request_",
    [
        SearchRequest("dinner", person="Sam", since="last March", k=3, mode="bm25", rerank=False),
        ContactsRequest(),
        StatsRequest("Sam", until="2024-05-01"),
        ShowRequest("12", before=0, after=40),
        AskRequest("when?", max_iterations=2, no_llm=True, history=("earlier", "turns")),
        ToolRequest("search_messages", {"query": "wifi", "k": 3}),
    ],
    ids=lambda r: type(r).__name__,
)
def test_a_checked_request_goes_over_the_socket_as_itself(request_: Any) -> None:
    """The CLI checks a request once and sends `wire(request)`; the service reads the same
    request back from it, and the arguments are plain JSON."""
    import json

    cmd, args = wire(request_)
    assert parse(cmd, json.loads(json.dumps(args))) == request_


@pytest.mark.parametrize(
    ("cmd", "args", "says", "hint"),
    [
        ("search", {"query": "   "}, "the query is empty", 'casper search "'),
        ("search", {}, "the query is empty", "casper search"),
        ("search", {"query": "x", "k": 0}, "-k must be at least 1 (got 0)", "-k 10"),
        ("search", {"query": "x", "k": MAX_K + 1}, "-k must be at most 1,000 (got 1,001)", "-k"),
        ("search", {"query": "x", "k": 2.5}, "k must be a whole number, not 2.5", "-k 10"),
        ("search", {"query": "x", "lexical": "bm25"}, "--lexical must be one of lancedb",
         "--lexical"),
        ("search", {"query": "x", "person": ["Sam"]}, "person must be a string", "--help"),
        ("search", {"query": "x" * 10_001}, "the query is 10,001 characters long", "--help"),
        ("ask", {"question": ""}, "the question is empty", 'casper ask "'),
        ("ask", {"question": "x" * 20_000}, "20,000 characters", "one thing"),
        ("ask", {"question": "q", "max_iterations": 0}, "--max-iterations must be at least 1",
         "one model call"),
        ("ask", {"question": "q", "max_iterations": 51}, "--max-iterations must be at most 50",
         "one model call"),
        ("ask", {"question": "q", "history": [1]}, "history must be a list of strings", "--help"),
        ("ask", {"question": "q", "no_llm": 1}, "no_llm must be true or false", "--help"),
        ("show", {"ref": "1", "after": 5000}, "--after must be at most 1,000", "--before 5"),
        ("contacts", {"k": 3}, "bad arguments for contacts: unknown k", "no arguments"),
        ("stats", {"person": "Sam", "who": 1}, "unknown who", "person, since, until"),
        ("search", ["query"], "expected names and values, not list", "--help"),
        (["search"], {}, "unknown command ['search']", "one of search, contacts"),
    ],
)  # fmt: skip
def test_each_wrong_argument_is_one_error_with_a_hint(
    cmd: Any, args: Any, says: str, hint: str
) -> None:
    with pytest.raises(CasperError) as info:
        parse(cmd, args)
    assert says in info.value.message
    assert info.value.hint and hint in info.value.hint


def test_every_search_mode_is_a_request() -> None:
    for mode in MODES:
        assert parse("search", {"query": "x", "mode": mode}).mode == mode  # type: ignore[union-attr]


def test_an_id_longer_than_any_message_id_is_a_clear_error() -> None:
    """`casper show 12345678901234567890123456` said "unexpected OverflowError" (SQLite has no
    integer that large); now it says no message has that id."""
    with pytest.raises(CasperError, match="no message has the id") as info:
        parse("show", {"ref": "#" + "1" * 26})
    assert info.value.hint and "casper search" in info.value.hint
    assert isinstance(parse("show", {"ref": str(2**63 - 1)}), ShowRequest)  # the largest is fine


def test_a_date_at_the_edge_of_the_calendar_is_a_clear_error() -> None:
    from datetime import date
    from zoneinfo import ZoneInfo

    from casper.dates.ranges import date_range, days_to_utc

    with pytest.raises(CasperError, match="the date 9999-12-31 is out of range"):
        date_range("0001-01-01", "9999-12-31", ZoneInfo("Pacific/Kiritimati"))
    start, end = days_to_utc(date(1, 1, 1), date(9999, 12, 30), ZoneInfo("UTC"))
    assert start is not None and end is not None and start < end
