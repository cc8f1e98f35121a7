"""`exclude` in config.toml over the demo corpus: a person (by a name on their card), a chat (by
its name) and a handle (a phone written another way) kept out of every command and tool, purged
from an index that held them so that no file of the data dir keeps their text, listed by
`casper doctor`, dropped when they text again, and back after the entry is removed.

Real store and LanceDB index; fake embedder and reranker."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from casper.app import handlers
from casper.app.runtime import Runtime
from casper.cli import app
from casper.config import load_config
from ingest.synthetic import DemoCorpus
from ingest.synthetic.writer import ChatDbWriter
from tests.helpers import index_json, private_copy, use_fake_search_models

pytestmark = pytest.mark.slow  # four `casper index` runs over the demo (≈ 30 s in all)
EXCLUDE = 'exclude = ["Mom", "chat:Climbing crew", "(312) 555-0177"]\n'
runner = CliRunner()


def _kept_out_texts(store: Path) -> dict[str, list[str]]:
    """Texts only the people and chats to exclude wrote or hold (not said elsewhere too)."""
    conn = sqlite3.connect(store)
    try:
        ids = dict(conn.execute("SELECT name, id FROM people"))
        jordan = conn.execute("SELECT person_id FROM handles WHERE address = '+13125550177'")
        crew = conn.execute("SELECT id FROM chats WHERE name = 'Climbing crew'").fetchone()[0]
        where = {
            "mom": ("sender = ?", ids["Mom"]),
            "jordan": ("sender = ?", jordan.fetchone()[0]),
            "crew": ("chat_id = ?", crew),
        }
        others = {t for (t,) in conn.execute(
            "SELECT text FROM messages WHERE sender NOT IN (?, ?) AND chat_id != ?",
            (ids["Mom"], where["jordan"][1], crew),
        )}  # fmt: skip
        out = {}
        for key, (clause, arg) in where.items():
            rows = conn.execute(
                f"SELECT text FROM messages WHERE {clause} AND length(text) >= 18", (arg,)
            )
            out[key] = [t for (t,) in rows if t not in others and t.isascii()][:5]
        return out
    finally:
        conn.close()


def _files_holding(home: Path, texts: list[str]) -> list[tuple[str, str]]:
    found = []
    for root, _dirs, files in os.walk(home):
        for name in files:
            data = (Path(root) / name).read_bytes()
            found += [(name, t) for t in texts if t.encode() in data]
    return found


def _lance_files(home: Path) -> set[Path]:
    table = home / "index.lance" / "chunks.lance"  # its files (the version hint is a pointer)
    return {p for p in table.rglob("*") if p.is_file() and p.name != "latest_version_hint.json"}


def _index_texts(home: Path) -> list[str]:
    """Every chunk text of every version the chunk table still has (decompressed)."""
    import lancedb

    db = lancedb.connect(home / "index.lance")
    table = db.open_table("chunks")
    texts: list[str] = []
    for version in table.list_versions():
        table.checkout(version["version"])
        texts += table.to_arrow()["text"].to_pylist()
    return texts


def _tool(rt: Runtime, name: str, **arguments: Any) -> dict[str, Any]:
    return handlers.run(rt, "tool", {"name": name, "arguments": arguments})


@pytest.fixture
def corpus(demo_corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DemoCorpus:
    use_fake_search_models(monkeypatch)
    monkeypatch.setenv("CASPER_SERVICE", "0")
    return private_copy(demo_corpus, tmp_path / "src")


def test_kept_out_people_and_chats_leave_no_trace(corpus: DemoCorpus, tmp_path: Path) -> None:
    home = tmp_path / "home"
    index_json(home, corpus)
    texts = _kept_out_texts(home / "casper.sqlite")
    assert all(len(t) >= 3 for t in texts.values()), texts
    every = [t for ts in texts.values() for t in ts]
    assert _files_holding(home, every)  # before: the store holds them (the test can see them)
    before = _lance_files(home)
    mom_id = next(p.id for p in Runtime(load_config(home)).store().people() if p.name == "Mom")
    crew_id = next(c.id for c in Runtime(load_config(home)).store().chats()
                   if c.name == "Climbing crew")  # fmt: skip
    mom_msg = (
        Runtime(load_config(home))
        .store()
        .conn.execute("SELECT rowid FROM messages WHERE text = ?", (texts["mom"][0],))
        .fetchone()[0]
    )

    with (home / "config.toml").open("a") as f:
        f.write(EXCLUDE)
    report = runner.invoke(app, ["index", "--home", str(home), "--json"])
    assert report.exit_code == 0, report.output
    assert "kept out now: Mom, chat:Climbing crew, (312) 555-0177" in report.stderr

    # no file of the data dir holds their text: store, its log, side files, the index's files
    assert _files_holding(home, every) == []
    assert not (before & _lance_files(home))  # no file of the table from before is left
    index = _index_texts(home)  # every version the table keeps, decompressed
    assert not [t for t in every if any(t in chunk for chunk in index)]

    rt = Runtime(load_config(home))
    store = rt.store()
    names = {p.name for p in store.people()}
    assert "Mom" not in names and "+13125550177" not in names and "Sam Rivera" in names
    assert "Climbing crew" not in {c.name for c in store.chats()}
    assert store.chat(crew_id) is None
    contacts = json.dumps(handlers.run(rt, "contacts", {}))
    assert "Mom" not in contacts and "13125550177" not in contacts
    for text in every:
        found = handlers.run(rt, "search", {"query": text, "k": 20})
        shown = json.dumps(found["hits"], ensure_ascii=False)  # not the query's own words
        assert text not in shown
    with pytest.raises(Exception, match="no message"):
        handlers.run(rt, "show", {"ref": str(mom_msg)})
    context = _tool(rt, "get_conversation_context", message_id=str(mom_msg))
    assert context["ok"] is False and "no message" in context["text"]
    listed = _tool(rt, "list_contacts", limit=50)["text"]
    assert "Mom" not in listed and "13125550177" not in listed
    volume = _tool(rt, "get_message_volume_by_period", start_date="2022-01-01",
                   end_date="2024-12-31", period="year", top_n=20)["text"]  # fmt: skip
    assert "Mom" not in volume and "13125550177" not in volume
    stats = _tool(rt, "get_contact_stats", person="Mom")
    assert "Mom (id" not in stats["text"]  # no such person any more
    with pytest.raises(Exception):  # noqa: B017,PT011 - not found, whichever error says it
        handlers.run(rt, "stats", {"person": "Mom"})
    assert store.conn.execute("SELECT count(*) FROM contact_stats WHERE person_id NOT IN "
                              "(SELECT id FROM people)").fetchone()[0] == 0  # fmt: skip

    doctor = json.loads(runner.invoke(app, ["doctor", "--home", str(home), "--json"]).stdout)
    kept = next(c for c in doctor["checks"] if c["name"] == "kept out")
    assert kept["status"] == "ok", kept
    assert (
        "Mom (Mom)" in kept["detail"]
        and "chat:Climbing crew (chat Climbing crew [chat101396982040721545])" in kept["detail"]
    )
    assert "(312) 555-0177 (+13125550177)" in kept["detail"]
    assert "rows removed from the store and the index" in kept["detail"]

    # a message deleted from chat.db: the rows kept out are not taken for unread history
    sam_msg = store.conn.execute(
        "SELECT m.rowid FROM messages m JOIN people p ON p.id = m.sender "
        "WHERE p.name = 'Sam Rivera' ORDER BY m.rowid LIMIT 1"
    ).fetchone()[0]
    with ChatDbWriter(corpus.chat_db) as writer:
        writer.hard_delete(sam_msg)
    gone = index_json(home, corpus)
    assert gone["deleted"] == 1 and gone["reconciled"] is None, gone["reconciled"]
    doctor = json.loads(runner.invoke(app, ["doctor", "--home", str(home), "--json"]).stdout)
    assert not [c for c in doctor["checks"] if c["name"] == "history" and c["status"] != "ok"]

    # a row of hers that reached the store anyway (as worker processes copy rows in) is purged
    # by the next run (secure_delete, then the store compacted)
    planted = "the safe combination is left twice then right"
    with sqlite3.connect(home / "casper.sqlite") as conn:
        conn.execute(
            "INSERT INTO messages(rowid, guid, chat_id, sender, ts, text, kind) "
            "SELECT 999999, 'planted-guid', chat_id, ?, ts, ?, kind FROM messages LIMIT 1",
            (mom_id, planted),
        )
        conn.execute("INSERT OR REPLACE INTO dirty_chats(chat_id, full) "
                     "SELECT chat_id, 1 FROM messages WHERE rowid = 999999")  # fmt: skip
    rt = Runtime(load_config(home))
    assert rt.store().message(999999) is not None
    index_json(home, corpus)  # purged in the ingest step, before any chunk is made of it
    assert _files_holding(home, [planted]) == []
    assert not [chunk for chunk in _index_texts(home) if planted in chunk]
    assert Runtime(load_config(home)).store().message(999999) is None

    # Mom texts again: dropped as it is read, never stored
    with ChatDbWriter(corpus.chat_db) as writer:
        chat, handle = writer.conn.execute(
            "SELECT j.chat_id, j.handle_id FROM chat_handle_join j JOIN handle h ON "
            "h.ROWID = j.handle_id WHERE h.id = '+16175550143' LIMIT 1"
        ).fetchone()
        new, _guid = writer.add_message(chat, "the spare key is under the blue flowerpot",
                                        from_me=False, handle=handle, ts=time.time(),
                                        body="attributed")  # fmt: skip
    index_json(home, corpus)
    with ChatDbWriter(corpus.chat_db) as writer:  # and edits it
        writer.edit_message(new, "edited: the alarm code is the usual one", time.time() + 1)
    index_json(home, corpus)
    assert _files_holding(home, ["spare key is under the blue flowerpot", "alarm code"]) == []
    assert index_json(home, corpus)["noop"] is True  # their edit is not read again and again

    # the entry removed: the next index brings them back
    (home / "config.toml").write_text((home / "config.toml").read_text().replace(EXCLUDE, ""))
    back = runner.invoke(app, ["index", "--home", str(home), "--json"])
    assert back.exit_code == 0, back.output
    assert "no longer kept out: Mom" in back.stderr
    rt = Runtime(load_config(home))
    assert "Mom" in {p.name for p in rt.store().people()}
    assert rt.store().message(mom_msg) is not None
    assert "alarm code" in rt.store().message(new).text  # type: ignore[union-attr]
