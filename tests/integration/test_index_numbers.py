"""`index --json`, `doctor` and `stats` agree on what they count.

The CLI through typer's CliRunner with the fake embedder; real SQLite and LanceDB in tmp dirs.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic import ChatDbWriter
from tests.fakes_search import HashEmbedder
from tests.helpers import index_json, private_copy, use_fake_search_models

runner = CliRunner()


@pytest.fixture
def demo(demo_corpus, tmp_path: Path):  # noqa: ANN001, ANN201
    """A private copy of the demo chat.db, so a test may add rows to it."""
    return private_copy(demo_corpus, tmp_path / "src")


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> HashEmbedder:
    """One fake embedder for every run, so a test can count what each run embedded."""
    shared = HashEmbedder(64)
    use_fake_search_models(monkeypatch, shared)
    return shared


def cli_json(home: Path, *args: str) -> dict:
    result = runner.invoke(app, [*args, "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def sam_chat(w: ChatDbWriter) -> tuple[int, int]:
    chat = w.conn.execute("SELECT ROWID FROM chat WHERE guid LIKE '%+14155550132'").fetchone()[0]
    handle = w.conn.execute("SELECT ROWID FROM handle WHERE id='+14155550132'").fetchone()[0]
    return chat, handle


def test_nothing_new_reports_the_real_chunks_total(demo, embedder, tmp_path: Path) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    first = index_json(home, demo)
    assert first["chunks_total"] > 0
    again = index_json(home, demo)
    assert again["noop"] is True
    assert again["chunks_total"] == first["chunks_total"]
    assert again["chunks_new"] == 0


def test_chunks_new_counts_what_was_re_embedded(demo, embedder, tmp_path: Path) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    first = index_json(home, demo)
    assert first["chunks_new"] == sum(embedder.calls) == first["chunks_total"]
    book = next(demo.contacts.glob("**/*.abcddb"))
    with sqlite3.connect(book) as conn:  # Sam is renamed in the AddressBook
        assert conn.execute("UPDATE ZABCDRECORD SET ZFIRSTNAME='Samuel' WHERE ZFIRSTNAME='Sam'")
    embedder.calls.clear()
    second = index_json(home, demo)
    # the chunks that name Sam keep their ids but not their text: re-embedded, and counted
    assert second["chunks_total"] == first["chunks_total"]
    assert second["chunks_new"] == sum(embedder.calls) > 0


def test_doctor_counts_messages_as_index_does(demo, embedder, tmp_path: Path) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    report = index_json(home, demo)
    assert report["events"] > 0  # the demo has system rows: the old off-by-events case
    doctor = runner.invoke(
        app,
        ["doctor", "--home", str(home), "--json"],
        env={"CASPER_CHAT_DB": str(demo.chat_db), "CASPER_CONTACTS": str(demo.contacts)},
    )
    counts = json.loads(doctor.stdout)["counts"]
    assert counts["messages"] == report["messages_total"] == demo.facts["messages_visible"]
    assert counts["undated"] == 0


def test_an_unset_date_is_counted_and_kept_out_of_dates(demo, embedder, tmp_path: Path) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    before = index_json(home, demo)
    assert before["undated"] == 0
    sam_before = cli_json(home, "stats", "Sam Rivera")
    with ChatDbWriter(demo.chat_db) as w:
        chat, handle = sam_chat(w)
        rowid, _ = w.add_message(chat, "a message with no date", from_me=False, handle=handle,
                                 ts=datetime(2024, 1, 1), date=0)  # fmt: skip
    after = index_json(home, demo)
    assert after["undated"] == 1
    assert after["messages_total"] == before["messages_total"] + 1
    assert after["coverage"] == before["coverage"]  # not 1970
    sam = cli_json(home, "stats", "Sam Rivera")
    assert sam["received"] == sam_before["received"] + 1  # still a message Sam wrote
    assert sam["first"] == sam_before["first"]
    assert sam["by_month"] == sam_before["by_month"]
    assert sam["active_days"] == sam_before["active_days"]
    assert sam["busiest_hours"] == sam_before["busiest_hours"]
    assert sum(sam["by_month"].values()) == sam["sent"] + sam["received"] - 1
    shown = cli_json(home, "show", str(rowid))["message"]
    assert shown["text"] == "a message with no date" and shown["ts"] is None  # not 1970
    hits = cli_json(home, "search", "message with no date", "--mode", "bm25")["hits"]
    hit = next(h for h in hits if any(m["rowid"] == rowid for m in h["messages"]))
    assert hit["start"] is None  # still searchable, shown without a made-up day
    # a full recompute from the store agrees with the incremental fold
    assert index_json(home, demo, "--rebuild")["undated"] == 1
    assert cli_json(home, "stats", "Sam Rivera") == sam
