"""The ingest step of `casper index`: chat.db + AddressBook → Casper's store (+ stats).

Incremental: a cheap check first; then only rows after the ROWID watermark, recent edits and
unsends, tombstones and disappeared rows. Stats fold this run's rows into each person's saved
state; only what changes history (edits, deletions, a new zone or address book) reads back.
Imports: ingest, casper.store, casper.stats, casper.indexer.*. The stages' decisions live
beside it: `check` (the cheap check), `people_chats` (people and chats), `changes` (edits,
unsends, deletions of stored rows), `stats_update` (each person's stats after the run), `rows`
(the rows of the hot loop), `parallel` (a large backlog read by worker processes). The whole
run (ingest, then the chunk index and its vectors) is `casper.indexer.run.run_index`.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

import ingest
from casper.errors import CasperError
from casper.indexer import exclude as exclusions
from casper.indexer import identity, reconcile
from casper.indexer import parallel as ingest_parallel
from casper.indexer.changes import apply_changed, delete_gone
from casper.indexer.check import changed_since_last_run, contacts_signature, nothing_to_do
from casper.indexer.exclude import Exclusions, Purged, purge
from casper.indexer.people import Directory
from casper.indexer.people_chats import one_to_one_chats, people_and_chats
from casper.indexer.report import IngestReport, record_stage, stage
from casper.indexer.rows import Accumulator, NewRows, reaction_rows, store_rows
from casper.indexer.stats_update import Fresh, forget, stats_from_memory, update_stats
from casper.records import ChatInfo
from casper.stats import LocalClock, zone_id
from casper.store.db import PUBLISHED_THROUGH, Store
from ingest.errors import IngestError
from ingest.messages import iter_pages, seed_recent
from ingest.records import Message

if TYPE_CHECKING:
    import sqlite3

log = logging.getLogger(__name__)

STAGES = ("check", "read", "store", "stats", "index")
# store meta: a `casper index --rebuild` started and its index is not published yet (the next
# run finishes it); kept, like the store's id, when a rebuild empties the store
REBUILD_PENDING = "rebuild_pending"


# (stage, done, total) — total None while unknown
Progress = Callable[[str, int, int | None], None]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC while ingesting: it would re-scan the growing batches of row tuples (which
    hold no cycles) every few thousand allocations, ~4% of the run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True, slots=True)
class _Source:
    """The open chat.db and what the cheap check learned about it; `_ingest` works from it."""

    conn: sqlite3.Connection
    caps: ingest.Capabilities
    state: ingest.SourceState
    watermark: int  # ROWID read up to by the last run (0: read everything)
    changed: list[Message]  # older rows edited or unsent since the last run
    contacts_sig: str
    # the store against chat.db by ROWID and guid, when the cheap check had a doubt
    compared: identity.Comparison | None = None
    # worker processes reading the new rows side by side (a large backlog only), else None
    parallel: ingest_parallel.ParallelReader | None = None


def probe_source(chat_db: Path) -> None:
    """Open chat.db read-only and probe its tables as a run does; CasperError (with the same
    hint a run would give) when it can't be read as a Messages database."""
    try:
        conn = ingest.open_chat_db(chat_db)
        try:
            ingest.Capabilities.probe(conn)
        finally:
            conn.close()
    except IngestError as exc:
        raise CasperError(exc.message, hint=exc.hint) from exc


