"""`casper index` at the terminal: the lock (and who holds it), progress, the summary, Ctrl-C.

A run that has to wait says at once for whom (pid, since when); Ctrl-C says what was kept and
that the next run continues; the summary's time is the whole run, stage by stage.

Imports: casper.cli (base, progress, invocation), casper.app.runtime, casper.indexer (lock,
run), casper.store, casper.index (lazily).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from casper.cli.base import (
    Home,
    Json,
    NoService,
    Verbose,
    _stderr,
    app,
    config,
    guarded,
    print_json,
)
from casper.config import Config, remember
from casper.dates.zones import local_tz

if TYPE_CHECKING:
    from casper.app.documents import IndexDoc, Reconciled
    from casper.events import Event
    from casper.indexer.lock import Holder
    from casper.indexer.run import IndexRunReport

# inside the commands: `casper --help` imports every command module; the work loads when it runs

# the summary's stages: a name and the `IngestReport.timings` it adds up (the others are parts
# of these, e.g. "read+store" inside "ingest"), in run order
SUMMARY_STAGES = (
    ("reading chat.db", ("check", "ingest", "commit+cleanup")),
    ("chunk index", ("index",)),
    ("loading the embedder", ("load",)),
    ("embedding", ("embed",)),
)


class Interrupted(Exception):
    """Ctrl-C during `casper index`; `ran` is False while it was still waiting for the lock."""

    def __init__(self, ran: bool) -> None:
        super().__init__("interrupted")
        self.ran = ran


def run_index(
    cfg: Config, *, rebuild: bool = False, quiet: bool = False, terminal_only: bool = False
) -> IndexRunReport:
    """Lock, then run `casper index` (casper.indexer.run) with this configuration's parts.
    Progress goes to stderr: none when `quiet`, and with `terminal_only` (`--json`) only when
    stderr is a terminal; the "resuming" and "waiting" lines are said even then. Ctrl-C is
    Interrupted (what was kept is on disk: the store commits as it goes, vectors per batch)."""
    from casper.indexer.pipeline import probe_source
    from casper.indexer.salvage import salvage_small_files
    from casper.store.db import ensure_private_dir

    made = [p for p in (cfg.data_dir, cfg.store_path, cfg.lock_path) if not p.exists()]
    if cfg.store_path in made:
        # a first run: nothing is made for a history that cannot be read (no data dir, no
        # empty store that would look indexed to doctor and the service)
        probe_source(cfg.chat_db)
    ensure_private_dir(cfg.data_dir)
    tz = local_tz(cfg.timezone)
    if rebuild:  # the index lock among them: a damaged one cannot be taken
        for moved in salvage_small_files(cfg.data_dir):
            _say(moved.line())
    try:
        return _locked_run(cfg, rebuild, quiet, terminal_only, tz)
    except BaseException:
        if cfg.store_path in made:
            _leave_nothing(cfg, made)
        raise


def _locked_run(
    cfg: Config, rebuild: bool, quiet: bool, terminal_only: bool, tz: tzinfo
) -> IndexRunReport:
    from casper.app import runtime
    from casper.cli.progress import stage_bars
    from casper.indexer.lock import exclusive
    from casper.indexer.run import run_index as index_run
    from casper.indexer.salvage import open_store

    ran = False
    try:
        with exclusive(cfg.lock_path, on_wait=lambda h: _say(waiting_line(h, tz))):
            ran = True
            with stage_bars(not quiet, plain=not terminal_only) as bars:
                # with --rebuild a damaged store is moved aside and made again (indexer.salvage)
                store = open_store(cfg.store_path, rebuild=rebuild, announce=_say)
                try:
                    return index_run(
                        store, runtime.index_source(cfg), runtime.index_place(cfg),
                        runtime.index_embedder(cfg), options=runtime.chunk_options(cfg),
                        rebuild=rebuild, progress=bars, announce=_say,
                        bulk=runtime.bulk_embedder(cfg),
                    )  # fmt: skip
                finally:
                    store.close()
    except KeyboardInterrupt:
        raise Interrupted(ran) from None


def _leave_nothing(cfg: Config, made: list[Path]) -> None:
    """After a first run that stored nothing (chat.db failed mid-read, Ctrl-C at once): remove
    what it made (the empty store, the lock file, the data dir when it is then empty), so the
    home reads as "nothing indexed yet" again. A store that holds messages stays."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{cfg.store_path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            stored = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        stored = 0  # not even its tables: nothing in it
    if stored:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{cfg.store_path}{suffix}").unlink(missing_ok=True)
    if cfg.lock_path in made:
        cfg.lock_path.unlink(missing_ok=True)
    if cfg.index_dir.exists() and not any(cfg.index_dir.glob("*.lance")):
        shutil.rmtree(cfg.index_dir, ignore_errors=True)
    if cfg.data_dir in made:
        with contextlib.suppress(OSError):
            cfg.data_dir.rmdir()  # only when empty: config.toml (paths kept) stays


