"""`Store.chat_sizes` (the chunking stage's progress total): messages per chat, system events
left out, counted from indexes: no read of every row (2.6 s of a 1M-message first index)."""

from __future__ import annotations

from pathlib import Path

from casper.store.db import Store


def test_chat_sizes_count_messages_without_system_events_from_the_indexes(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "casper.sqlite")
    rows = [(1, "text"), (1, "text"), (1, "system"), (2, "system"), (3, "text")] + [
        (4, "attachment" if i % 2 else "text") for i in range(7)
    ]
    with store.conn:
        store.conn.executemany(
            "INSERT INTO messages (guid, chat_id, sender, ts, text, kind) "
            "VALUES (?, ?, 'x', ?, '', ?)",
            [(f"g{i}", chat, float(i), kind) for i, (chat, kind) in enumerate(rows)],
        )
    straight = dict(store.conn.execute(
        "SELECT chat_id, count(*) FROM messages WHERE kind != 'system' GROUP BY chat_id"
    ))  # fmt: skip
    ran: list[str] = []
    store.conn.set_trace_callback(ran.append)
    assert store.chat_sizes() == straight == {1: 2, 3: 1, 4: 7}
    store.conn.set_trace_callback(None)
    # how SQLite runs what chat_sizes asked: every step from an index, no row read whole
    steps = [str(step[3]) for q in ran for step in store.conn.execute("EXPLAIN QUERY PLAN " + q)]
    assert steps and all("COVERING INDEX" in s or "messages_system" in s or "B-TREE" in s
                         for s in steps), steps  # fmt: skip
    store.close()
