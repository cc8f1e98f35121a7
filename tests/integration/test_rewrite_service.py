"""A rewritten chat.db under a running service: its auto-index notices the older copy put back
(and the message that came after it), the renumbered ROWIDs and the deleted rows by itself,
searches through the service stop returning what vanished and find what is new, and the home
then holds exactly what a clean build of that chat.db holds. The plain `casper index` side:
tests/integration/test_history_rewrite.py.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from casper.service import client
from ingest.synthetic.bulk import append_messages
from ingest.synthetic.demo import DemoCorpus
from tests import rewrites
from tests.helpers import index_home, private_copy, use_fake_search_models

pytestmark = pytest.mark.slow  # three services, four index builds: ~40 s on 2 cores


def within(seconds: float, check: Callable[[], Any], step: float = 0.2) -> None:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(step)


def auto(home: Path) -> dict[str, Any]:
    return client.status(home)["auto_index"]


def found(home: Path, query: str, mode: str = "bm25") -> set[str]:
    args = {"query": query, "mode": mode, "k": 20, "rerank": False, "literal": True}
    doc = client.call(home, "search", args, autostart=False)
    return {m["guid"] for hit in doc["hits"] for m in hit["messages"]}


def settled(home: Path, runs: int) -> bool:
    """A run after `runs` finished and nothing is pending."""
    state = auto(home)
    return state["runs"] > runs and state["state"] == "watching"


@pytest.mark.parametrize("rewrite", ["older copy back", "renumbered", "rows deleted"])
def test_the_auto_index_reconciles_a_rewritten_history(
    demo_corpus: DemoCorpus,
    tmp_path: Path,
    services,  # noqa: ANN001
    rewrite: str,
) -> None:
    source = private_copy(demo_corpus, tmp_path / "src")
    backup = tmp_path / "backup.db"
    shutil.copyfile(source.chat_db, backup)
    if rewrite == "older copy back":
        append_messages(source.chat_db, 200)
    conn = sqlite3.connect(source.chat_db)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.close()
    home = tmp_path / "h"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        index_home(home, source)
    held = {m[1]: m for m in rewrites.contents(home)["messages"]}
    services.start(home)
    within(30, lambda: settled(home, 0))
    runs = auto(home)["runs"]

    if rewrite == "older copy back":
        older = sqlite3.connect(backup)
        kept = set(held) & {g for (g,) in older.execute("SELECT guid FROM message")}
        older.close()
        gone = held[max(set(held) - kept, key=lambda g: held[g][0])]
        rewrites.put_back(backup, source.chat_db)
        rewrites.send(source.chat_db, "the axolotl ate the last dumpling")
        new_words, gone_words = "axolotl dumpling", " ".join(gone[5].split()[:4])
    elif rewrite == "renumbered":
        rewrites.renumber(source.chat_db)
        new_words = gone_words = ""
    else:
        deleted = rewrites.delete_rows(source.chat_db, middle=10, newest=3)
        gone = next(held[g] for g in deleted if g in held and held[g][6] == "text")
        new_words, gone_words = "", " ".join(gone[5].split()[:4])
    within(60, lambda: settled(home, runs))
    time.sleep(1.0)  # a second write (the message after the copy) may make one more run
    within(60, lambda: auto(home)["state"] == "watching")

    last = auto(home)["last_run"]
    assert auto(home)["failures"] == 0, last
    if new_words:
        assert found(home, new_words)
    if gone_words:
        assert gone[1] not in found(home, gone_words)
        assert gone[1] not in found(home, gone_words, "vector")
    clean = tmp_path / "clean"
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        mp.setenv("CASPER_SERVICE", "0")
        index_home(clean, source)
    differ = rewrites.differences(rewrites.contents(home), rewrites.contents(clean))
    assert differ == {}