def waiting_line(other: Holder | None, tz: tzinfo) -> str:
    """Said as soon as another run holds the lock: who, since when, and that Ctrl-C is safe."""
    if other is None:
        return "waiting for another index run to finish… (Ctrl-C stops waiting; that run goes on)"
    started = datetime.fromtimestamp(other.since, tz)
    ago = _duration(max(time.time() - other.since, 0.0))
    when = started.strftime("%H:%M:%S" if ago[-1] == "s" else "%Y-%m-%d %H:%M")
    ends = "; it ends by itself, then this run starts" if other.background else ""
    return (
        f"waiting for {other.what} (pid {other.pid}, running since {when}, {ago} ago) to "
        f"finish{ends}… (Ctrl-C stops waiting; that run goes on)"
    )


def _say(line: str) -> None:
    _stderr().print(line, soft_wrap=True, markup=False)


def kept_line(cfg: Config, ran: bool, again: str) -> str:
    """After Ctrl-C: what is on disk and how to go on (`again`: the command that continues)."""
    if not ran:
        return "stopped waiting; nothing was changed"
    messages = chunks = 0
    vectors: tuple[int, int] | None = None
    if cfg.store_path.exists():
        from casper.store.db import Store

        store = Store.open(cfg.store_path)
        try:
            messages = store.messages_total()
            chunks = int(store.meta_float("chunks_total"))
        finally:
            store.close()
    if cfg.index_dir.exists():
        from casper.index.chunk_index import vector_status_at

        try:
            vectors = vector_status_at(cfg.index_dir)
        except Exception:  # noqa: BLE001 - a half-written first index: say what the store has
            vectors = None
    if not messages:
        return f"interrupted before anything was stored; `{again}` starts again"
    kept = f"interrupted: kept {messages:,} messages"
    if vectors is not None:
        done, total = vectors
        share = f" ({100 * done // total} %)" if total and done < total else ""
        kept += f" and {total:,} chunks, {done:,} of them with vectors{share}"
    elif chunks:
        kept += f" and {chunks:,} chunks"
    return f"{kept}; `{again}` continues where this run stopped"


def _n(count: int, thing: str) -> str:
    """`1 new message`, `2 new messages`, `3 undecodable bodies`."""
    if count == 1:
        return f"1 {thing}"
    plural = thing[:-1] + "ies" if thing.endswith("y") else thing + "s"
    return f"{count:,} {plural}"


def _duration(seconds: float) -> str:
    """`0.4 s`, `13 s`, `2m24s`, `1h02m`."""
    from casper.cli.progress import fmt_duration

    if seconds < 10:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s" if seconds < 60 else fmt_duration(seconds)


def time_line(timings: dict[str, float], total: float, embedding: str = "") -> str:
    """`in 2m38s: reading chat.db 0.4 s · … · embedding 2m24s (61 chunks/s, CPU · torch)`
    (stages under 0.05 s left out; `embedding`: how fast and where, see `embed_rate`)."""
    parts = []
    for name, keys in SUMMARY_STAGES:
        spent = sum(timings.get(k, 0.0) for k in keys)
        if spent >= 0.05:
            rate = f" ({embedding})" if keys == ("embed",) and embedding else ""
            parts.append(f"{name} {_duration(spent)}{rate}")
    return f"in {_duration(total)}" + (": " + " · ".join(parts) if parts else "")


def embed_rate(doc: IndexDoc) -> str:
    """`412 chunks/s, CPU · onnxruntime` for a run that embedded chunks ("" otherwise), from
    its `index --json` document."""
    per_s = doc.get("embed_chunks_per_s")
    if not per_s:
        return ""
    where = doc.get("embedder")
    if not where:
        return f"{per_s:,.0f} chunks/s"
    device = "GPU (mps)" if where["device"] == "mps" else "CPU"
    return f"{per_s:,.0f} chunks/s, {device} · {where['backend']}"


def reconciled_line(done: Reconciled) -> str:
    """What reading a rewritten history again did, in one line (counts only)."""
    return (
        f"chat.db's history was rewritten ({done['reason']}): read again by message guid — "
        f"{done['vanished']:,} gone, {done['new']:,} new, {done['renumbered']:,} renumbered, "
        f"{done['kept']:,} unchanged; {done.get('chunks_rewritten', 0):,} chunks written "
        f"again, {done.get('vectors_reused', 0):,} of their vectors reused, "
        f"{done.get('vectors_embedded', 0):,} embedded"
    )


def _remember_paths(cfg: Config, chat_db: Path | None, contacts: Path | None) -> None:
    """Paths given once are kept in config.toml: a later plain `casper index` (the one a stopped
    run suggests), or `doctor`, reads the same history and AddressBook, not the defaults. Kept
    as soon as chat.db passes the probe, not when the run ends: a first run stopped halfway
    (Ctrl-C, a kill) is resumed by a plain `casper index` on the same database."""
    given = {"chat_db": chat_db, "contacts": contacts}
    paths = {k: Path(v).expanduser().resolve() for k, v in given.items() if v is not None}
    if not paths:
        return
    from casper.indexer.pipeline import probe_source
    from casper.store.db import ensure_private_dir
    from ingest import has_address_book

    probe_source(cfg.chat_db)  # the error a run would give, before anything is kept
    if "contacts" in paths and not has_address_book(paths["contacts"]):
        del paths["contacts"]  # a typo is not kept (the run stops on it with a hint)
    ensure_private_dir(cfg.data_dir)
    remember(cfg.data_dir, **paths)


