"""Freshness: how soon a message written to chat.db is found through the running service.

Run `python -m bench.freshness [--writes 100] [--idle-s 60] [--cache DIR]`. Writes
bench/results/freshness.json and freshness.md. The indexed demo is built once (~4 min here) into
the cache dir (default ~/.cache/casper-bench, or $CASPER_BENCH_CACHE) and copied for each run.

The demo corpus's chat.db is switched to WAL mode (as Messages keeps it) and indexed with the
bundled MiniLM; then the real `casper serve` runs (auto-index on, its own models) while:
- a writer process appends messages the way Messages does (ingest.synthetic's ChatDbWriter:
  schema-accurate rows in message + chat_message_join, attributedBody only, a new handle and
  chat now and then; one commit per message, 1–4 s apart), and edits or unsends some of them;
- this process polls, for every write, the lexical leg (`--mode bm25` with a word unique to the
  message), the vector leg (`--mode vector` with the sentence) and, for an edit or an unsend,
  the new word found / the old one gone — each through the service's client, what `casper
  search` runs inside (the process start, ~0.1 s, is not in the figures);
- a reader thread searches all along (hybrid, no pause) and counts every error.
Then the service sits idle for `--idle-s` seconds and its CPU time is read from /proc/PID/stat
before and after. Linux only for that figure (/proc).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.measure import load_avg, now_utc, p95

RESULTS = Path(__file__).parent / "results"
CACHE = Path(os.environ.get("CASPER_BENCH_CACHE", Path.home() / ".cache" / "casper-bench"))
ROOT = Path(__file__).resolve().parents[1]
LEXICAL_LIMIT_S, VECTOR_LIMIT_S = 60.0, 120.0  # past these a write counts as missed

# Run in its own process: appends, edits and unsends like Messages, one commit per change, and
# says what it did as JSON lines (the time right after the commit).
WRITER = r"""
import json, random, sys, time
from ingest.synthetic.writer import ChatDbWriter

path, writes, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
gap = (float(sys.argv[4]), float(sys.argv[5]))
rng = random.Random(seed)
DO = ["pick up", "drop off", "look at", "bring back", "return", "book", "pay for", "fix"]
WHAT = ["the blue bike", "grandma's lamp", "the concert tickets", "a birthday cake",
        "the spare keys", "the tent", "two pizzas", "the rental car", "my passport", "the drill"]
WHERE = ["the library", "the station", "Priya's place", "the farmers market", "the garage",
         "the post office", "work", "the airport", "the dentist", "the climbing gym"]
WHEN = ["tonight", "tomorrow morning", "on Friday", "after lunch", "this weekend", "at 6"]

with ChatDbWriter(path) as w:
    w.conn.execute("PRAGMA journal_mode=WAL")
    w.conn.commit()
    pairs = w.conn.execute(
        "SELECT j.chat_id, j.handle_id FROM chat_handle_join j JOIN chat c ON c.ROWID ="
        " j.chat_id WHERE c.style = 45").fetchall()
    sent = []  # (rowid, guid, time, word) of the new messages not edited or unsent yet
    for n in range(writes):
        time.sleep(rng.uniform(*gap))
        word = f"fz{seed}q{n}"
        # edits and unsends change messages sent 30 s to 110 s ago: found by then, as a rule,
        # and within what Messages allows (15 minutes to edit, 2 to unsend)
        ripe = [i for i, m in enumerate(sent) if 30 < time.time() - m[2] < 110]
        if n % 10 == 9 and ripe:
            rowid, guid, _, _ = sent.pop(rng.choice(ripe))
            text = f"sorry, I meant {rng.choice(WHAT)} {word}"
            w.edit_message(rowid, text, ts=time.time())
            record = {"kind": "edit", "guid": guid, "word": word, "text": text}
        elif n % 10 == 4 and ripe:
            rowid, guid, _, old = sent.pop(rng.choice(ripe))
            w.unsend_message(rowid, ts=time.time())
            record = {"kind": "unsend", "guid": guid, "word": None, "text": None, "gone": old}
        else:
            if n % 20 == 7:  # someone new writes: a new handle and a new chat
                handle = w.add_handle(f"+1555{seed % 1000:03d}{n:04d}")
                chat = w.add_chat([handle])
            else:
                chat, handle = rng.choice(pairs)
            text = (f"can you {rng.choice(DO)} {rng.choice(WHAT)} at {rng.choice(WHERE)} "
                    f"{rng.choice(WHEN)}? {word}")
            rowid, guid = w.add_message(chat, text, from_me=False, handle=handle,
                                        ts=time.time(), body="attributed")
            sent.append((rowid, guid, time.time(), word))
            record = {"kind": "new", "guid": guid, "word": word, "text": text}
        w.conn.commit()
        print(json.dumps({**record, "t": time.time()}), flush=True)
