"""The recipe "Adding a chat.db column" (docs/development.md) walked in a child interpreter: two
columns declared in ingest/columns.py and one migration, nothing else, then a tiny corpus read
by the single reader and by worker processes, and what each path made of them printed as JSON
(tests/integration/test_carried_column.py reads it).

The declarations are made at the top of this script, before `ingest` is imported (the readers
and the store build their statements when they are imported): ingest/columns.py is loaded here,
declared in, and registered as `ingest.columns`, which every later import then finds. Worker
processes are spawned, so they run this top level again (as `__mp_main__`) and see the same.

Run: python tests/carried_column.py DIR
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ingest.columns", Path(__file__).resolve().parents[1] / "ingest" / "columns.py"
)
assert _spec is not None and _spec.loader is not None
assert "ingest" not in sys.modules, "the declarations must come before anything reads them"
columns = sys.modules["ingest.columns"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(columns)

# step 1 of the recipe: the declarations (one chat.db column every fixture has, one none has),
# after whatever the product carries already
columns.CARRIED = (
    *columns.CARRIED,
    columns.Carried(
        "walked_effect",
        "expressive_send_style_id",
        sql="replace(m.expressive_send_style_id, 'com.apple.MobileSMS.expressivesend.', '')",
        words=lambda v: f"[sent with {v}]",
    ),
    columns.Carried("walked_absent", "a_column_no_chat_db_has"),
)
columns.NAMES = tuple(c.name for c in columns.CARRIED)
columns.SEARCHED = tuple(c for c in columns.CARRIED if c.words is not None)


# step 2: the store's columns, as a migration
def _m999_carried_columns(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE messages ADD COLUMN walked_effect TEXT")
    conn.execute("ALTER TABLE messages ADD COLUMN walked_absent TEXT")


from casper.store import schema  # noqa: E402 - after the declarations, on purpose

schema.MIGRATIONS.append(_m999_carried_columns)


def main(folder: str) -> None:
    import json
    import shutil
    from zoneinfo import ZoneInfo

    from casper.app.documents import message_json
    from casper.indexer import parallel
    from casper.indexer.chunking import searchable_rows
    from casper.indexer.pipeline import Indexer
    from casper.store.db import Store
    from ingest.synthetic import build_tiny_corpus

    here = Path(folder)
    corpus = build_tiny_corpus(here / "corpus")
    with sqlite3.connect(corpus.chat_db) as conn:
        (rowid,) = conn.execute(
            "SELECT ROWID FROM message WHERE item_type = 0 AND associated_message_type = 0 "
            "AND ifnull(text, '') != '' ORDER BY ROWID LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE message SET expressive_send_style_id = ? WHERE ROWID = ?",
            ("com.apple.MobileSMS.expressivesend.invisibleink", rowid),
        )
    out: dict[str, object] = {"rowid": rowid}
    tz = ZoneInfo("UTC")
    stored = {}
    for name, options in (
        ("single", parallel.Options(workers=1)),
        ("workers", parallel.Options(workers=2, min_rows=1, min_range=10)),
    ):
        home = here / name
        shutil.rmtree(home, ignore_errors=True)
        store = Store.open(home / "casper.sqlite")
        report = Indexer(store, corpus.chat_db, corpus.contacts, tz, parallel=options).run()
        out[f"{name}_by_workers"] = "read workers (busy)" in report.timings
        stored[name] = store.conn.execute("SELECT * FROM messages ORDER BY rowid").fetchall()
        out[f"{name}_effects"] = store.conn.execute(
            "SELECT rowid, walked_effect, walked_absent FROM messages "
            "WHERE walked_effect IS NOT NULL"
        ).fetchall()
        store.close()
    out["same_rows"] = stored["single"] == stored["workers"]

    store = Store.open(here / "single" / "casper.sqlite")
    message = store.message(rowid)
    assert message is not None
    out["carried"] = [pair for pair in message.carried if pair[0].startswith("walked_")]
    out["show"] = message_json(message, store.names(), tz, None)
    store.upsert_messages([message])  # an edit stores a message back (casper.indexer.changes)
    again = store.message(rowid)
    out["upserted"] = [p for p in again.carried if p[0].startswith("walked_")] if again else None
    chat = message.chat_id
    out["search_lines"] = [r[3] for r in store.searchable_rows(chat) if r[1] == rowid]
    out["search_paths_agree"] = store.searchable_rows(chat) == searchable_rows(
        store.chat_messages(chat)
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