@app.command()
@guarded
def index(
    chat_db: Annotated[
        Path | None,
        typer.Option("--chat-db", readable=False, help="Messages database (read-only)"),
    ] = None,
    contacts: Annotated[
        Path | None,
        typer.Option("--contacts", readable=False, help="AddressBook folder or .abcddb"),
    ] = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="start over instead of incremental")
    ] = False,
    no_contacts: Annotated[
        bool,
        typer.Option("--no-contacts", help="index without AddressBook names, on purpose"),
    ] = False,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """Ingest new messages (incremental), update stats and the search index. When the casper
    service runs for this data dir, the run happens there, with the models it holds."""
    from casper.cli.invocation import command_line

    cfg = config(home, chat_db=chat_db, contacts=contacts)
    if no_contacts:
        cfg = dataclasses.replace(cfg, contacts=None)
    tz = local_tz(cfg.timezone)
    _remember_paths(cfg, chat_db, None if no_contacts else contacts)
    # a plain run goes to a running service (paths given were just remembered: it reads them
    # too); --rebuild (it moves damaged files aside) and --no-contacts run here
    doc = None if rebuild or no_contacts else _in_service(cfg, json, no_service)
    if doc is None:
        from casper.app.documents import index_json

        # progress on stderr: bars on a terminal; plain lines elsewhere, except with --json
        try:
            done = run_index(cfg, rebuild=rebuild, terminal_only=json)
        except Interrupted as stop:
            kept = kept_line(cfg, stop.ran, command_line(cfg.data_dir, "index"))
            _stderr().print(kept, soft_wrap=True, markup=False)
            raise typer.Exit(130) from None
        doc = index_json(done, tz)
    if json:
        print_json(doc)
        return
    _summary(doc, tz)


def _in_service(cfg: Config, json: bool, no_service: bool) -> IndexDoc | None:
    """The run, done by the service for this data dir when one runs (its embedder is loaded:
    no model load here); None when none runs or it can't be used (then this process runs it).
    Its progress arrives as events and is shown as for a run here."""
    from casper.cli.progress import stage_bars
    from casper.cli.transport import service_enabled
    from casper.indexer.lock import Holder
    from casper.service import client

    if not service_enabled(no_service) or not client.running(cfg.data_dir):
        return None
    tz = local_tz(cfg.timezone)

    def on_event(event: Event) -> None:
        if event["event"] == "progress":
            bars(event["stage"], event["done"], event["total"])
        elif event["event"] == "waiting":
            other = event["holder"]
            _say(waiting_line(Holder(**other) if other else None, tz))
        elif event["event"] == "notice":
            _say(event["text"])

    try:
        with stage_bars(True, plain=not json) as bars:
            doc = client.call(cfg.data_dir, "index", {}, on_event=on_event, autostart=False)
            return cast("IndexDoc", doc)  # the service's index_json, plus `ran_in`
    except client.ServiceUnavailable:
        return None
    except client.ServiceLost:
        _say("the casper service went away during the run; running it here")
        return None
    except KeyboardInterrupt:
        _say("stopped watching; the casper service finishes this run by itself "
             "(`casper serve --status` shows it)")  # fmt: skip
        raise typer.Exit(130) from None


def _summary(doc: IndexDoc, tz: tzinfo) -> None:
    """What the run did, in two lines (stderr), from its `index --json` document."""
    err = _stderr()
    ran_in = doc.get("ran_in")
    where = f" · in the casper service (pid {ran_in['pid']})" if ran_in else ""
    timed = f"  {time_line(doc['timings'], doc['elapsed_s'], embed_rate(doc))}{where}"
    embedded = doc.get("vectors_new", 0)
    if doc["noop"] and embedded:  # what a stopped run left, finished
        err.print(
            f"up to date: {doc['messages_total']:,} messages; embedded the {embedded:,} "
            f"chunks a stopped run left ({doc['vectors_done']:,}/{doc['vectors_total']:,} now "
            "have vectors)",
            soft_wrap=True,
        )
        err.print(timed, soft_wrap=True)
        return
    if doc["noop"]:
        err.print(
            f"up to date: {doc['messages_total']:,} messages ({doc['elapsed_s']:.2f} s){where}",
            soft_wrap=True,
        )
        return
    cov = doc["coverage"]
    err.print(
        f"indexed {_n(doc['messages_new'], 'new message')} ({doc['messages_total']:,} total, "
        f"{_n(doc['chunks_new'], 'new chunk')}), {_n(doc['reactions'], 'reaction')} folded, "
        f"{doc['deleted']:,} deleted, {_n(doc['decode_failures'], 'undecodable body')} — "
        f"coverage {(cov['first'] or '?')[:10]} → {(cov['last'] or '?')[:10]}",
        soft_wrap=True,
    )
    reconciled = doc.get("reconciled")
    if reconciled:
        err.print(reconciled_line(reconciled), soft_wrap=True, markup=False)
    err.print(timed, soft_wrap=True)
