"""Apple-only schema entries: skip them always, or only after the parse error?

Run `python -m bench.apple_schema [--messages 1500] [--opens 200]`. Writes
bench/results/apple_schema.json and apple_schema.md.

Since macOS Sequoia chat.db holds triggers stock SQLite cannot parse; `PRAGMA writable_schema =
ON` reads around them. Two ways to set it, compared on the same files:
- **always**: every connection sets it (and, a variant, then checks that every table loaded);
- **after the error** (Casper): a connection sets it only when the first query fails with
  `malformed database schema (…)`, and then checks that every table of `sqlite_master` loaded.

1. *Damage*: a generated chat.db (Apple's schema: 19 tables, indexes, 17 triggers) is damaged
   one way at a time — cut at 10…90 %, 4 KiB of random bytes at every 8th page, one schema
   entry's text garbled (each table, index and trigger in turn) — with and without the
   Apple-only trigger. Each copy is opened and read whole (every message, reaction, handle,
   chat, the deleted and recently deleted rows, the change fingerprint) by stock SQLite, by
   "always" and by Casper's opener, and the outcome compared with the undamaged file's:
   same data, an error naming damage (ChatDbCorrupt / NotAMessagesDb), another error (the
   wrong diagnosis), or different data without an error (silently wrong).
2. *Cost*: one open (connect, probe, table check) of the clean and the Tahoe-like file, each
   way, median of `--opens` in this process.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.measure import load_avg, now_utc

RESULTS = Path(__file__).parent / "results"
Opener = Callable[[Path], sqlite3.Connection]


def _build(path: Path, messages: int) -> None:
    from ingest.synthetic import ChatDbWriter

    with ChatDbWriter(path, seed=7) as w:
        people = [w.add_handle(f"+1415555{i:04d}") for i in range(6)]
        chats = [w.add_chat([p]) for p in people]
        for i in range(messages):
            c = i % len(chats)
            w.add_message(chats[c], f"message {i} " + "lorem ipsum " * (i % 12),
                          from_me=bool(i % 3), handle=people[c], ts=1.7e9 + 60 * i,
                          body="both")  # fmt: skip
        w.conn.execute(  # some rows in "Recently Deleted", some hard-deleted tombstones
            "INSERT INTO chat_recoverable_message_join (chat_id, message_id, delete_date) "
            "SELECT 1, ROWID, 700000000 FROM message WHERE ROWID % 97 = 0"
        )
        w.conn.execute("INSERT INTO deleted_messages (guid) VALUES ('GONE-1'), ('GONE-2')")


def _openers() -> dict[str, Opener]:
    from ingest import connect
    from ingest.apple_schema import SchemaDamaged, check_tables_loaded
    from ingest.errors import ChatDbCorrupt

    def opener(skip_unparsable: bool, checked: bool = False) -> Opener:
        def open_db(path: Path) -> sqlite3.Connection:
            """open_chat_db's checks and error mapping, with writable_schema never or always
            (and then, `checked`, the table check)."""
            connect._check_file(path)
            try:
                conn = connect._connect(path, 1.0, skip_unparsable=skip_unparsable)
                if checked:
                    check_tables_loaded(conn)
                connect._probe(conn, path)
            except SchemaDamaged as exc:
                raise ChatDbCorrupt(f"{path} is damaged: {exc}") from exc
            except sqlite3.Error as exc:
                raise connect.map_sqlite_error(exc, path) from exc
            return conn

        return open_db

    return {
        "stock": opener(False),
        "always": opener(True),
        "always + table check": opener(True, checked=True),
        "after the error": connect.open_chat_db,
    }


def _read_all(open_db: Opener, path: Path) -> str:
    """A digest of everything ingest reads from `path`, or the error's class name."""
    import ingest
    from ingest.errors import ChatDbCorrupt, IngestError, NotAMessagesDb
    from ingest.messages import load_recently_deleted_rowids

    try:
        conn = open_db(path)
        try:
            caps = ingest.Capabilities.probe(conn)
            h = hashlib.sha256()
            for record in ingest.iter_rows(conn, caps):
                h.update(repr(record).encode())
            h.update(repr(ingest.load_handles(conn)).encode())
            h.update(repr(ingest.load_chats(conn, caps)).encode())
            h.update(repr(ingest.load_deleted_guids(conn, caps)).encode())
            h.update(repr(sorted(load_recently_deleted_rowids(conn, caps))).encode())
            h.update(repr(ingest.snapshot_state(conn, caps)).encode())
            return h.hexdigest()
        finally:
            conn.close()
    except (ChatDbCorrupt, NotAMessagesDb) as exc:
        return f"damaged:{type(exc).__name__}"
    except IngestError as exc:
        return f"error:{type(exc).__name__}: {exc.message[:80]}"
    except sqlite3.Error as exc:
        return f"error:sqlite3: {exc}"