"""


@dataclass
class Pending:
    """One write being looked for."""

    kind: str  # new, edit, unsend
    guid: str
    t: float
    word: str | None
    text: str | None
    gone: str | None = None
    lexical_s: float | None = None
    vector_s: float | None = None
    done: bool = False
    superseded: bool = False  # edited or unsent before both legs found it: no longer findable


@dataclass
class Reader:
    """Searches all along through the service; every error counts."""

    home: Path
    stop: threading.Event = field(default_factory=threading.Event)
    ok: int = 0
    errors: list[str] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def run(self) -> None:
        from casper.service import client

        queries = ["dinner friday", "wifi password", "birthday", "the airport", "keys", "pizza"]
        i = 0
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                client.call(self.home, "search", {"query": queries[i % len(queries)]},
                            autostart=False)  # fmt: skip
                self.ok += 1
                self.ms.append((time.perf_counter() - started) * 1000)
            except Exception as exc:  # noqa: BLE001 - counted: the figure is "0 errors"
                self.errors.append(f"{type(exc).__name__}: {exc}")
            i += 1


def _hits(home: Path, query: str, mode: str) -> set[str]:
    from casper.service import client

    args = {"query": query, "mode": mode, "k": 10, "rerank": False, "literal": True}
    doc = client.call(home, "search", args, autostart=False)
    return {m["guid"] for h in doc["hits"] for m in h["messages"]}


def _check(home: Path, p: Pending, now: float) -> None:
    """One look for a pending write; records when it shows up."""
    waited = now - p.t
    if p.kind == "unsend":
        if p.gone and p.guid not in _hits(home, p.gone, "bm25"):
            p.lexical_s, p.done = waited, True
        elif waited > LEXICAL_LIMIT_S:
            p.done = True
        return
    if p.lexical_s is None and p.word and p.guid in _hits(home, p.word, "bm25"):
        p.lexical_s = waited
    if p.kind == "new" and p.vector_s is None and p.text:
        sentence = p.text.rsplit(" ", 1)[0]  # without the unique word: meaning only
        if p.guid in _hits(home, sentence, "vector"):
            p.vector_s = waited
    lexical_done = p.lexical_s is not None or waited > LEXICAL_LIMIT_S
    vector_done = p.kind != "new" or p.vector_s is not None or waited > VECTOR_LIMIT_S
    p.done = lexical_done and vector_done


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


def _casper() -> list[str]:
    return [sys.executable, "-m", "casper"]


def build(env: dict[str, str], cache: Path) -> tuple[Path, dict[str, Any]]:
    """A working copy (`home`, `src`) of the demo corpus in WAL mode indexed with the bundled
    MiniLM (~4 min here), built once and kept in `cache`. The index and the store record where
    their chat.db is, so the copy is always made at the same place: `cache/…-work`."""
    name = f"freshness-demo-{_index_format()}"
    pristine, work = cache / name, cache / f"{name}-work"
    if not (pristine / "bench-freshness.json").exists():
        shutil.rmtree(work, ignore_errors=True)
        _build(work / "home", work / "src", env)
        shutil.rmtree(pristine, ignore_errors=True)
        shutil.copytree(work, pristine)
        (work / "home" / "bench-freshness.json").replace(pristine / "bench-freshness.json")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work)  # the writer changes chat.db: start from the same one
    return work, json.loads((pristine / "bench-freshness.json").read_text())


def _index_format() -> str:
    """What a cached index must match: the index schema and the default chunker."""
    from casper.app.runtime import chunk_options
    from casper.config import load_config
    from casper.index.files import SCHEMA_VERSION

    signature = chunk_options(load_config(Path(tempfile.gettempdir()))).signature()
    return hashlib.blake2b(f"{SCHEMA_VERSION}:{signature}".encode(), digest_size=4).hexdigest()


def _build(home: Path, source: Path, env: dict[str, str]) -> None:
    from ingest.synthetic import build_demo_corpus

    info_path = home / "bench-freshness.json"
    corpus = build_demo_corpus(source)
    conn = sqlite3.connect(corpus.chat_db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    started = time.perf_counter()
    out = subprocess.run(
        _casper() + ["index", "--home", str(home), "--chat-db", str(corpus.chat_db),
                     "--contacts", str(corpus.contacts), "--json"],
        env=env, capture_output=True, text=True, check=True, timeout=3600,
    )  # fmt: skip
    report = json.loads(out.stdout)
    info = {"messages": report["messages_total"], "chunks": report["chunks_total"],
            "index_s": round(time.perf_counter() - started, 1)}  # fmt: skip
    info_path.write_text(json.dumps(info))


def start_service(home: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    from casper.service import client

    log = open(home / "bench-service.log", "ab")  # noqa: SIM115 - the service's for its life
    proc = subprocess.Popen(_casper() + ["serve", "--home", str(home)], env=env,
                            stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
    deadline = time.monotonic() + 120
    while client.connect(home) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the service did not start: {(home / 'bench-service.log')}")
        time.sleep(0.1)
    return proc


def _auto(home: Path) -> dict[str, Any]:
    from casper.service import client

    return client.status(home)["auto_index"]


def _wait(check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.2)


def measure(home: Path, chat_db: Path, env: dict[str, str], writes: int, idle_s: float,
            seed: int) -> dict[str, Any]:  # fmt: skip
    from casper.service import client

    proc = start_service(home, env)
    try:
        # warm, as a service people use is: the models loaded, the catch-up run done
        client.call(home, "search", {"query": "hello"}, autostart=False)
        _wait(lambda: _auto(home)["runs"] >= 1 and _auto(home)["state"] == "watching", 120)
        runs_before = _auto(home)["runs"]
        reader = Reader(home)
        reading = threading.Thread(target=reader.run, daemon=True)
        reading.start()
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(chat_db), str(writes), str(seed), "1.0", "4.0"],
            env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert writer.stdout is not None
            for line in writer.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        pending: list[Pending] = []
        finished: list[Pending] = []
        writing = True
        while writing or pending:
            try:
                while True:
                    line = lines.get_nowait()
                    if line is None:
                        writing = False
                        break
                    change = Pending(**json.loads(line))
                    for p in pending:  # a message changed before it was found stops counting
                        if p.kind == "new" and p.guid == change.guid:
                            p.superseded = p.done = True
                    pending.append(change)
            except queue.Empty:
                pass
            now = time.time()
            for p in list(pending):
                _check(home, p, now)
                if p.done:
                    pending.remove(p)
                    finished.append(p)
            time.sleep(0.1)
        writer.wait(timeout=30)
        reader.stop.set()
        reading.join(timeout=30)
        auto = _auto(home)
        status = client.status(home)
        # idle: nothing written; the watcher alone
        time.sleep(5)
        runs_idle = _auto(home)["runs"]
        ticks = os.sysconf("SC_CLK_TCK")
        before, t0 = _cpu_ticks(proc.pid), time.monotonic()
        time.sleep(idle_s)
        cpu_s = (_cpu_ticks(proc.pid) - before) / ticks
        idle_wall = time.monotonic() - t0
        idle_runs = _auto(home)["runs"] - runs_idle
        # the same through a whole `casper search` process, once, for the last new message
        changed = {p.guid for p in finished if p.kind != "new"}
        last = next(p for p in reversed(finished)
                    if p.kind == "new" and p.lexical_s is not None and p.guid not in changed)  # fmt: skip
        out = subprocess.run(_casper() + ["search", last.word or "", "--mode", "bm25",
                                          "--json", "--home", str(home)],
                             env={**env, "CASPER_SERVICE": "1"}, capture_output=True,
                             text=True, check=True)  # fmt: skip
        cli_found = last.guid in {m["guid"] for h in json.loads(out.stdout)["hits"]
                                  for m in h["messages"]}  # fmt: skip
    finally:
        client.stop(home)
        if proc.poll() is None:
            proc.kill()
    durations = _run_durations(home)
    return {
        "writes": writes,
        "finished": [p.__dict__ for p in finished],
        "reader": {"searches": reader.ok, "errors": reader.errors,
                   "p50_ms": _round(statistics.median(reader.ms)) if reader.ms else None,
                   "p95_ms": _round(p95(reader.ms)) if reader.ms else None},  # fmt: skip
        "auto_runs": auto["runs"] - runs_before,
        "auto_failures": auto["failures"],
        "run_s": durations,
        "service_rss_mb": status.get("rss_mb"),
        "idle": {"seconds": round(idle_wall, 1), "cpu_s": round(cpu_s, 2),
                 "cpu_percent": round(100 * cpu_s / idle_wall, 2), "runs": idle_runs},
        "cli_search_finds_last": cli_found,
    }  # fmt: skip


def _run_durations(home: Path) -> list[float]:
    """Each automatic run that indexed something, from the service log ("… in 1.23 s")."""
    text = (home / "bench-service.log").read_text()
    return [float(line.rsplit(" in ", 1)[1].split()[0]) for line in text.splitlines()
            if "auto-index:" in line and "new messages" in line]  # fmt: skip


def _round(x: float) -> float:
    return round(x, 2)


def _dist(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": _round(statistics.median(values)), "p95": _round(p95(values)),
            "max": _round(max(values))}  # fmt: skip


def summarize(raw: dict[str, Any]) -> dict[str, Any]:
    done = raw["finished"]
    new = [p for p in done if p["kind"] == "new"]
    edits = [p for p in done if p["kind"] == "edit"]
    unsends = [p for p in done if p["kind"] == "unsend"]
    return {
        "lexical_s": _dist([p["lexical_s"] for p in new if p["lexical_s"] is not None]),
        "vector_s": _dist([p["vector_s"] for p in new if p["vector_s"] is not None]),
        "edit_s": _dist([p["lexical_s"] for p in edits if p["lexical_s"] is not None]),
        "unsend_s": _dist([p["lexical_s"] for p in unsends if p["lexical_s"] is not None]),
        "missed": {
            "lexical": sum(
                p["lexical_s"] is None and not p["superseded"] for p in new + edits + unsends
            ),
            "vector": sum(p["vector_s"] is None and not p["superseded"] for p in new),
        },  # fmt: skip
        "superseded": sum(p["superseded"] and p["vector_s"] is None for p in new),
        "counts": {"new": len(new), "edit": len(edits), "unsend": len(unsends)},
        "auto_run_s": _dist(raw["run_s"]),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import platform

    parser = argparse.ArgumentParser(prog="python -m bench.freshness", description=__doc__)
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the indexed demo is kept")
    opts = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CASPER_SERVICE": "0", "HF_HUB_OFFLINE": "1"}
    command = "python -m bench.freshness " + " ".join(argv if argv is not None else sys.argv[1:])
    work, index = build(env, opts.cache)
    load_before, at = load_avg(), now_utc()
    raw = measure(work / "home", work / "src" / "chat.db", env, opts.writes, opts.idle_s, opts.seed)
    result = {
        "command": command.strip(),
        "at": at,
        "load_avg_before": load_before,
        "load_avg_after": load_avg(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "index": index,
        **summarize(raw),
        "raw": raw,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "freshness.json").write_text(json.dumps(result, indent=1))
    (RESULTS / "freshness.md").write_text(markdown(result))
    print(markdown(result))
    return result


def _row(label: str, d: dict[str, Any], target: str) -> str:
    if not d.get("n"):
        return f"| {label} | — | — | — | 0 | {target} |"
    return f"| {label} | **{d['p50']} s** | {d['p95']} s | {d['max']} s | {d['n']} | {target} |"


def markdown(r: dict[str, Any]) -> str:
    raw, idx, idle = r["raw"], r["index"], r["raw"]["idle"]
    reader = raw["reader"]
    return "\n".join([
        f"Freshness through the running service (`{r['command']}`, {r['at']}; {r['machine']}; "
        f"load average {' '.join(map(str, r['load_avg_before']))} before → "
        f"{' '.join(map(str, r['load_avg_after']))} after). The demo corpus in WAL mode, "
        f"{idx['messages']:,} messages → {idx['chunks']:,} chunks, indexed with the bundled "
        f"MiniLM in {idx['index_s']} s; a writer process appended {raw['writes']} changes "
        f"({r['counts']['new']} new messages, {r['counts']['edit']} edits, "
        f"{r['counts']['unsend']} unsends; 1–4 s apart) while a reader searched without a pause. "
        "Time from the writer's commit until the service's search shows it (polled every "
        "0.1 s through the service's client).",
        "",
        "| measure | p50 | p95 | max | n | target |",
        "|---|---:|---:|---:|---:|---|",
        _row("new message found, lexical leg (`--mode bm25`)", r["lexical_s"], "≤ 5 s / 10 s"),
        _row("new message found, vector leg (`--mode vector`, MiniLM)", r["vector_s"], "≤ 30 s"),
        _row("edit found by its new word", r["edit_s"], "as a new message"),
        _row("unsent message gone", r["unsend_s"], "as a new message"),
        _row("automatic run that indexed something (service log)", r["auto_run_s"], "—"),
        "",
        f"- missed (not found within {LEXICAL_LIMIT_S:.0f} s lexical / {VECTOR_LIMIT_S:.0f} s "
        f"vector): {r['missed']['lexical']} / {r['missed']['vector']}; edited or unsent by the "
        f"writer before the vector leg found them (no longer findable, not counted): "
        f"{r['superseded']}",
        "- the vector leg is asked with the message's sentence (without its unique word) and "
        "counts when the message is in the top 10; the writer's sentences come from one "
        "template, so a late vector find can be ranking among near-duplicates (the chunk "
        "holding it outranked by similar ones until that chunk changes) rather than a late "
        "index: one run indexes both legs",
        f"- automatic runs during the writes: {raw['auto_runs']} for {raw['writes']} changes "
        f"(a burst is one run), failures: {raw['auto_failures']}",
        f"- reader: {reader['searches']} searches during the writes, **{len(reader['errors'])} "
        f"errors**, p50 {reader['p50_ms']} ms / p95 {reader['p95_ms']} ms (client in-process)",
        f"- idle: {idle['cpu_s']} s CPU in {idle['seconds']} s = **{idle['cpu_percent']} %** "
        f"of one core (/proc/PID/stat, utime+stime), {idle['runs']} runs meanwhile",
        f"- service resident memory after the writes: {raw['service_rss_mb']} MB",
        f"- a whole `casper search` process found the last message too: "
        f"{raw['cli_search_finds_last']}",
        "",
    ])  # fmt: skip


if __name__ == "__main__":
    main()
