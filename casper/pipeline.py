"""The ingest use-case: chat.db + AddressBook → Casper's store (+ stats) → search index.

Incremental: a cheap check first; then only rows after the ROWID watermark, recent edits and
unsends, tombstones and disappeared rows. Imports: ingest, casper.store, casper.stats, casper.people.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import tzinfo
from pathlib import Path

import ingest
from casper.errors import CasperError
from casper.people import UNKNOWN_CHAT, build_directory, label_chats
from casper.records import ME, StoredMessage
from casper.stats import Line, compute_stats
from casper.store.db import Store
from ingest.dates import APPLE_EPOCH_OFFSET
from ingest.errors import IngestError
from ingest.records import Message, Reaction

log = logging.getLogger(__name__)

STAGES = ("check", "read", "store", "stats", "index")
UNKNOWN_SENDER = "unknown"


@dataclass(slots=True)
class IngestReport:
    """What one `casper index` run did (the `index --json` shape plus timings)."""

    messages_total: int = 0
    messages_new: int = 0
    chunks_total: int = 0
    chunks_new: int = 0
    decode_failures: int = 0
    reactions: int = 0
    events: int = 0
    deleted: int = 0
    recently_deleted_skipped: int = 0
    coverage: dict[str, float | None] = field(default_factory=lambda: {"first": None, "last": None})
    elapsed_s: float = 0.0
    noop: bool = False
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


# (stage, done, total) — total None while unknown
Progress = Callable[[str, int, int | None], None]
IndexFn = Callable[[Store, dict[int, bool], Progress], tuple[int, int]]


def _signature(path: Path | None) -> str:
    """A cheap fingerprint of the AddressBook files (names change → people are rebuilt)."""
    if path is None or not path.exists():
        return "none"
    files = [path] if path.is_file() else sorted(path.glob("**/*.abcddb"))
    return ";".join(f"{f}:{f.stat().st_mtime_ns}:{f.stat().st_size}" for f in files if f.is_file())


def _to_stored(m: Message, handle_person: dict[int, str]) -> StoredMessage:
    if m.is_from_me:
        sender = ME
    else:
        sender = handle_person.get(m.handle_rowid or -1, UNKNOWN_SENDER)
    return StoredMessage(
        rowid=m.rowid,
        guid=m.guid,
        chat_id=m.chat_rowid or 0,
        sender=sender,
        ts=m.ts,
        text=m.text,
        kind=m.kind,
        edited=m.edited,
        reply_to=m.reply_to_guid,
        attachments=tuple((a.name, a.mime) for a in m.attachments),
        event=m.event,
    )


def _reaction_row(r: Reaction, handle_person: dict[int, str]) -> tuple:
    sender = ME if r.is_from_me else handle_person.get(r.handle_rowid or -1, UNKNOWN_SENDER)
    return (r.guid, r.target_guid, sender, r.kind, r.emoji, r.ts)


@dataclass(slots=True)
class _Accumulator:
    """What the rows of one run touched, and the new watermarks."""

    max_rowid: int
    max_date: float
    max_edit: float
    dirty: set[int] = field(default_factory=set)
    authors: set[str] = field(default_factory=set)


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
    ) -> None:
        self.store = store
        self.chat_db = chat_db
        self.contacts = contacts
        self.tz = tz
        self.progress: Progress = on_progress or (lambda stage, done, total: None)
        self.batch_size = batch_size

    def run(self, *, rebuild: bool = False, index_fn: IndexFn | None = None) -> IngestReport:
        """Bring the store (and, with `index_fn`, the search index) up to date."""
        started = time.perf_counter()
        report = IngestReport()
        try:
            self._run(report, rebuild, index_fn)
        except IngestError as exc:
            raise CasperError(exc.message, hint=exc.hint) from exc
        report.messages_total = self.store.message_count() - self.store.message_count(kind="system")
        first, last = self.store.coverage()
        report.coverage = {"first": first, "last": last}
        report.elapsed_s = round(time.perf_counter() - started, 3)
        return report

    def _run(self, report: IngestReport, rebuild: bool, index_fn: IndexFn | None) -> None:
        t0 = time.perf_counter()
        conn = ingest.open_chat_db(self.chat_db)
        try:
            caps = ingest.Capabilities.probe(conn)
            state = ingest.snapshot_state(conn, caps)
            source = str(self.chat_db.resolve())
            if self.store.get_meta("source") not in (None, source):
                rebuild = True  # a different chat.db: never mix two people's histories
            if rebuild:
                self._reset()
            watermark = int(self.store.meta_float("watermark_rowid"))
            edited_after = self.store.meta_float("edited_after")
            last_date = self.store.meta_float("last_date")
            changed = (
                ingest.read_changed(
                    conn, caps, upto_rowid=watermark, since_date_unix=last_date,
                    # never before Apple's epoch: an unset date_edited (0) must not match
                    edited_after_unix=max(edited_after, APPLE_EPOCH_OFFSET),
                )
                if watermark
                else []
            )
            contacts_sig = _signature(self.contacts)
            unchanged = (
                watermark == state.max_rowid
                and not changed
                and int(self.store.meta_float("source_count")) == state.message_count
                and int(self.store.meta_float("deleted_rowid")) == state.max_deleted_rowid
                and int(self.store.meta_float("recoverable_count")) == state.recoverable_count
                and self.store.get_meta("contacts_sig") == contacts_sig
                # dirty chats only matter when this run also maintains the search index
                and not (index_fn is not None and self.store.dirty_chats())
            )
            report.timings["check"] = round(time.perf_counter() - t0, 4)
            if unchanged:
                report.noop = True
                return
            with self.store.transaction():
                self.store.set_meta("source", source)
                self._ingest(conn, caps, state, watermark, changed, contacts_sig, report)
        finally:
            conn.close()
        if index_fn is not None:
            t1 = time.perf_counter()
            dirty = self.store.dirty_chats()
            report.chunks_total, report.chunks_new = index_fn(self.store, dirty, self.progress)
            with self.store.transaction():
                self.store.clear_dirty(dirty)
            report.timings["index"] = round(time.perf_counter() - t1, 3)

    def _reset(self) -> None:
        with self.store.transaction():
            for table in ("messages", "reactions", "contact_stats", "chats", "meta"):
                self.store.conn.execute(f"DELETE FROM {table}")

    def _ingest(self, conn, caps, state, watermark, changed, contacts_sig, report) -> None:  # noqa: ANN001
        t = time.perf_counter()
        handles = ingest.load_handles(conn)
        contacts = ingest.load_contacts(self.contacts)
        directory = build_directory(handles, ingest.match_contacts(handles, contacts))
        people_changed = self.store.get_meta("contacts_sig") != contacts_sig or {
            p.id: p.name for p in self.store.people()
        } != {p.id: p.name for p in directory.people}
        self.store.replace_people(directory.people, dict(directory.contact_keys))
        chats = label_chats(ingest.load_chats(conn, caps), directory)
        self.store.upsert_chats([*chats, UNKNOWN_CHAT])
        handle_person = dict(directory.handle_person)

        counters = ingest.ReadCounters()
        acc = _Accumulator(
            max_rowid=watermark,
            max_date=self.store.meta_float("last_date"),
            # edits/unsends are found by their own time, newer than any we have seen
            max_edit=self.store.meta_float("edited_after"),
        )
        total = max(state.max_rowid - watermark, 0)
        # a first run (or one with a large backlog) loads faster without live secondary indexes
        bulk = self.store.bulk_load() if total > 50_000 else contextlib.nullcontext()
        with bulk:
            self._read_rows(conn, caps, watermark, counters, handle_person, total, acc)
        report.timings["read+store"] = round(time.perf_counter() - t, 3)
        dirty, dirty_full, authors = acc.dirty, set(), acc.authors
        max_rowid, max_date, max_edit = acc.max_rowid, acc.max_date, acc.max_edit

        for m in changed:
            stored = _to_stored(m, handle_person)
            self.store.upsert_messages([stored])
            dirty_full.add(stored.chat_id)
            authors.add(stored.sender)
            max_edit = max(max_edit, m.date_edited or 0.0, m.date_retracted or 0.0)

        count_before = self.store.message_count()
        deleted_guids, deleted_rowid = ingest.load_deleted_guids(
            conn, caps, after_rowid=int(self.store.meta_float("deleted_rowid"))
        )
        gone_chats = self.store.delete_messages(deleted_guids)
        recently = sorted(ingest.load_recently_deleted_rowids(conn, caps))
        gone_chats |= self.store.delete_rowids(recently)
        expected = int(self.store.meta_float("source_count")) + (state.max_rowid - watermark)
        if watermark and state.message_count < expected:
            # rows vanished without a tombstone: compare rowids once (only on this rare path)
            missing = sorted(self.store.rowids() - ingest.load_rowids(conn))
            gone_chats |= self.store.delete_rowids(missing)
        dirty_full |= gone_chats
        report.deleted = count_before - self.store.message_count()

        self.store.mark_dirty(dirty - dirty_full)
        self.store.mark_dirty(dirty_full | (set(c.id for c in chats) if people_changed else set()), full=True)
        t = time.perf_counter()
        stale = {p.id for p in directory.people} if people_changed or gone_chats else authors
        self._update_stats(stale, chats)
        report.timings["stats"] = round(time.perf_counter() - t, 3)

        report.messages_new = counters.messages - counters.events
        report.decode_failures = counters.decode_failures
        report.reactions = counters.reactions + counters.legacy_reactions
        report.events = counters.events
        report.recently_deleted_skipped = counters.recently_deleted_skipped
        for key, value in (
            ("watermark_rowid", max_rowid),
            ("source_count", state.message_count),
            ("deleted_rowid", max(deleted_rowid, int(self.store.meta_float("deleted_rowid")))),
            ("recoverable_count", state.recoverable_count),
            ("contacts_sig", contacts_sig),
            ("last_date", max_date),
            ("edited_after", max_edit),
            ("decode_failures", int(self.store.meta_float("decode_failures")) + counters.decode_failures),
        ):
            self.store.set_meta(key, value)

    def _read_rows(self, conn, caps, watermark, counters, handle_person, total, acc) -> None:  # noqa: ANN001
        """Stream new rows into the store in batches, noting what they touch."""
        batch: list[StoredMessage] = []
        reactions: list[tuple] = []

        def flush() -> None:
            self.store.upsert_messages(batch)
            self.store.add_reactions(reactions)
            batch.clear()
            reactions.clear()

        for row in ingest.iter_rows(conn, caps, after_rowid=watermark, stats=counters):
            acc.max_rowid = max(acc.max_rowid, row.rowid)
            if isinstance(row, Reaction):
                reactions.append(_reaction_row(row, handle_person))
                continue
            stored = _to_stored(row, handle_person)
            batch.append(stored)
            acc.max_date = max(acc.max_date, stored.ts)
            acc.max_edit = max(acc.max_edit, row.date_edited or 0.0, row.date_retracted or 0.0)
            acc.dirty.add(stored.chat_id)
            acc.authors.add(stored.sender)
            if len(batch) >= self.batch_size:
                flush()
                self.progress("read", acc.max_rowid - watermark, total)
        flush()
        self.progress("read", total, total)

    def _update_stats(self, person_ids: Iterable[str], chats: list) -> None:  # noqa: ANN001
        one_to_one: dict[str, list[int]] = {}
        for chat in chats:
            if not chat.is_group and len(chat.members) == 1:
                one_to_one.setdefault(chat.members[0], []).append(chat.id)
        for pid in sorted(set(person_ids) - {ME, UNKNOWN_SENDER}):
            timeline = [
                Line(s, ts, c, text)
                for s, c, ts, text in self.store.texts_for_person(one_to_one.get(pid, []), None, None)
            ]
            authored = [Line(s, ts, c, text) for s, c, ts, text in self.store.sent_by(pid, None, None)]
            self.store.set_stats(pid, compute_stats(pid, timeline, authored, self.tz))
