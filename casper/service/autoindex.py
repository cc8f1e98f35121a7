"""The service's auto-index: a thread that follows chat.db and runs `casper index` in the
background, with the models the service already holds.

The thread stats chat.db and chat.db-wal (Messages writes through the WAL) when the operating
system says one of them changed (casper.service.filewatch), and at every poll besides; it feeds
what it sees to the Watcher (casper.service.watcher: debounce, one run at a time, backoff) and,
when a run is due, runs the index use-case (casper.indexer.run.run_index) under the index lock,
marked as a background holder so a manual `casper index` waits for it and says so. Searches
keep answering from the published generation meanwhile: the run writes with its own store
connection and index writer and publishes when done; the service's readers follow the
generation by themselves.
Only the embedder is shared, and its calls take the service's data lock (a tokenizer is not
safe to call from two threads). After each run the thread measures how current the index is
and writes the record `casper doctor` reads (`auto_index.json`, no message text).

Imports: stdlib, casper.config, casper.errors, casper.app (runtime, freshness), casper.indexer
(run, lock), casper.service (watcher, filewatch); ingest's errors to tell "no Full Disk Access"
apart.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from casper.app import runtime
from casper.app.freshness import AutoRun, Freshness, access_hint, measure, run_json, save_state
from casper.app.runtime import index_embedder
from casper.config import Config
from casper.errors import CasperError, StoreBusy
from casper.indexer.lock import exclusive
from casper.indexer.run import run_index
from casper.service.filewatch import ChatDbWatch
from casper.service.memory import release
from casper.service.watcher import Policy, Stamp, Watcher
from ingest.errors import ChatDbUnreadable, IngestError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from casper.app.runtime import Runtime
    from casper.indexer.lock import Holder
    from casper.indexer.pipeline import Progress
    from casper.indexer.run import EmbedderSupply, IndexRunReport
    from casper.protocols import Embedder
    from casper.store.db import Store

log = logging.getLogger("casper.service")

WHAT = "the casper service's auto-index"  # how the index lock names these runs
CLIENT_RUN = "`casper index` (in the casper service)"  # a run `casper index` handed over
KEEP_OUT = "the casper service, purging whom config.toml keeps out"


class Host(Protocol):
    """What the auto-index needs of the service: its data lock and its current runtime."""

    data_lock: threading.Lock

    @property
    def rt(self) -> Runtime: ...


def file_stamp(chat_db: Path) -> Stamp:
    """chat.db's and chat.db-wal's identity, size and mtime (None for one that can't be
    stat'ed: missing, or refused without Full Disk Access)."""
    stamp: list[tuple[int, int, int] | None] = []
    for path in (chat_db, Path(f"{chat_db}-wal")):
        try:
            st = os.stat(path)
        except OSError:
            stamp.append(None)
            continue
        stamp.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(stamp)


class Serialised:
    """The service's embedder for a background run: each call takes the data lock, so the run
    and a search never use the model at once. Anything else (name, dim, checksum, and a
    deferred model's `loaded`/`real`/`set_check`) is the inner embedder's."""

    def __init__(self, inner: Embedder, lock: threading.Lock) -> None:
        self.inner, self._lock = inner, lock

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(
        self, texts: Sequence[str], *args: Any, **kwargs: Any
    ) -> NDArray[np.float32]:
        with self._lock:
            return self.inner.embed_documents(texts, *args, **kwargs)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        with self._lock:
            return self.inner.embed_query(text)


class AutoIndexer:
    """The thread and what it last did (read by `casper serve --status`)."""

    def __init__(
        self,
        host: Host,
        home: Path,
        *,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host, self.home, self.clock = host, home, clock
        self.watcher = Watcher(policy, now=clock())
        self.lock = threading.Lock()  # the watcher and the records below, for status()
        self.stopping = threading.Event()
        self.runs = 0
        self.last_run: AutoRun | None = None
        self.last_ok: float | None = None
        self.fresh: Freshness | None = None
        self.off_reason: str | None = None  # auto_index = false in config.toml (read each look)
        self.watch: ChatDbWatch | None = None  # chat.db's folder, watched by the OS
        self.thread = threading.Thread(target=self._loop, name="auto-index", daemon=True)

    # ---- the thread ---------------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float) -> None:
        """Stop looking; a run in progress may finish within `timeout` (a kill mid-run is
        safe too: the next run resumes)."""
        self.stopping.set()
        watch = self.watch
        if watch is not None:
            watch.close()  # the thread's wait returns at once
        if self.thread.is_alive():
            self.thread.join(timeout)

    def _loop(self) -> None:
        wait = 0.0
        try:
            while not self._wait(wait):
                wait = self.look()
        finally:
            if self.watch is not None:
                self.watch.close()

    def _wait(self, seconds: float) -> bool:
        """Wait `seconds`, or less when chat.db changes (the OS watch of its folder, set up or
        moved when config.toml names another chat.db); True once the service is stopping."""
        cfg = self.host.rt.cfg
        watch = self.watch
        if watch is not None and (not cfg.auto_index or watch.chat_db != cfg.chat_db):
            watch.close()
            watch = self.watch = None
        if watch is None and cfg.auto_index and not self.stopping.is_set():
            watch = self.watch = ChatDbWatch(cfg.chat_db)
        if watch is not None and watch.active:
            watch.wait(seconds)
        else:
            self.stopping.wait(seconds)
        return self.stopping.is_set()

    def look(self) -> float:
        """One look at chat.db: tell the Watcher what the files look like, run the index when
        it is due; the seconds until the next look. The thread calls it in a loop; a test may
        call it alone, with the clock it passed in."""
        cfg = self.host.rt.cfg  # config.toml may have changed: the service rebuilt it
        now = self.clock()
        with self.lock:
            self.off_reason = None if cfg.auto_index else "auto_index = false"
            if cfg.auto_index:
                self.watcher.observe(file_stamp(cfg.chat_db), now)
            due = cfg.auto_index and self.watcher.due(now)
            if due:
                self.watcher.started(now)
        if due:
            outcome = self._run(cfg)
            with self.lock:
                self.watcher.finished(self.clock(), outcome)
            self._save()
        heard = self.watch is not None and self.watch.active
        with self.lock:
            return self.watcher.next_poll(self.clock(), heard=heard)

    def _run(self, cfg: Config) -> str:
        """One run, recorded; the Watcher's outcome ("ok", "skipped", "idle", "failed")."""
        started, wall = time.perf_counter(), time.time()
        outcome, done, fresh = self._attempt(cfg)
        run = AutoRun(wall, _since(started), **done)
        self._record(run, fresh)
        if run.reconciled is not None:  # counts and the reason only, never text
            log.warning("auto-index: chat.db's history was rewritten: %s", run.reconciled)
        if run.outcome == "indexed":
            log.info("auto-index: %d new messages, %d deleted in %.2f s",
                     run.messages_new, run.deleted, run.duration_s)  # fmt: skip
        elif run.outcome == "failed":
            log.warning("auto-index failed: %s", run.error)  # names files, never message text
        release()  # what the run read and wrote is freed: give the pages back (memory.py)
        return outcome

    def _attempt(self, cfg: Config) -> tuple[str, dict[str, Any], Freshness | None]:
        """Run the index; (the Watcher's outcome, what to record, how current it is now)."""
        if not cfg.store_path.exists() or self._never_indexed(cfg):
            # nothing indexed yet: the first index is the user's to start (it can take long)
            hint = "run `casper index` once; the service keeps it current from then on"
            return (
                "idle",
                {"outcome": "skipped", "error": "nothing indexed yet", "hint": hint},
                None,
            )
        try:
            report, fresh = self._index(cfg)
        except StoreBusy:
            busy = "a `casper index` run held the index lock"
            return "skipped", {"outcome": "skipped", "error": busy}, None
        except CasperError as exc:
            no_access = _no_access(exc)
            why = access_hint() if no_access else exc.hint
            failed = {"error": exc.message, "hint": why, "no_access": no_access}
            return "failed", {"outcome": "failed", **failed}, None
        except Exception as exc:  # noqa: BLE001 - reported and retried with backoff, never fatal
            log.exception("auto-index failed")
            failed = {"error": f"unexpected {type(exc).__name__} in the auto-index",
                      "hint": f"details in {self.home / 'service.log'}"}  # fmt: skip
            return "failed", {"outcome": "failed", **failed}, None
        ingest = report.ingest
        done = {"outcome": "up to date" if ingest.noop else "indexed",
                "messages_new": ingest.messages_new, "deleted": ingest.deleted,
                "reconciled": ingest.reconciled}  # fmt: skip
        return "ok", done, fresh

    @staticmethod
    def _never_indexed(cfg: Config) -> bool:
        """An empty store no run ever read a history into (no chat.db on this machine, and
        an earlier version kept the store its failed first run made): not retried."""
        try:
            store = runtime.open_store(cfg)
        except Exception:  # noqa: BLE001 - the run itself says what is wrong with the store
            return False
        try:
            read = store.get_meta("source") or store.get_meta("watermark_rowid")
            return read is None and not store.has_messages()
        finally:
            store.close()

    def _index(self, cfg: Config) -> tuple[IndexRunReport, Freshness | None]:
        """The index use-case under the index lock (not waiting: a manual run has it)."""
        with exclusive(cfg.lock_path, what=WHAT, background=True, wait_s=0):
            return self._index_locked(cfg, _silent, lambda t: log.info("auto-index: %s", t))

    def index_now(
        self,
        cfg: Config,
        progress: Progress,
        announce: Callable[[str], None],
        on_wait: Callable[[Holder | None], None],
    ) -> IndexRunReport:
        """`casper index` handed to the service: the same run with the embedder it holds,
        waiting for the lock like a manual run (a background run in progress ends first).
        Recorded as this service's last run."""
        started, wall = time.perf_counter(), time.time()
        with exclusive(cfg.lock_path, what=CLIENT_RUN, on_wait=on_wait):
            report, fresh = self._index_locked(cfg, progress, announce)
        release()
        ingest = report.ingest
        outcome = "up to date" if ingest.noop else "indexed"
        done = AutoRun(wall, _since(started), outcome=outcome,
                       messages_new=ingest.messages_new, deleted=ingest.deleted)  # fmt: skip
        self._record(done, fresh)
        self._save()
        return report

    def keep_out_now(self, cfg: Config) -> bool:
        """config.toml keeps out someone the store may still hold (`exclude` changed): the
        index run now, which purges them from the store and the index, waiting for a run in
        progress (it may be doing it already); True when this one ran. Recorded as a run; a
        CasperError saying what was kept out when it cannot run (chat.db unreadable…)."""
        from casper.app import runtime
        from casper.indexer.exclude import not_applied
        from casper.indexer.lock import exclusive

        started, wall = time.perf_counter(), time.time()
        try:
            with exclusive(cfg.lock_path, what=KEEP_OUT, background=True):
                store = runtime.open_store(cfg)
                try:
                    pending = not_applied(store, cfg.exclude)
                finally:
                    store.close()
                if not pending:
                    return False
                log.info("exclude changed: purging before the next answer")
                report, fresh = self._index_locked(cfg, _silent, lambda t: log.info("%s", t))
        except CasperError as exc:
            raise CasperError(
                f"config.toml now keeps out someone the index still holds, and the casper "
                f"service could not purge them: {exc.message}",
                hint=exc.hint or "run `casper index`",
            ) from exc
        release()
        took = _since(started)
        log.info("exclude applied in %.2f s", took)
        self._record(AutoRun(wall, took, outcome="indexed", messages_new=report.ingest.messages_new,
                             deleted=report.ingest.deleted), fresh)  # fmt: skip
        self._save()
        return True

    def _index_locked(
        self, cfg: Config, progress: Progress, announce: Callable[[str], None]
    ) -> tuple[IndexRunReport, Freshness | None]:
        store = runtime.open_store(cfg)
        try:
            report = run_index(
                store, runtime.index_source(cfg), runtime.index_place(cfg),
                self._embedder(cfg), options=runtime.chunk_options(cfg), progress=progress,
                announce=announce,
            )  # fmt: skip
            fresh = _measured(cfg, store, measure)
        finally:
            store.close()
        self._keep(report.embedder, cfg)
        return report, fresh

    def _embedder(self, cfg: Config) -> EmbedderSupply:
        """The service's embedder when it has one; else `casper index`'s way of getting one
        (the bundled MiniLM loads only if the run embeds), kept for the searches afterwards."""

        def supply(progress: Progress) -> Embedder:
            with self.host.data_lock:
                loaded = self.host.rt.loaded_embedder()
            inner = loaded if loaded is not None else index_embedder(cfg)(progress)
            return Serialised(inner, self.host.data_lock)

        return supply

    def _keep(self, built: Embedder | None, cfg: Config) -> None:
        """A model this run loaded stays for the searches (one copy in memory, not two)."""
        inner = built.inner if isinstance(built, Serialised) else built
        if inner is None or getattr(inner, "loaded", True) is False:
            return
        real = inner.real() if hasattr(inner, "real") else inner
        with self.host.data_lock:
            rt = self.host.rt
            if rt.cfg == cfg:
                rt.adopt_embedder(real)

    # ---- records ------------------------------------------------------------------------------
    def _record(self, run: AutoRun, fresh: Freshness | None = None) -> None:
        with self.lock:
            self.runs += 1
            self.last_run = run
            if run.outcome in ("indexed", "up to date"):
                self.last_ok = run.at
            if fresh is not None:
                self.fresh = fresh

    def _save(self) -> None:
        try:
            save_state(self.home, self.status())
        except OSError as exc:  # the data dir went away: the service notices elsewhere
            log.warning("cannot write the auto-index record: %s", exc)

    def status(self) -> dict[str, Any]:
        """What `casper serve --status` and `casper doctor` show: on/off, the state, the last run
        (and the last good one), failures and the next retry, and how current the index is."""
        now, wall = self.clock(), time.time()
        with self.lock:
            w = self.watcher
            seen = w.waiting_since()
            fresh = self.fresh
            # how long the oldest write not indexed yet has waited: seen by the watcher, or
            # found by the last measurement (one that arrived while the service was off)
            waiting = [wall - (now - seen)] if seen is not None else []
            if fresh is not None and fresh.behind and fresh.waiting_since is not None:
                waiting.append(fresh.waiting_since)
            return {
                "enabled": self.off_reason is None,
                "off_reason": self.off_reason,
                "state": w.state(now) if self.off_reason is None else "off",
                "pid": os.getpid(),
                "executable": os.path.realpath(sys.executable),
                "runs": self.runs,
                "failures": w.failures,
                "retry_in_s": round(w.retry_at - now, 1)
                if w.failures and w.retry_at is not None and w.retry_at > now
                else None,
                "last_run": run_json(self.last_run),
                "last_ok": self.last_ok,
                "indexed_through": fresh.indexed_through if fresh else None,
                "unindexed": fresh.unindexed if fresh else None,
                "lag_s": round(max(0.0, wall - min(waiting)), 1) if waiting else 0.0,
                "saved": wall,
            }


def _silent(stage: str, done: int, total: int | None) -> None:
    pass


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


def _measured(
    cfg: Config, store: Store, measure: Callable[[Config, Store], Freshness]
) -> Freshness | None:
    """How current the index is after a run; None when chat.db can't be read for it."""
    try:
        return measure(cfg, store)
    except (IngestError, sqlite3.Error):
        return None


def _no_access(exc: CasperError) -> bool:
    """True when chat.db was refused (macOS without Full Disk Access for this interpreter)."""
    return isinstance(exc.__cause__, ChatDbUnreadable)  # the run wraps ingest's errors