def _damages(clean: Path, work: Path) -> list[tuple[str, Callable[[Path], None]]]:
    """(name, how to damage a copy) for every case of the matrix."""
    size = clean.stat().st_size
    pages = size // 4096
    conn = sqlite3.connect(f"file:{clean}?mode=ro", uri=True)
    entries = conn.execute(
        "SELECT type, name FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    conn.close()
    cases: list[tuple[str, Callable[[Path], None]]] = []
    for pct in range(10, 100, 10):
        cases.append((f"cut at {pct} %", lambda p, pct=pct: _truncate(p, size * pct // 100)))
    for page in range(1, pages, 8):
        cases.append((f"random bytes, page {page + 1}", lambda p, page=page: _scribble(p, page)))
    for kind, name in entries:
        cases.append((f"garbled {kind} {name}", lambda p, name=name: _garble(p, name)))
    return cases


def _truncate(path: Path, size: int) -> None:
    with path.open("r+b") as fh:
        fh.truncate(size)


def _scribble(path: Path, page: int) -> None:
    rng = random.Random(page)
    with path.open("r+b") as fh:
        fh.seek(page * 4096)
        fh.write(rng.randbytes(4096))


def _garble(path: Path, name: str) -> None:
    """One schema entry's text made unparsable, as a flipped byte in sqlite_master would."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'CREATE ', 'CREATE ~') WHERE name = ?", (name,)
    )
    conn.close()


def _verdict(got: str, reference: str) -> str:
    if got == reference:
        return "same data"
    if got.startswith("damaged:"):
        return "named damaged"
    if got.startswith("error:"):
        return "other error"
    return "SILENTLY WRONG"


def damage_matrix(messages: int) -> dict[str, Any]:
    from ingest.synthetic.tahoe import add_trigger

    openers = _openers()
    work = Path(tempfile.mkdtemp(prefix="casper-apple-schema-"))
    try:
        clean = work / "clean.db"
        _build(clean, messages)
        reference = _read_all(openers["stock"], clean)
        tahoe = work / "tahoe.db"
        shutil.copy(clean, tahoe)
        add_trigger(tahoe)
        rows: list[dict[str, Any]] = []
        for base_name, base in (("clean", clean), ("Apple trigger", tahoe)):
            for case, damage in [("undamaged", lambda p: None), *_damages(clean, work)]:
                copy = work / "case.db"
                shutil.copy(base, copy)
                damage(copy)
                row = {"file": base_name, "case": case}
                for way, open_db in openers.items():
                    row[way] = _verdict(_read_all(open_db, copy), reference)
                rows.append(row)
        summary: dict[str, dict[str, dict[str, int]]] = {}
        for base_name in ("clean", "Apple trigger"):
            summary[base_name] = {
                way: dict(Counter(r[way] for r in rows if r["file"] == base_name))
                for way in openers
            }
        return {"messages": messages, "pages": clean.stat().st_size // 4096,
                "cases": len(rows) // 2, "summary": summary, "rows": rows}  # fmt: skip
    finally:
        shutil.rmtree(work)


def open_cost(messages: int, opens: int) -> dict[str, Any]:
    from ingest.apple_schema import skipped_entries
    from ingest.synthetic.tahoe import add_trigger

    openers = _openers()
    work = Path(tempfile.mkdtemp(prefix="casper-apple-open-"))
    try:
        clean = work / "clean.db"
        _build(clean, messages)
        tahoe = work / "tahoe.db"
        shutil.copy(clean, tahoe)
        add_trigger(tahoe)
        cases = [
            (f"{file_name}, {way}", path, open_db)
            for file_name, path in (("clean", clean), ("Apple trigger", tahoe))
            for way, open_db in openers.items()
            if not (way == "stock" and path == tahoe)  # stock SQLite does not read it
        ]
        times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
        for _ in range(opens):  # interleaved, so a change in the machine's load hits all alike
            for label, path, open_db in cases:
                t = time.perf_counter()
                open_db(path).close()
                times[label].append(time.perf_counter() - t)
        out: dict[str, Any] = {k: round(statistics.median(v) * 1000, 3) for k, v in times.items()}
        conn = openers["after the error"](tahoe)
        naming = []
        for _ in range(max(opens // 10, 5)):
            t = time.perf_counter()
            skipped_entries(conn)
            naming.append(time.perf_counter() - t)
        conn.close()
        out["naming what was skipped (doctor)"] = round(statistics.median(naming) * 1000, 3)
        return out
    finally:
        shutil.rmtree(work)


def _kind(case: str) -> str:
    """ "cut at 40 %" → "cut", "garbled index x" → "garbled index": the rows of the summary."""
    if case.startswith("garbled "):
        return " ".join(case.split()[:2])
    return case.split(" at ")[0].split(",")[0]


def _markdown(result: dict[str, Any]) -> str:
    d = result["damage"]
    ways = ("stock", "always", "always + table check", "after the error")
    verdicts = ("same data", "named damaged", "other error", "SILENTLY WRONG")
    lines = [
        "# Apple-only schema entries: writable_schema always, or after the parse error",
        "",
        f"Measured {result['at']}, load average {result['load_avg_before']} → "
        f"{result['load_avg_after']} (2 shared cores). `python -m bench.apple_schema`.",
        "",
        f"## Damage: {d['cases']} damaged copies of a {d['messages']}-message chat.db "
        f"({d['pages']} pages), each read whole",
        "",
        "| file | opened | " + " | ".join(verdicts) + " |",
        "|---|---|" + "---:|" * len(verdicts),
    ]
    for base, per_way in d["summary"].items():
        for way in ways:
            counts = per_way[way]
            lines.append(
                f"| {base} | {way} | " + " | ".join(str(counts.get(v, 0)) for v in verdicts) + " |"
            )
    lines += ["", "By kind of damage (same data / named damaged / other error / silently wrong):", "",
              "| file | damage | cases | " + " | ".join(ways) + " |",
              "|---|---|---:|" + "---|" * len(ways)]  # fmt: skip
    for base in d["summary"]:
        rows = [r for r in d["rows"] if r["file"] == base]
        for kind in dict.fromkeys(_kind(r["case"]) for r in rows):
            some = [r for r in rows if _kind(r["case"]) == kind]
            cells = []
            for way in ways:
                counts = Counter(r[way] for r in some)
                cells.append(" / ".join(str(counts.get(v, 0)) for v in verdicts))
            lines.append(f"| {base} | {kind} | {len(some)} | " + " | ".join(cells) + " |")
    lines += ["", f"## Cost of one open (median of {result['opens']}, ms)", "", "| file, way | ms |",
              "|---|---:|"]  # fmt: skip
    lines += [f"| {k} | {v} |" for k, v in result["cost"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.apple_schema")
    parser.add_argument("--messages", type=int, default=1500)
    parser.add_argument("--opens", type=int, default=200)
    args = parser.parse_args(argv)
    before, at = load_avg(), now_utc()
    result = {
        "at": at,
        "load_avg_before": before,
        "opens": args.opens,
        "damage": damage_matrix(args.messages),
        "cost": open_cost(args.messages, args.opens),
        "load_avg_after": load_avg(),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "apple_schema.json").write_text(json.dumps(result, indent=1) + "\n")
    (RESULTS / "apple_schema.md").write_text(_markdown(result))
    print(_markdown(result))


if __name__ == "__main__":
    main()
