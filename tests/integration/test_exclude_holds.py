"""`exclude` holds at once and by identity, over the demo corpus:

- an entry added to config.toml while the service runs is enforced before the service answers
  its next request (search and every tool), also for requests already on their way, and
  `doctor` then says it is applied (as its hint promises);
- `chat:NAME` is bound to the chat it named: renaming the group (any member can) keeps it out,
  new messages of the renamed group are never stored, `doctor` shows the chat's identity, and
  reading the history again (`--rebuild`) brings none of it back;
- no copy of their chunks' vectors or content hashes is left in any file of the data dir
  (superseded vector caches included);
- a system event naming a person kept out ("added dana…@…") is withheld everywhere.

Real store and LanceDB index; fake embedder and reranker (in the service too).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from casper.app import handlers
from casper.app.runtime import Runtime
from casper.cli import app
from casper.config import load_config
from casper.errors import CasperError
from casper.service import client
from ingest.synthetic import DemoCorpus
from ingest.synthetic.writer import ChatDbWriter
from tests.helpers import index_home, index_json, private_copy, use_fake_search_models

pytestmark = pytest.mark.slow  # several `casper index` runs over the demo
runner = CliRunner()
CREW = "Climbing crew"
DANA = "dana.okafor@example.org"


def _files_holding(home: Path, needles: list[bytes]) -> list[tuple[str, int]]:
    """(file, how many of `needles` it holds) for every file under `home` holding any."""
    found = []
    for root, _dirs, files in os.walk(home):
        for name in files:
            path = Path(root) / name
            data = path.read_bytes()
            hits = sum(n in data for n in needles)
            if hits:
                found.append((str(path.relative_to(home)), hits))
    return found


def _texts_of(store: Path, where: str, *args: object) -> list[str]:
    conn = sqlite3.connect(store)
    try:
        rows = conn.execute(f"SELECT text FROM messages WHERE {where} AND length(text) >= 18",
                            args).fetchall()  # fmt: skip
    finally:
        conn.close()
    return [t for (t,) in rows if t.isascii()]


def _doctor_kept_out(home: Path) -> dict[str, str]:
    doctor = json.loads(runner.invoke(app, ["doctor", "--home", str(home), "--json"]).stdout)
    return next(c for c in doctor["checks"] if c["name"] == "kept out")


@pytest.fixture
def corpus(demo_corpus: DemoCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DemoCorpus:
    use_fake_search_models(monkeypatch)
    monkeypatch.setenv("CASPER_SERVICE", "0")
    return private_copy(demo_corpus, tmp_path / "src")


# ---- at once: the service ----------------------------------------------------------------
def _mom(home: Path) -> tuple[str, list[str], int]:
    conn = sqlite3.connect(home / "casper.sqlite")
    try:
        mom = conn.execute("SELECT id FROM people WHERE name = 'Mom'").fetchone()[0]
        only_hers = conn.execute(
            "SELECT rowid, text FROM messages WHERE sender = ? AND length(text) >= 18 AND "
            "text NOT IN (SELECT text FROM messages WHERE sender != ?)", (mom, mom)
        ).fetchall()  # fmt: skip
    finally:
        conn.close()
    return mom, [t for _r, t in only_hers if t.isascii()][:4], only_hers[0][0]


def _shows_mom(doc: Any, texts: list[str]) -> list[str]:
    """Her texts (and her name as a value, or in a person line) in a document or a command's
    output, not counting what the request itself said (a search's query, a tool's arguments)."""
    if isinstance(doc, dict) and "tool" in doc:
        doc = {"text": doc.get("text"), "citations": doc.get("citations")}
    dumped = doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False)
    for asked in texts:  # every search here asks for one of her texts
        dumped = dumped.replace(f'"query": {json.dumps(asked, ensure_ascii=False)}', "")
        dumped = dumped.replace(f'"query":{json.dumps(asked, ensure_ascii=False)}', "")
    named = '"Mom"' in dumped or "Mom (id" in dumped or " Mom: " in dumped
    return [t for t in texts if t in dumped] + (["Mom"] if named else [])


def test_an_entry_added_while_the_service_runs_holds_at_the_next_request(
    home: Path,
    services,  # noqa: ANN001
) -> None:
    services.start(home)
    _mom_id, texts, mom_msg = _mom(home)
    assert texts
    before = client.call(home, "search", {"query": texts[0], "k": 10})
    assert _shows_mom(before, texts), "the test needs the service to show her first"

    with (home / "config.toml").open("a") as f:
        f.write('exclude = ["Mom"]\n')
    answers: list[tuple[str, Any]] = []

    def ask(cmd: str, args: dict[str, Any]) -> None:
        try:
            answers.append((cmd, client.call(home, cmd, args)))
        except Exception as exc:  # noqa: BLE001 - refusing is allowed, showing her is not
            answers.append((cmd, f"refused: {exc}"))

    requests = [("search", {"query": t, "k": 10}) for t in texts] + [
        ("tool", {"name": "search_messages", "arguments": {"query": texts[0]}}),
        ("tool", {"name": "list_contacts", "arguments": {"limit": 50}}),
        ("tool", {"name": "get_conversation_context", "arguments": {"message_id": str(mom_msg)}}),
        ("tool", {"name": "get_contact_stats", "arguments": {"person": "Mom"}}),
        ("show", {"ref": str(mom_msg)}),
        ("contacts", {}),
    ]
    threads = [threading.Thread(target=ask, args=r) for r in requests]  # all on their way at once
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(answers) == len(requests)
    shown = {cmd: _shows_mom(doc, texts) for cmd, doc in answers if _shows_mom(doc, texts)}
    assert shown == {}, f"answered with her rows after she was kept out: {shown}"
    # and after they settle: answered, not refused for ever
    after = client.call(home, "search", {"query": texts[0], "k": 10})
    assert not _shows_mom(after, texts) and after["hits"]
    kept = _doctor_kept_out(home)
    assert kept["status"] == "ok", kept  # applied, as doctor's hint said the service would


def test_an_entry_not_applied_yet_is_never_answered_in_process(
    corpus: DemoCorpus, tmp_path: Path
) -> None:
    """Without the service (`--no-service`, `casper mcp` in its own process) nothing applies
    the entry before answering: the command refuses, saying what to run, rather than show
    whom config.toml keeps out."""
    home = tmp_path / "home"
    index_json(home, corpus)
    _mom_id, texts, mom_msg = _mom(home)
    running = Runtime(load_config(home))  # a process that outlives the edit (`casper mcp`)
    ask = {"name": "search_messages", "arguments": {"query": texts[0]}}
    assert _shows_mom(handlers.run(running, "tool", ask), texts)
    with (home / "config.toml").open("a") as f:
        f.write('exclude = ["Mom"]\n')
    with pytest.raises(CasperError):
        handlers.run(running, "tool", ask)
    for args in (["search", texts[0], "--json"], ["show", str(mom_msg), "--json"],
                 ["contacts", "--json"]):  # fmt: skip
        result = runner.invoke(app, [*args, "--home", str(home)])
        assert not _shows_mom(result.stdout, texts), args
        assert result.exit_code == 1 and "casper index" in result.output, result.output
    rt = Runtime(load_config(home))
    with pytest.raises(CasperError) as refused:
        handlers.run(rt, "tool", {"name": "search_messages", "arguments": {"query": texts[0]}})
    assert "casper index" in (refused.value.hint or "")
    index_json(home, corpus)  # applied: answered again, without her
    result = runner.invoke(app, ["search", texts[0], "--json", "--home", str(home)])
    assert result.exit_code == 0 and not _shows_mom(result.stdout, texts)


# ---- by identity: a renamed group --------------------------------------------------------
def test_a_renamed_group_stays_out(corpus: DemoCorpus, tmp_path: Path) -> None:
    home = tmp_path / "home"
    index_json(home, corpus)
    store = home / "casper.sqlite"
    conn = sqlite3.connect(store)
    crew_id, guid = conn.execute("SELECT id, guid FROM chats WHERE name = ?", (CREW,)).fetchone()
    conn.close()
    theirs = _texts_of(store, "chat_id = ? AND text NOT IN (SELECT text FROM messages "
                       "WHERE chat_id != ?)", crew_id, crew_id)[:8]  # fmt: skip
    assert theirs
    with (home / "config.toml").open("a") as f:
        f.write(f'exclude = ["chat:{CREW}"]\n')
    index_json(home, corpus)
    assert _files_holding(home, [t.encode() for t in theirs]) == []

    # any member renames the group, then texts in it
    new_text = "the gate code for the crag lot is four four one nine"
    with ChatDbWriter(corpus.chat_db) as writer:
        chat, identifier, sam = writer.conn.execute(
            "SELECT c.ROWID, c.chat_identifier, j.handle_id FROM chat c JOIN chat_handle_join j "
            "ON j.chat_id = c.ROWID JOIN handle h ON h.ROWID = j.handle_id WHERE c.guid = ? "
            "AND h.id = '+14155550132'", (guid,)
        ).fetchone()  # fmt: skip
        writer.set_chat_name(chat, "Sunday sends")
        writer.add_system_event(chat, 2, 0, "Sunday sends", from_me=False, handle=sam,
                                ts=time.time())  # fmt: skip
        writer.add_message(chat, new_text, from_me=False, handle=sam, ts=time.time() + 1)
    index_json(home, corpus)
    assert _files_holding(home, [new_text.encode(), b"Sunday sends"]) == []
    rt = Runtime(load_config(home))
    assert "Sunday sends" not in {c.name for c in rt.store().chats()}
    found = handlers.run(rt, "search", {"query": new_text, "k": 10})
    assert new_text not in json.dumps(found["hits"], ensure_ascii=False)
    kept = _doctor_kept_out(home)
    assert kept["status"] == "ok" and identifier in kept["detail"], kept

    # reading the whole history again brings none of it back
    index_json(home, corpus, "--rebuild")
    assert _files_holding(home, [t.encode() for t in [*theirs, new_text]]) == []
    assert _doctor_kept_out(home)["status"] == "ok"


# ---- no copy of their vectors --------------------------------------------------------------
def test_no_copy_of_their_vectors_or_hashes_is_left(corpus: DemoCorpus, tmp_path: Path) -> None:
    import lancedb

    home = tmp_path / "home"
    index_json(home, corpus)
    conn = sqlite3.connect(home / "casper.sqlite")
    crew_id = conn.execute("SELECT id FROM chats WHERE name = ?", (CREW,)).fetchone()[0]
    conn.close()
    table = lancedb.connect(home / "index.lance").open_table("chunks").to_arrow()
    hashes = [h for h, c in zip(table["content_hash"].to_pylist(), table["chat_id"].to_pylist(),
                                strict=True) if c == crew_id]  # fmt: skip
    side = sqlite3.connect(home / "index.lance" / "vectors.sqlite")
    vectors = [v for k, v in side.execute("SELECT key, v FROM vec") if k in set(hashes)]
    side.close()
    assert hashes and len(vectors) == len(hashes)
    rt = Runtime(load_config(home))  # the other lexical leg keeps its own file of the chunks
    handlers.run(rt, "search", {"query": "crash pad", "k": 5, "lexical": "rank-bm25"})
    assert (home / "index.lance" / "rank_bm25.pkl").exists()
    assert len(np.frombuffer(vectors[0], np.float16)) == 64  # the fake embedder's rows
    needles = [h.encode() for h in hashes] + vectors
    assert _files_holding(home, needles)  # before: the test can see them

    with (home / "config.toml").open("a") as f:
        f.write(f'exclude = ["chat:{CREW}"]\n')
    index_json(home, corpus)
    rt = Runtime(load_config(home))
    handlers.run(rt, "search", {"query": "crash pad", "k": 5})  # a reader on the new index
    assert _files_holding(home, needles) == []


# ---- system events naming them -------------------------------------------------------------
def test_a_system_event_naming_them_is_withheld(corpus: DemoCorpus, tmp_path: Path) -> None:
    home = tmp_path / "home"
    index_home(home, corpus, "--json")
    conn = sqlite3.connect(home / "casper.sqlite")
    event, chat = conn.execute("SELECT rowid, chat_id FROM messages WHERE event = ?",
                               (f"added {DANA}",)).fetchone()  # fmt: skip
    after = conn.execute(  # the next message in the chat that is not hers
        "SELECT min(rowid) FROM messages WHERE chat_id = ? AND rowid > ? AND kind = 'text' AND "
        "sender NOT IN (SELECT id FROM people WHERE name = 'Dana Okafor')", (chat, event)
    ).fetchone()[0]  # fmt: skip
    conn.close()
    with (home / "config.toml").open("a") as f:
        f.write('exclude = ["Dana"]\n')
    index_json(home, corpus)

    rt = Runtime(load_config(home))
    seen: dict[str, str] = {}
    try:
        seen["show"] = json.dumps(handlers.run(rt, "show", {"ref": str(event)}))
    except Exception as exc:  # noqa: BLE001 - not found is right
        seen["show"] = str(exc)
    seen["show context"] = json.dumps(handlers.run(rt, "show", {"ref": str(after)}))
    seen["context tool"] = json.dumps(handlers.run(rt, "tool", {
        "name": "get_conversation_context", "arguments": {"message_id": str(after)}}))  # fmt: skip
    asked = "added dana okafor example org"  # not the handle itself: a query is echoed
    seen["search"] = json.dumps(handlers.run(rt, "search", {"query": asked, "k": 20}))
    seen["search tool"] = json.dumps(handlers.run(rt, "tool", {
        "name": "search_messages", "arguments": {"query": asked}}))  # fmt: skip
    out = tmp_path / "crew.jsonl"
    exported = runner.invoke(app, ["export", "--chat", str(chat), "-o", str(out),
                                   "--home", str(home)])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    seen["export"] = out.read_text(encoding="utf-8")
    shown = {where: text for where, text in seen.items() if DANA in text or "Okafor" in text}
    assert shown == {}, f"the event naming her is shown: {list(shown)}"
    assert _files_holding(home, [DANA.encode()]) == []
