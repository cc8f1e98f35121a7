"""`casper mcp`'s tools read their arguments as clients and their models write them: a message
id as the number every result shows (`[#2441]` is 2441, not only "2441"), and message volume
asked without dates is counted over the whole history."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from casper.app.requests import ToolRequest
from casper.app.runtime import Runtime
from casper.app.tool_calls import call_tool
from casper.config import load_config
from casper.dates.zones import local_tz
from casper.store.stats_query import top_people
from tests.helpers import use_fake_search_models


@pytest.fixture
def rt(home: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    use_fake_search_models(monkeypatch)
    return Runtime(load_config(home))


def tool(rt: Runtime, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return call_tool(rt, ToolRequest(name, arguments), lambda event: None)


@pytest.mark.parametrize("message_id", [2441, "2441", "#2441"])
def test_a_message_id_is_read_as_written(rt: Runtime, message_id: object) -> None:
    found = tool(rt, "get_conversation_context", {"message_id": message_id, "before": 1})
    assert found["ok"], found["text"]
    assert 2441 in [c["rowid"] for c in found["citations"]]


@pytest.mark.parametrize("message_id", [24.5, True, ["2441"], "pie"])
def test_what_is_no_message_id_is_still_refused(rt: Runtime, message_id: object) -> None:
    assert not tool(rt, "get_conversation_context", {"message_id": message_id})["ok"]


def test_volume_without_dates_is_the_whole_history(rt: Runtime) -> None:
    found = tool(rt, "get_message_volume_by_period", {"period": "year"})
    assert found["ok"], found["text"]
    store = rt.store()
    names = store.names()
    whole = top_people(store, local_tz(rt.cfg.timezone), None, None, 5)
    summary = found["text"].splitlines()[0]
    assert summary == "whole range: " + ", ".join(f"{names[p]} {n}" for p, n in whole)
    first, last = store.coverage()
    assert first is not None and last is not None
    years = re.findall(r"^(\d{4}):", found["text"], re.M)
    assert years == [str(y) for y in range(int(years[0]), int(years[-1]) + 1)] and len(years) >= 2


def test_volume_with_one_date_runs_from_it_or_to_it(rt: Runtime) -> None:
    since = tool(rt, "get_message_volume_by_period", {"start_date": "2024-01-01", "period": "year"})
    assert since["ok"], since["text"]
    assert re.findall(r"^(\d{4}):", since["text"], re.M) == ["2024"]
