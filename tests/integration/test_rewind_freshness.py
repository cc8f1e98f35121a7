"""After a history rewind (an older chat.db put back), `indexed_through` names the newest
message still in the history, in `search --json` and in every MCP result, never one that
vanished with the rewind. Tiny corpus, fake models, in-process."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.app.requests import ToolRequest
from casper.app.runtime import Runtime
from casper.app.tool_calls import call_tool
from casper.cli import app
from casper.config import load_config
from casper.store.db import Store
from ingest.synthetic import build_tiny_corpus
from ingest.synthetic.bulk import append_messages
from tests import rewrites
from tests.helpers import index_json, use_fake_search_models

pytestmark = pytest.mark.slow  # two index runs and a search: about 10 s
runner = CliRunner()


def newest(home: Path) -> tuple[float, str]:
    """(ts, guid) of the newest countable message the store holds."""
    store = Store.open(home / "casper.sqlite", create=False)
    try:
        return store.conn.execute(
            "SELECT ts, guid FROM messages WHERE kind != 'system' AND ts > 0 "
            "ORDER BY ts DESC LIMIT 1"
        ).fetchone()
    finally:
        store.close()


def reported(home: Path) -> tuple[float, float]:
    """indexed_through of `search --json` and of an MCP tool call, as UTC seconds."""
    search = runner.invoke(app, ["search", "dinner", "--json", "--home", str(home)])
    assert search.exit_code == 0, search.output
    tool = call_tool(Runtime(load_config(home)), ToolRequest("list_contacts", {}), lambda e: None)
    return tuple(  # type: ignore[return-value]
        datetime.fromisoformat(doc["indexed_through"]).timestamp()
        for doc in (json.loads(search.stdout), tool)
    )


def test_indexed_through_names_a_message_still_there_after_a_rewind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_search_models(monkeypatch)
    monkeypatch.setenv("CASPER_SERVICE", "0")
    source = build_tiny_corpus(tmp_path / "src")
    backup = tmp_path / "backup.db"
    shutil.copyfile(source.chat_db, backup)
    append_messages(source.chat_db, 40)  # the weeks after the backup
    home = tmp_path / "home"
    index_json(home, source)
    before_ts, before_guid = newest(home)
    assert reported(home) == pytest.approx((before_ts, before_ts), abs=1)

    rewrites.put_back(backup, source.chat_db)  # the newer weeks are gone
    report = index_json(home, source)
    assert report["deleted"] >= 30, report
    after_ts, after_guid = newest(home)
    assert after_guid != before_guid and after_ts < before_ts - 60
    # the newest message still in the history, not the one that vanished
    assert reported(home) == pytest.approx((after_ts, after_ts), abs=1)
