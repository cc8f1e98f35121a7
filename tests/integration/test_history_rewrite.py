"""A chat.db whose history was rewritten (an older copy put back, the ROWIDs renumbered, rows
deleted) is noticed by a plain `casper index`: what vanished is gone from the store, the stats
and every search leg, what is new is found, the vectors of unchanged messages are reused (the
run says how many), and the home then holds exactly what a clean build of that chat.db holds.
The same through the running service's auto-index: tests/integration/test_rewrite_service.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.bulk import append_messages
from ingest.synthetic.demo import DemoCorpus
from tests import rewrites
from tests.helpers import index_json, private_copy, use_fake_search_models

runner = CliRunner()


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_search_models(monkeypatch)
    monkeypatch.setenv("CASPER_SERVICE", "0")


def clean_build(source: DemoCorpus, tmp_path: Path) -> dict:
    """What a home built from scratch on the same chat.db holds."""
    home = tmp_path / "clean"
    index_json(home, source)
    return rewrites.contents(home)


def search_guids(home: Path, query: str, mode: str = "hybrid") -> set[str]:
    args = ["search", query, "--mode", mode, "--json", "--literal", "-k", "20", "--home", str(home)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return {m["guid"] for hit in json.loads(result.stdout)["hits"] for m in hit["messages"]}


def test_an_older_copy_put_back_then_a_new_message(
    demo_corpus: DemoCorpus, tmp_path: Path, fakes: None
) -> None:
    source = private_copy(demo_corpus, tmp_path / "src")
    backup = tmp_path / "backup.db"
    shutil.copyfile(source.chat_db, backup)
    append_messages(source.chat_db, 300)  # the months after the backup
    home = tmp_path / "home"
    first = index_json(home, source)
    assert first["messages_total"] > 4000
    held = rewrites.contents(home)["messages"]
    gone = held[-1]  # a message the older copy lacks
    assert search_guids(home, " ".join(gone[5].split()[:4]), "bm25") >= {gone[1]}

    rewrites.put_back(backup, source.chat_db)
    rowid, guid = rewrites.send(source.chat_db, "the axolotl ate the last dumpling")
    assert rowid <= gone[0]  # the older copy's sequence gives out a ROWID read before
    before = doctor(home)
    assert before.exit_code == 1, before.output
    line = checks(before)["history"]
    assert line["status"] == "fail" and "rewritten" in line["detail"]
    assert "casper index" in line["hint"]
    report = index_json(home, source)

    moved = report["reconciled"]
    assert moved is not None, report
    now = rewrites.contents(home)["messages"]
    vanished = len(held) - (len(now) - 1)  # the appended rows that became messages
    assert vanished > 250 and (moved["new"], moved["vanished"]) == (1, vanished)
    assert moved["renumbered"] == 0 and moved["kept"] == len(now) - 1
    assert report["messages_new"] == 1 and report["deleted"] == vanished
    # only what changed was written again, and no unchanged chunk was embedded again
    assert moved["vectors_embedded"] < 60 and report["vectors_done"] == report["vectors_total"]
    assert guid in search_guids(home, "axolotl dumpling", "bm25")
    assert guid in search_guids(home, "axolotl dumpling", "vector")
    assert gone[1] not in search_guids(home, " ".join(gone[5].split()[:4]))
    assert rewrites.differences(rewrites.contents(home), clean_build(source, tmp_path)) == {}
    after = checks(doctor(home))
    assert "history" not in after and after["history rewritten"]["status"] == "ok"
    assert f"{vanished} messages gone, 1 new" in after["history rewritten"]["detail"]


def doctor(home: Path):  # noqa: ANN201
    return runner.invoke(app, ["doctor", "--json", "--home", str(home)])


def checks(result) -> dict[str, dict]:  # noqa: ANN001
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_renumbered_rowids_with_the_same_guids(
    demo_corpus: DemoCorpus, tmp_path: Path, fakes: None
) -> None:
    source = private_copy(demo_corpus, tmp_path / "src")
    home = tmp_path / "home"
    first = index_json(home, source)
    rewrites.renumber(source.chat_db)
    report = index_json(home, source)

    moved = report["reconciled"]
    assert moved is not None, report
    held = len(rewrites.contents(home)["messages"])
    assert held >= first["messages_total"]
    assert moved["renumbered"] == moved["kept"] == held
    assert (moved["new"], moved["vanished"], moved["changed"]) == (0, 0, 0)
    # every chunk moved (its ROWIDs are new); every vector was found again by content
    assert moved["chunks_rewritten"] == report["chunks_total"]
    assert moved["vectors_embedded"] == 0 and moved["vectors_reused"] == report["chunks_total"]
    assert rewrites.differences(rewrites.contents(home), clean_build(source, tmp_path)) == {}
    assert index_json(home, source)["noop"]  # and the next run has nothing to do


def test_rows_deleted_then_a_message_with_a_reused_rowid(
    demo_corpus: DemoCorpus, tmp_path: Path, fakes: None
) -> None:
    source = private_copy(demo_corpus, tmp_path / "src")
    home = tmp_path / "home"
    index_json(home, source)
    held = {m[1] for m in rewrites.contents(home)["messages"]}
    deleted = rewrites.delete_rows(source.chat_db, middle=20, newest=5)
    report = index_json(home, source)
    # plain deletions (the tapbacks among them too): no reading again
    assert report["reconciled"] is None and report["deleted"] == len(held & set(deleted)) > 20
    assert rewrites.differences(rewrites.contents(home), clean_build(source, tmp_path)) == {}

    # the newest ROWIDs are free again (an older sequence, as a restore leaves it)
    import sqlite3

    conn = sqlite3.connect(source.chat_db)
    with conn:
        conn.execute("UPDATE sqlite_sequence SET seq = (SELECT max(ROWID) FROM message) "
                     "WHERE name = 'message'")  # fmt: skip
    conn.close()
    rowid, guid = rewrites.send(source.chat_db, "a capybara in the hot tub")
    report = index_json(home, source)
    assert report["reconciled"] is None and report["messages_new"] == 1
    assert guid in search_guids(home, "capybara hot tub", "bm25")
    shutil.rmtree(tmp_path / "clean")
    assert rewrites.differences(rewrites.contents(home), clean_build(source, tmp_path)) == {}
