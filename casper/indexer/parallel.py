"""A large backlog of chat.db read by worker processes, one ROWID range each, side by side.

Each worker reads its range read-only, converts the rows exactly as the single reader does
(`ingest.RangeReader`, `casper.indexer.rows.store_rows`) and writes the store rows into its own
staging file; the main process copies the files in, in ROWID order, with one INSERT … SELECT
each (casper.store.staging) inside the ingest transaction, and folds in what each range
touched (watermarks, dirty chats, the StatRows the stats are made of). What crosses a range
boundary is settled here, in order: legacy SMS reactions quoting a text from an earlier range.

Workers are started with the spawn method on every platform (fork is unsafe on macOS, and a
forked SQLite connection must not be used), so they share nothing with this process; Ctrl-C
is handled here (workers ignore SIGINT) and stops them. Staging files live in a private
directory in the Casper home, removed on success and on failure; one left by a killed run is
removed by the next parallel run.

Imports: ingest, casper.indexer.rows, casper.stats, casper.store.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from multiprocessing.connection import Connection, wait
from pathlib import Path

import ingest
from casper.errors import CasperError
from casper.indexer.rows import Accumulator, NewRows, reaction_rows, store_rows
from casper.stats import LocalClock, StatsState, timeline_head
from casper.store import staging
from casper.store.db import Store
from ingest.messages import ReadCounters
from ingest.ranges import RangeReader
from ingest.reactions import RecentTexts, resolve
from ingest.records import DeferredReaction

# Below this many new rows, starting processes (~0.3 s each, imports included) costs more
# than it saves: small incremental runs stay on the single reader.
MIN_ROWS = 50_000
# A range smaller than this is not worth a staging file of its own.
MIN_RANGE = 25_000
_STAGING_PREFIX = "ingest-staging-"
_BATCH = 20_000  # rows per write into a staging file
_NO_END = 2**63 - 1  # the largest ROWID SQLite allows

Progress = Callable[[str, int, int | None], None]


def _default_workers() -> int:
    # one per core, at most four: the main process copies the ranges in meanwhile, then
    # builds the store's indexes beside the stats
    return min(os.cpu_count() or 1, 4)


@dataclass(frozen=True, slots=True)
class Options:
    """When and how a run reads with worker processes (`workers` 1: never)."""

    workers: int = field(default_factory=_default_workers)
    min_rows: int = MIN_ROWS  # new rows from which workers are worth starting
    min_range: int = MIN_RANGE  # ROWIDs per range at least

    def applies(self, rows: int, tz: tzinfo) -> bool:
        """Worth reading `rows` new rows with workers, and possible: more than one worker, an
        SQLite that attaches inside a transaction, and a zone that can be sent to another
        process (a ZoneInfo made from /etc/localtime's bytes cannot)."""
        if self.workers < 2 or rows < max(self.min_rows, 1):
            return False
        if not staging.ATTACH_IN_TRANSACTION:
            return False
        try:
            pickle.dumps(tz)
        except (pickle.PicklingError, TypeError, ValueError):
            return False
        return True


def plan_ranges(after: int, upto: int, workers: int, min_range: int) -> list[tuple[int, int]]:
    """(after, upto] cut into ROWID ranges of about equal size: a multiple of `workers` of
    them where there are enough rows (so no worker idles at the end), at most
    staging.MAX_STAGED."""
    total = max(upto - after, 0)
    n = min(staging.MAX_STAGED, max(1, total // max(min_range, 1)))
    n = max(workers, n - n % workers) if n >= workers else n
    n = min(n, staging.MAX_STAGED, max(total, 1))
    bounds = [after + total * i // n for i in range(n + 1)]
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:], strict=False) if hi > lo]


@dataclass(frozen=True, slots=True)
class Job:
    """One worker's task: convert chat.db's rows in (after, upto] into `staging_path`."""

    chat_db: str
    after: int
    upto: int
    staging_path: str
    schema: tuple[str, ...]
    handle_person: dict[int, str]
    owner: dict[int, str]  # 1:1 chat id → the person on the other side
    tz: tzinfo


@dataclass(slots=True)
class Chunk:
    """What one worker read: counters, watermarks and what its rows touched."""

    counters: ReadCounters
    max_rowid: int
    max_date: float
    max_edit: float
    dirty: set[int]
    # each person's stats over this range's rows (sending the rows would cost more than
    # computing this here), with (ts, from me) of the first dated 1:1 message
    states: dict[str, tuple[StatsState, tuple[float, bool] | None]]
    deferred: list[DeferredReaction]
    tails: list[tuple[int | None, str, str]]  # the legacy-reaction buffer at the range's end
    wall_s: float = 0.0
    cpu_s: float = 0.0


def _init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    os.umask(0o077)  # anything a worker creates is owner-only
    gc.disable()  # as in the main process: the row tuples hold no cycles


def read_chunk(job: Job) -> Chunk:
    """Worker: read, convert and stage one ROWID range (chat.db opened read-only)."""
    wall, cpu = time.perf_counter(), time.process_time()
    conn = ingest.open_chat_db(Path(job.chat_db))
    try:
        caps = ingest.Capabilities.probe(conn)
        counters = ReadCounters()
        reader = RangeReader(conn, caps, job.after, job.upto, counters)
        # -inf: the main process takes the maximum with what the store had
        acc = Accumulator(max_rowid=0, max_date=float("-inf"), max_edit=float("-inf"))
        acc.new = NewRows(job.owner)
        clock, person = LocalClock(job.tz), job.handle_person
        out = staging.StagingWriter(Path(job.staging_path), job.schema)
        full: list[tuple] = []
        plain: list[tuple] = []
        reacts: list[tuple] = []
        for msgs, page_reacts in reader.pages():
            if msgs or page_reacts:
                last = max(
                    msgs[-1].rowid if msgs else 0, page_reacts[-1].rowid if page_reacts else 0
                )
                acc.max_rowid = max(acc.max_rowid, last)
            page_full, page_plain = store_rows(msgs, person, clock, acc)
            full += page_full
            plain += page_plain
            reacts += reaction_rows(page_reacts, person)
            if len(full) + len(plain) >= _BATCH:
                out.put(full, plain, reacts)
                full, plain, reacts = [], [], []
        out.put(full, plain, reacts)
        out.close()
        tails = reader.tails()
    finally:
        conn.close()
    new = acc.new.in_order()
    states = {}
    for pid in new.touched():
        timeline = new.timelines.get(pid, [])
        state = states[pid] = (StatsState(), timeline_head(timeline))
        state[0].add(timeline, new.authored.get(pid, []), clock)
    return Chunk(
        counters, acc.max_rowid, acc.max_date, acc.max_edit, acc.dirty, states,
        reader.deferred, tails, time.perf_counter() - wall, time.process_time() - cpu,
    )  # fmt: skip


def _serve(link: Connection) -> None:
    """A worker's life: jobs in, one at a time, until None; each answered with its Chunk or
    the exception it raised (an IngestError reaches the user as the single reader's would)."""
    _init_worker()
    while (job := link.recv()) is not None:
        try:
            answer: tuple[str, object] = ("ok", read_chunk(job))
        except Exception as exc:  # noqa: BLE001 - handed to the main process, raised there
            answer = ("error", exc)
        link.send(answer)


class _Workers:
    """Worker processes (spawned) fed one job at a time, each over its own pipe.

    Not a multiprocessing.Pool: a Pool replaces a worker that dies (killed, out of memory, or
    a calling script without the `if __name__ == "__main__"` guard, which spawn needs) and
    waits forever for its job; here a dead worker stops the run with an error.
    """

    def __init__(self, n: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.links: list[Connection] = []
        self.procs: list[multiprocessing.process.BaseProcess] = []
        for _ in range(n):
            here, there = context.Pipe()
            proc = context.Process(target=_serve, args=(there,), name="casper-ingest", daemon=True)
            proc.start()
            there.close()
            self.links.append(here)
            self.procs.append(proc)

    def run(self, jobs: list[Job]) -> Iterator[Chunk]:
        """Each job's Chunk, in job order, as soon as it and every job before it are done."""
        todo = list(enumerate(jobs))[::-1]
        busy: dict[Connection, int] = {}
        done: dict[int, Chunk] = {}
        for link in self.links:
            if todo:
                busy[link] = self._give(link, todo.pop())
        for i in range(len(jobs)):
            while i not in done:
                sentinels = [p.sentinel for p in self.procs]
                for ready in wait([*busy, *sentinels]):
                    if not isinstance(ready, Connection):  # a sentinel: a worker process ended
                        raise _stopped(self.procs)
                    link = ready  # a worker answered
                    try:
                        status, payload = link.recv()
                    except (EOFError, OSError):  # it died while answering
                        raise _stopped(self.procs) from None
                    if status == "error":
                        assert isinstance(payload, BaseException)
                        raise payload
                    done[busy.pop(link)] = payload
                    if todo:
                        busy[link] = self._give(link, todo.pop())
            yield done.pop(i)

    def _give(self, link: Connection, job: tuple[int, Job]) -> int:
        try:
            link.send(job[1])
        except OSError:  # the worker is gone
            raise _stopped(self.procs) from None
        return job[0]

    def close(self) -> None:
        """Let idle workers exit (they are stopped outright after a moment)."""
        for link in self.links:
            with contextlib.suppress(OSError):
                link.send(None)
        for proc in self.procs:
            proc.join(timeout=5)
        self.terminate()

    def terminate(self) -> None:
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join()
        for link in self.links:
            link.close()


def _stopped(procs: list[multiprocessing.process.BaseProcess]) -> CasperError:
    codes = [p.exitcode for p in procs if p.exitcode is not None]
    return CasperError(
        f"an ingest worker process stopped unexpectedly (exit code {codes[0] if codes else '?'})",
        hint="run `casper index` again; if it keeps happening, the machine may be short of memory",
    )


@dataclass(slots=True)
class Totals:
    """The workers' own time (wall while busy, CPU), summed over ranges."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    ranges: int = 0


@dataclass(slots=True)
class ParallelReader:
    """The worker processes and staging directory of one ingest run (a context: `open_reader`)."""

    store: Store
    options: Options
    directory: Path
    workers: _Workers | None = None
    aliases: list[str] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)

    def read(
        self,
        chat_db: Path,
        after: int,
        upto: int,
        handle_person: dict[int, str],
        tz: tzinfo,
        acc: Accumulator,
        counters: ReadCounters,
        carry: RecentTexts,
        progress: Progress,
    ) -> None:
        """Rows in (after, upto] into the store (inside the caller's transaction), with what
        they touched folded into `acc` and `counters`. `carry` holds the texts a legacy
        reaction in the first range may quote (the previous run's last rows)."""
        assert self.workers is not None
        schema = staging.staging_schema(self.store.conn)
        owner = acc.new.owner
        ranges = plan_ranges(after, upto, self.options.workers, self.options.min_range)
        acc.new.states = {}  # the workers send each person's stats state, not their rows
        # the last range is open-ended: rows Messages adds meanwhile are read, as the single
        # reader reads to the end
        jobs = [
            Job(str(chat_db), lo, hi if i < len(ranges) - 1 else _NO_END,
                str(self.directory / f"range-{i}.sqlite"), schema, handle_person, owner, tz)
            for i, (lo, hi) in enumerate(ranges)
        ]  # fmt: skip
        total = max(upto - after, 0)
        progress("read", 0, total)
        for i, chunk in enumerate(self.workers.run(jobs)):
            alias = f"casper_staging_{i}"
            self.aliases.append(alias)
            staging.copy_in(self.store.conn, Path(jobs[i].staging_path), alias)
            self._fold(chunk, acc, counters, carry, handle_person)
            progress("read", ranges[i][1] - after, total)
        self.workers.close()  # every range is read: let the workers exit now
        self.workers = None

    def _fold(
        self,
        chunk: Chunk,
        acc: Accumulator,
        counters: ReadCounters,
        carry: RecentTexts,
        handle_person: dict[int, str],
    ) -> None:
        """One range's results, taken in ROWID order (the single reader's order)."""
        counters.add(chunk.counters)
        acc.max_rowid = max(acc.max_rowid, chunk.max_rowid)
        acc.max_date = max(acc.max_date, chunk.max_date)
        acc.max_edit = max(acc.max_edit, chunk.max_edit)
        acc.dirty |= chunk.dirty
        for pid, (state, head) in chunk.states.items():
            acc.new.fold(pid, state, head)
        found = [r for d in chunk.deferred if (r := resolve(carry, d)) is not None]
        counters.legacy_unmatched += len(chunk.deferred) - len(found)
        counters.legacy_reactions += len(found)
        counters.reactions += len(found)
        if found:
            self.store.add_reactions(reaction_rows(found, handle_person))
            acc.max_rowid = max(acc.max_rowid, *(r.rowid for r in found))
        carry.extend(chunk.tails)
        self.totals.wall_s += chunk.wall_s
        self.totals.cpu_s += chunk.cpu_s
        self.totals.ranges += 1


@contextlib.contextmanager
def open_reader(store: Store, options: Options) -> Iterator[ParallelReader]:
    """Start the worker processes (they import while the caller reads people and chats) and a
    private staging directory next to the store; on the way out, whatever happened, stop the
    workers, detach the staging files (the caller's transaction must be over by then) and
    remove them."""
    home = store.path.parent
    _sweep_stale(home)
    directory = Path(tempfile.mkdtemp(prefix=f"{_STAGING_PREFIX}{os.getpid()}-", dir=home))
    os.chmod(directory, 0o700)
    reader = ParallelReader(store, options, directory)
    try:
        reader.workers = _Workers(options.workers)
        yield reader
    finally:
        if reader.workers is not None:
            reader.workers.terminate()
        try:
            staging.detach(store.conn, reader.aliases)
        finally:
            shutil.rmtree(directory, ignore_errors=True)


def _sweep_stale(home: Path) -> None:
    """Remove staging directories of runs that died without cleaning up (kill -9)."""
    for path in home.glob(f"{_STAGING_PREFIX}*"):
        try:
            pid = int(path.name[len(_STAGING_PREFIX) :].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