class Indexer:
    """Runs one incremental (or full) ingest into an open store."""

    def __init__(
        self,
        store: Store,
        chat_db: Path,
        contacts: Path | None,
        tz: tzinfo,
        *,
        on_progress: Progress | None = None,
        batch_size: int = 20_000,
        parallel: ingest_parallel.Options | None = None,
        exclude: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.chat_db = chat_db
        self.contacts = contacts
        self.tz = tz
        self.progress: Progress = on_progress or (lambda stage, done, total: None)
        self.batch_size = batch_size
        # worker processes for a large backlog (Options(workers=1): never)
        self.parallel = parallel or ingest_parallel.Options()
        self.exclude = tuple(exclude)  # the setting `exclude` (casper.indexer.exclude)
        self.excluded = Exclusions()  # what it names in this history, once people are read
        self.purged = Purged()  # what this run removed of theirs from the store
        self.dropped = 0  # their rows (messages and tapbacks) this run read and did not store

    def run(self, *, rebuild: bool = False, indexing: bool = False) -> IngestReport:
        """Bring the store up to date. With `indexing` (the run keeps a search index too), chats
        still marked dirty by an earlier run make it more than a no-op."""
        started, cpu = time.perf_counter(), time.process_time()
        report = IngestReport()
        try:
            self._run(report, rebuild, indexing)
        except IngestError as exc:
            raise CasperError(exc.message, hint=exc.hint) from exc
        report.messages_total = self.store.messages_total()
        report.undated = self.store.undated_count()
        first, last = self.store.coverage()
        report.coverage = {"first": first, "last": last}
        report.elapsed_s = round(time.perf_counter() - started, 3)
        report.cpu_s["total"] = round(time.process_time() - cpu, 3)
        return report

    def _run(self, report: IngestReport, rebuild: bool, indexing: bool) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        conn = ingest.open_chat_db(self.chat_db)
        try:
            caps = ingest.Capabilities.probe(conn)
            state = ingest.snapshot_state(conn, caps)
            source = str(self.chat_db.resolve())
            another = self.store.get_meta("source") not in (None, source)
            if another:
                rebuild = True  # a different chat.db: never mix two people's histories
            # a reset happens inside the ingest transaction below, so until then the previous
            # store stays as it is (a database that fails mid-read must not leave it empty)
            watermark = 0 if rebuild else int(self.store.meta_float("watermark_rowid"))
            # ROWIDs are not identities: an older copy put back, or the history downloaded
            # again, is read whole (casper.indexer.identity, casper.indexer.reconcile)
            doubt = identity.suspect(self.store, conn, state, watermark)
            compared = None
            if doubt:  # rows kept out (`exclude`) were never stored: not new, though unread
                kept_out = exclusions.counter(conn, caps, self.contacts, self.exclude,
                                              exclusions.stored_bound(self.store))  # fmt: skip
                compared = identity.compare(self.store, conn, caps, watermark, kept_out)
            rewritten = compared.rewritten if compared is not None else None
            if rewritten:
                log.warning("chat.db's history was rewritten (%s): reading it again", rewritten)
                watermark = 0
            changed = changed_since_last_run(self.store, conn, caps, watermark)
            contacts_sig = contacts_signature(self.contacts)
            unchanged = not doubt and nothing_to_do(
                self.store,
                state,
                rebuild=rebuild,
                watermark=watermark,
                changed=changed,
                contacts_sig=contacts_sig,
                tz=self.tz,
                indexing=indexing,
            )
            record_stage(report, "check", wall, cpu)
            if unchanged:
                report.noop = True
                return
            new_rows = max(state.max_rowid - watermark, 0)
            # the workers start here: they import while people and chats are read
            workers = (
                ingest_parallel.open_reader(self.store, self.parallel)
                if self.parallel.applies(new_rows, self.tz)
                else contextlib.nullcontext()
            )
            # a first fill (nothing stored yet) writes its pages once, not to a log and back
            first = watermark == 0 and not rebuild and not self.store.has_messages()
            # one transaction: a crash anywhere in it leaves the previous store as it was
            with (
                workers as reader,
                stage(report, "ingest"),
                self.store.first_fill() if first else contextlib.nullcontext(),
                self.store.transaction(),
                _gc_paused(),
            ):
                if rebuild:
                    self._reset(another_history=another)
                elif rewritten:  # kept aside, to keep the chunks of what did not change
                    reconcile.snapshot(self.store)
                    self._reset(another_history=False, keep_contacts=True)
                if self.store.get_meta("store_id") is None:
                    self.store.set_meta("store_id", uuid.uuid4().hex)  # the index follows it
                self.store.set_meta("source", source)
                src = _Source(conn, caps, state, watermark, changed, contacts_sig, compared,
                              reader)  # fmt: skip
                self._ingest(src, report)
                if rewritten:
                    self._settle(rewritten, report)
                committing = time.perf_counter(), time.process_time()
            record_stage(report, "commit+cleanup", *committing)  # staging files removed too
        finally:
            conn.close()

    def _reset(self, *, another_history: bool, keep_contacts: bool = False) -> None:
        """Empty the store (inside the caller's transaction) to read everything again. For
        another history it gets a new `store_id`, which tells the search index to drop every
        chunk of the old one; a rebuild of the same chat.db keeps it (and a pending-rebuild
        mark), so the index it has keeps serving until the rebuilt one is published. A
        rewritten history keeps the AddressBook's signature too: unchanged names re-chunk
        nothing."""
        same = ("store_id", REBUILD_PENDING, PUBLISHED_THROUGH)  # the published index still holds
        # the chats an exclusion was bound to stay bound (reading again must not bring back a
        # group kept out that was renamed since), and the entries the index was purged for stay
        # recorded until this run records its own (casper.indexer.exclude)
        kept_out = (exclusions.BOUND, exclusions.EXCLUDED)
        keep = (REBUILD_PENDING, *kept_out) if another_history else (*same, *kept_out)
        if keep_contacts:
            keep = (*keep, "contacts_sig")
        for table in ("messages", "reactions", "contact_stats", "chats", "dirty_chats"):
            self.store.conn.execute(f"DELETE FROM {table}")
        marks = ", ".join("?" * len(keep))
        self.store.conn.execute(f"DELETE FROM meta WHERE key NOT IN ({marks})", keep)

    def _ingest(self, src: _Source, report: IngestReport) -> None:
        """Read everything new into the store and bring the stats up to date (one transaction,
        opened by the caller)."""
        directory, chats, people_changed = self._people_and_chats(src)
        handle_person = dict(directory.handle_person)
        # stats columns (local day/hour) are precomputed for one zone: a new zone redoes them
        zone_changed = self.store.get_meta("local_tz") != zone_id(self.tz)
        if zone_changed and src.watermark:
            self.store.refresh_local(LocalClock(self.tz))
        counters = ingest.ReadCounters()
        acc = Accumulator(
            # rows gone from the top of chat.db were deleted (casper.indexer.identity): their
            # ROWIDs may be given to the next messages, which must then count as new
            max_rowid=min(src.watermark, src.state.max_rowid),
            max_date=self.store.meta_float("last_date"),
            # edits/unsends are found by their own time, newer than any we have seen
            max_edit=self.store.meta_float("edited_after"),
        )
        one_to_one = one_to_one_chats(chats)
        everybody = {p.id for p in directory.people}
        fresh = self._read_new(src, counters, handle_person, one_to_one, everybody, acc, report)

        owner = {chat: pid for pid, ids in one_to_one.items() for chat in ids}
        changed = []
        for m in src.changed:  # edits of rows kept out: not stored, but seen (never read again)
            if self.excluded.drops(m, handle_person):
                acc.max_edit = max(acc.max_edit, m.date_edited or 0.0, m.date_retracted or 0.0)
            else:
                changed.append(m)
        dirty_full, edited_people = apply_changed(
            self.store, self.tz, changed, handle_person, owner, acc
        )
        count_before = self.store.message_count()
        gone_senders: set[str] = set()
        gone_chats, deleted_rowid = delete_gone(
            self.store, src.conn, src.caps, src.compared, gone_senders
        )
        dirty_full |= gone_chats
        report.deleted = count_before - self.store.message_count()
        # what the store holds of people and chats kept out: rows read by worker processes,
        # edits, and everything stored before the exclusion was added
        purged = self.purged = purge(self.store, self.excluded)
        dirty_full |= purged.chats

        if src.compared is not None and src.compared.rewritten:
            acc.dirty = set()  # what changed is settled against the snapshot (see _settle)
        self.store.mark_dirty(acc.dirty - dirty_full)
        everything = set(c.id for c in chats) if people_changed else set()
        self.store.mark_dirty(dirty_full | everything, full=True)
        self.progress("stats", 0, None)
        with stage(report, "stats"):
            # who needs a recompute from the store; everyone else just folds in the new rows
            redo = edited_people | gone_senders | {owner[c] for c in gone_chats if c in owner}
            if people_changed or zone_changed or (fresh.store_was_empty and report.deleted):
                redo = everybody
            if report.deleted:  # rows read into an empty store were all there is, until now
                fresh.states.clear()
            if purged.messages:  # their rows gone: the others' stats counted again from the store
                redo |= purged.senders | {owner[c] for c in purged.chats if c in owner}
            redo -= self.excluded.people  # people kept out have no stats at all
            forget(acc.new, fresh, self.excluded.people | (redo if purged.messages else set()))
            update_stats(self.store, self.tz, acc.new.in_order(), one_to_one, redo, fresh.states)
        self.progress("stats", 1, 1)

        report.messages_new = counters.messages - counters.events
        report.decode_failures = counters.decode_failures
        report.reactions = counters.reactions  # legacy SMS reactions are counted in it already
        report.events = counters.events
        report.recently_deleted_skipped = counters.recently_deleted_skipped
        self._save_watermarks(src, acc, deleted_rowid, counters)

    def _settle(self, reason: str, report: IngestReport) -> None:
        """After a rewritten history was read again: mark only the chats that differ from the
        snapshot, and report by guid what vanished, what is new and what was kept."""
        settled = reconcile.settle(self.store, reason)
        self.store.mark_dirty(settled.chats, full=True)
        report.reconciled = settled.to_dict()
        report.messages_new = settled.new
        report.deleted = settled.vanished
        log.info("history reconciled: %s", report.reconciled)

    def _people_and_chats(self, src: _Source) -> tuple[Directory, list[ChatInfo], bool]:
        """People (one per AddressBook card) and labelled chats, saved; True if names changed."""
        # kept a method: a test wraps it to move chat.db away between the check and the read
        directory, chats, changed, self.excluded = people_and_chats(
            self.store, src.conn, src.caps, self.contacts, src.contacts_sig, self.exclude
        )
        return directory, chats, changed

    def _read_new(
        self,
        src: _Source,
        counters: ingest.ReadCounters,
        handle_person: dict[int, str],
        one_to_one: dict[str, list[int]],
        everybody: set[str],
        acc: Accumulator,
        report: IngestReport,
    ) -> Fresh:
        """Stream the rows after the watermark into the store; into an empty store, the stats
        come from those rows in memory (no SQL needed)."""
        fresh = Fresh(store_was_empty=self.store.message_count() == 0)
        acc.new = NewRows({chat: pid for pid, ids in one_to_one.items() for chat in ids})

        def fresh_stats() -> None:
            if fresh.store_was_empty:
                with stage(report, "stats (from memory)"):
                    stats_from_memory(fresh, acc.new.in_order(), everybody, self.tz)

        total = max(src.state.max_rowid - src.watermark, 0)
        # a first run (or one with a large backlog) loads faster without live secondary indexes
        if total > 50_000:  # index build and in-memory stats run side by side
            with (
                stage(report, "read+store+indexes"),
                # workers leave the main process time to keep the time-ordered indexes up as
                # ranges are copied in, instead of building them all at the end
                self.store.bulk_load(alongside=fresh_stats, unique_only=src.parallel is not None),
                stage(report, "read+store"),
            ):
                self._read_rows(src, counters, handle_person, total, acc)
        else:
            with stage(report, "read+store"):
                self._read_rows(src, counters, handle_person, total, acc)
            fresh_stats()
        if src.parallel is not None:  # the workers' own time, beside the main process's
            report.timings["read workers (busy)"] = round(src.parallel.totals.wall_s, 3)
            report.cpu_s["read workers (busy)"] = round(src.parallel.totals.cpu_s, 3)
        return fresh

    def _save_watermarks(
        self, src: _Source, acc: Accumulator, deleted_rowid: int, counters: ingest.ReadCounters
    ) -> None:
        for key, value in (
            ("watermark_rowid", acc.max_rowid),
            ("source_count", src.state.message_count),
            # never above chat.db's own: an older copy put back numbers its next tombstones
            # from there
            (
                "deleted_rowid",
                min(
                    max(deleted_rowid, int(self.store.meta_float("deleted_rowid"))),
                    src.state.max_deleted_rowid,
                ),
            ),  # fmt: skip
            ("recoverable_count", src.state.recoverable_count),
            ("contacts_sig", src.contacts_sig),
            ("local_tz", zone_id(self.tz)),
            ("last_date", acc.max_date),
            ("edited_after", acc.max_edit),
            (
                "decode_failures",
                int(self.store.meta_float("decode_failures")) + counters.decode_failures,
            ),
        ):
            self.store.set_meta(key, value)
        identity.save_anchors(self.store)

    def _read_rows(
        self,
        src: _Source,
        counters: ingest.ReadCounters,
        handle_person: dict[int, str],
        total: int,
        acc: Accumulator,
    ) -> None:
        """Stream new rows into the store page by page, noting what they touch."""
        conn, caps, watermark = src.conn, src.caps, src.watermark
        if src.parallel is not None:
            # the last range is open-ended, as the single reader reads to the end
            src.parallel.read(
                self.chat_db, watermark, src.state.max_rowid, handle_person, self.tz, acc,
                counters, seed_recent(conn, caps, watermark), self.progress,
            )  # fmt: skip
            self.progress("read", counters.rows, counters.rows)  # rows read, not ROWIDs spanned
            return
        clock = LocalClock(self.tz)
        self.progress("read", 0, total)
        full: list[tuple] = []
        plain: list[tuple] = []
        reactions: list[tuple] = []
        excluded = self.excluded
        for msgs, reacts in iter_pages(conn, caps, after_rowid=watermark, stats=counters):
            if msgs or reacts:
                last = max(msgs[-1].rowid if msgs else 0, reacts[-1].rowid if reacts else 0)
                acc.max_rowid = max(acc.max_rowid, last)
            if excluded:  # kept out: never stored (casper.indexer.exclude)
                kept = [m for m in msgs if not excluded.drops(m, handle_person)]
                liked = [r for r in reacts if not excluded.drops_reaction(r, handle_person)]
                self.dropped += len(msgs) - len(kept) + len(reacts) - len(liked)
                msgs, reacts = kept, liked
            page_full, page_plain = store_rows(msgs, handle_person, clock, acc)
            full += page_full
            plain += page_plain
            reactions += reaction_rows(reacts, handle_person)
            if len(full) + len(plain) >= self.batch_size:
                self.store.put_messages(full, plain)
                self.store.add_reactions(reactions)
                full, plain, reactions = [], [], []
                self.progress("read", acc.max_rowid - watermark, total)
        self.store.put_messages(full, plain)
        self.store.add_reactions(reactions)
        # done: the rows read (what `doctor` counts in chat.db), not the ROWID span the bar
        # moved along (deleted rows leave gaps in it)
        self.progress("read", counters.rows, counters.rows)
