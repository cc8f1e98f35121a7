"""`casper index` as one use-case: ingest → chunk the dirty chats (the lexical legs answer) →
clear them → publish → fill in the vectors (published as they arrive).

It receives what it needs and returns what it did: the open store, where the history is
(`Source`), where the chunk index is (`IndexPlace`), how to get the embedder (`EmbedderSupply`,
called only when the run touches the index, so a no-op run never builds or loads a model) and
how chats are cut (`ChunkOptions`). The composition root builds those from a Config; nothing here
reads one. The caller holds the run lock (`casper.indexer.lock`).

Imports: casper.indexer (pipeline, chunk_update, chunking, report), casper.index (place, files,
chunk_index types), casper.store, casper.protocols.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from casper.index.files import Generation
from casper.indexer import chunk_update
from casper.indexer import exclude as exclusions
from casper.indexer.chunk_update import VectorFill
from casper.indexer.chunking import ChunkOptions
from casper.indexer.pipeline import REBUILD_PENDING, Indexer, Progress
from casper.indexer.reconcile import remember_reconciled
from casper.indexer.report import IngestReport, detailed, stage
from casper.indexer.salvage import salvage_index
from casper.protocols import Embedder
from casper.store.db import Store

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from casper.index.chunk_index import ChunkIndex
    from casper.index.place import IndexPlace

Announce = Callable[[str], None]
# a run that embeds this many chunks or more is bulk work (a large first index, --rebuild, a
# large reconcile): the `BulkSupply` races the engines on it (casper.backends.bulk). Below it the
# race cannot pay for itself: measured quiet, a phone's first index (814-848 chunks), the demo
# (2,388) and a 5,596-chunk history raced ran at 0.73-0.93x the faster engine (torch's 4.6-6.1 s
# load and the slower engine's slices, against at most ~7 % torch gains while embedding), and
# onnxruntime alone was the faster or equal engine on all four (docs/performance.md)
BULK_CHUNKS = 20_000


@dataclass(frozen=True, slots=True)
class Source:
    """The history to read: Messages' chat.db (read-only), the AddressBook, the local zone."""

    chat_db: Path
    contacts: Path | None
    tz: tzinfo
    exclude: tuple[str, ...] = ()  # people, chats and handles kept out (casper.indexer.exclude)


class EmbedderSupply(Protocol):
    """The embedder the run writes with, built when the run first needs one. It may load the
    model under the "load" progress stage, or return a deferred one (`Deferred`) whose identity
    is known without loading; the run then loads it just before the first embedding."""

    def __call__(self, progress: Progress) -> Embedder: ...


class BulkSupply(Protocol):
    """The engine for a bulk run (it may race engines on the run's own passages): `default`
    builds the run's usual engine, `check` refuses an engine that is not the index's model,
    `said` hears each choice in words ("torch: 1.3× onnxruntime on this run's passages"). The
    engine it returns says where it embeds, and why, in its `placement`."""

    def __call__(
        self,
        default: Callable[[], Embedder],
        check: Callable[[Embedder], None],
        said: Callable[[str], None],
    ) -> Embedder: ...


@runtime_checkable
class Deferred(Protocol):
    """An embedder whose model loads on first use (casper.backends.lazy.LazyEmbedder)."""

    @property
    def loaded(self) -> bool: ...

    def real(self) -> Embedder: ...

    def set_check(self, check: Callable[[Embedder], None]) -> None: ...


@runtime_checkable
class Placed(Protocol):
    """Where an embedder runs (casper.backends.placement.Placement)."""

    backend: str
    device: str
    threads: int | None
    notice: str | None
    why: str | None

    def short(self) -> str: ...


@dataclass(frozen=True, slots=True)
class IndexRunReport:
    """What one run did: the store side (the `index --json` numbers and timings), the vector
    fill (None when there is no index), the embedder it built (None when it needed none; a
    caller may reuse it) and the generation readers follow afterwards."""

    ingest: IngestReport
    vectors: VectorFill | None
    embedder: Embedder | None
    generation: Generation


def _silent(stage_name: str, done: int, total: int | None) -> None:
    pass


def _unsaid(_text: str) -> None:
    pass


def run_index(
    store: Store,
    source: Source,
    place: IndexPlace,
    embedder: EmbedderSupply,
    *,
    options: ChunkOptions,
    rebuild: bool = False,
    progress: Progress = _silent,
    announce: Announce = _unsaid,
    bulk: BulkSupply | None = None,
) -> IndexRunReport:
    """Bring the store, the chunk index and its vectors up to date with the history.

    Args:
        store: the open store (created empty by the caller on a first run).
        source: the chat.db and AddressBook to read, and the zone stats are counted in.
        place: the chunk index's directory and chunker signature.
        embedder: builds the embedder, only when the run touches the index.
        options: how chats are cut into chunks.
        rebuild: start over: re-read the history, rebuild every chunk (readers keep the
            published generation until the rebuilt one is published) and, when the index was
            built with another model or no longer opens, start a new index directory.
        progress: (stage, done, total) for every stage, "check" to "embed".
        announce: one-line messages for the user ("resuming: N of M chunks already embedded").
        bulk: picks the engine when the run embeds BULK_CHUNKS or more (None: the embedder's).

    Returns:
        IndexRunReport; `ingest.noop` when nothing changed (no model built, LanceDB not imported
        while the vectors are complete).
    """
    started, cpu = time.perf_counter(), time.process_time()
    # a rebuild is remembered until its index is published: one that was killed (or ran out
    # of disk) is finished by the next run, whatever flags that one is given
    rebuild = rebuild or store.get_meta(REBUILD_PENDING) is not None
    added, removed = exclusions.change(store, source.exclude)
    compact = bool(added or removed) and store.has_messages()
    if compact:  # read again: without them (and the index rewritten), or with them back
        announce(exclusions.change_line(added, removed))
        rebuild = True
    if rebuild:
        store.set_meta(REBUILD_PENDING, time.time())  # committed at once, before the ingest
    indexer = Indexer(store, source.chat_db, source.contacts, source.tz, on_progress=progress,
                      exclude=source.exclude)  # fmt: skip
    ingest = indexer.run(rebuild=rebuild, indexing=True)
    built: Embedder | None = None
    index: ChunkIndex | None = None
    written = 0  # chunks the lexical step wrote for embedding
    noop = ingest.noop
    if place.outdated():  # built by an earlier version: its table is rebuilt, vectors kept
        announce("rebuilding the search index for this version of Casper (vectors are kept)")
        noop = False
    if noop:
        # a run with nothing new reports this without opening the index
        chunks_total, chunks_new = int(store.meta_float("chunks_total")), ingest.chunks_new
    else:
        with stage(ingest, "index"):
            built = embedder(progress)
            # rows purged from the store (casper.indexer.exclude) leave the index too: rewritten
            # whole, so no older fragment keeps a compressed copy of their text (marked as a
            # rebuild: a run killed before it is published is finished by the next one)
            rewrite = rebuild or bool(indexer.purged.messages)
            if rewrite and not rebuild:
                store.set_meta(REBUILD_PENDING, time.time())
            index = _open_for_writing(place, built, rewrite, announce)
            dirty = store.dirty_chats()
            wanted = dirty if index.count() else {c.id: True for c in store.chats()}
            update = chunk_update.update_lexical(
                store, index, dirty=wanted, options=options, on_progress=progress
            )
            index.publish_run()  # even when no chunk changed: the store did
            # published first, then done: a crash between the two re-chunks these chats on the
            # next run instead of leaving chunks nobody publishes, and the store never says a
            # message is indexed (Store.indexed_through) before readers can find it
            with store.transaction():  # the lexical legs answer: these chats are done
                store.clear_dirty(dirty)
                store.set_meta("chunks_total", update.chunks_total)
                store.note_published()
            store.delete_meta(REBUILD_PENDING)  # the vectors resume by themselves
        if compact or indexer.purged.messages:
            # no page of the store, its log or the index's old versions keeps their text
            exclusions.compact_store(store)
            index.erase_removed()  # and no copy of their vectors or chunks' hashes
        # recorded last: a run killed before this point reads the history again next time
        exclusions.remember(store, source.exclude, indexer.excluded, indexer.purged,
                            dropped=indexer.dropped)  # fmt: skip
        chunks_total, chunks_new = update.chunks_total, update.embedded
        written = update.embedded
    fill, built = _fill_vectors(
        place, index, built, embedder, written, progress, announce, ingest, bulk
    )
    reconciled = ingest.reconciled
    if reconciled is not None:
        # the chunks written again (moved ROWIDs, changed neighbours) and how many of them
        # found their vector by content instead of being embedded
        embedded = fill.embedded if fill is not None else 0
        reconciled = {**reconciled, "chunks_rewritten": written,
                      "vectors_reused": max(written - embedded, 0),
                      "vectors_embedded": embedded}  # fmt: skip
        remember_reconciled(store, reconciled)  # for `casper doctor`
    elapsed_s, cpu_s = ingest.elapsed_s, ingest.cpu_s
    if not noop or fill is not None and fill.embedded:
        # the whole run, vectors included: what a person waited for (timings break it down)
        elapsed_s = round(time.perf_counter() - started, 3)
        cpu_s = {**cpu_s, "total": round(time.process_time() - cpu, 3)}
    report = replace(ingest, noop=noop, chunks_total=chunks_total, chunks_new=chunks_new,
                     reconciled=reconciled, elapsed_s=elapsed_s, cpu_s=cpu_s)  # fmt: skip
    return IndexRunReport(report, fill, built, place.generation())


def placement_of(embedder: Embedder | None) -> Placed | None:
    """Where a loaded embedder runs (None for one that does not say, or is not loaded)."""
    if isinstance(embedder, Deferred):
        if not embedder.loaded:
            return None
        embedder = embedder.real()
    placement = getattr(embedder, "placement", None)
    return placement if isinstance(placement, Placed) else None


def _open_for_writing(
    place: IndexPlace, embedder: Embedder, rebuild: bool, announce: Announce = _unsaid
) -> ChunkIndex:
    """The index this run writes to; with `rebuild`, its damaged parts are moved aside first
    (casper.indexer.salvage), then it is emptied in place, or replaced when it was built with
    another model or chunker. An index an earlier version of Casper built (an older table
    schema) is rebuilt whole, keeping the vectors of its model."""
    last = place.generation()  # a new table or folder numbers its generations on from it
    upgraded = place.upgrade(embedder) if place.outdated() else None
    if upgraded is not None:
        index = upgraded
    else:
        if rebuild and place.exists():
            for moved in salvage_index(place.directory):
                announce(moved.line())
        if rebuild and place.exists() and not place.built_with(embedder):
            index = place.replace(embedder)
        else:
            index = place.open(embedder, create=True, after=last)
    if isinstance(embedder, Deferred):
        embedder.set_check(index.check_embedder)  # the model, once loaded, must match
    if rebuild:
        # every chunk is rebuilt in place: readers keep the published generation until the
        # rebuilt one is published, instead of losing the directory under them
        index.clear()
    return index


def _fill_vectors(
    place: IndexPlace,
    index: ChunkIndex | None,
    built: Embedder | None,
    supply: EmbedderSupply,
    written: int,
    progress: Progress,
    announce: Announce,
    report: IngestReport,
    bulk: BulkSupply | None = None,
) -> tuple[VectorFill | None, Embedder | None]:
    """Embed the chunks that have no vector yet (all of a first index, what this run wrote, or
    what a killed run left), batch by batch. A no-op run whose vectors are complete answers from
    the recorded status: no LanceDB import, no model. Loading the model and embedding are
    timed as the report's `load` and `embed` stages."""
    if index is None:
        recorded = place.recorded_vector_status()
        if recorded is not None and recorded[0] == recorded[1]:
            return VectorFill(0, *recorded), built
        if not place.current():
            return None, built  # no index, or one of an older schema: search says what to do
        built = supply(progress)
        index = place.open(built)
    assert built is not None  # the lexical step opened the index with it
    embedder = built
    embed_stage = "embed"
    chooser: _BulkChooser | None = None

    def chosen(engine: Embedder) -> None:
        nonlocal embed_stage
        placement = placement_of(engine)
        if placement is not None:
            embed_stage = detailed("embed", placement.short())

    def before_embedding(done: int, total: int) -> None:
        nonlocal chooser
        if done and total - done > written:  # more is missing than this run wrote
            # said even with --json (stderr): the user should know the run picked up old work
            announce(f"resuming: {done} of {total} chunks already embedded; embedding the rest")
        if bulk is not None and total - done >= BULK_CHUNKS:
            # the first batch picks the engine (and loads it): nothing is loaded before it
            assert index is not None
            chooser = _BulkChooser(embedder, bulk, index, progress, announce, report, chosen)
            return
        if isinstance(embedder, Deferred) and not embedder.loaded:
            # a deferred model loads under its own stage, not inside the first embed batch
            progress("load", 0, None)
            with stage(report, "load"):
                embedder.real()
            progress("load", 1, 1)
        chosen(embedder)  # the progress says where the chunks are embedded

    switch = _Switch(embedder, lambda: chooser)
    with stage(report, "embed"):
        fill = chunk_update.ensure_vectors(
            index, switch, lambda done, total: progress(embed_stage, done, total),
            before_embedding=before_embedding,
        )  # fmt: skip
    for spent in (report.timings, report.cpu_s):  # the model load inside it is its own stage
        spent["embed"] = round(max(spent["embed"] - spent.get("load", 0.0), 0.0), 3)
    used = chooser.engine if chooser is not None and chooser.engine is not None else embedder
    return fill, used


class _BulkChooser:
    """A bulk run's engine, from the `BulkSupply` on the first batch, loaded under the "load"
    stage; each choice it makes is said, and the embed stage names the engine."""

    def __init__(
        self,
        default: Embedder,
        bulk: BulkSupply,
        index: ChunkIndex,
        progress: Progress,
        announce: Announce,
        report: IngestReport,
        chosen: Callable[[Embedder], None],
    ) -> None:
        self.default, self.bulk, self.index = default, bulk, index
        self.progress, self.announce, self.report, self.chosen = progress, announce, report, chosen
        self.engine: Embedder | None = None

    def pick(self) -> Embedder:
        if self.engine is None:
            default = self.default

            def build_default() -> Embedder:
                return default.real() if isinstance(default, Deferred) else default

            def said(why: str) -> None:
                if self.engine is not None:  # a later choice: the embed stage names it
                    self.chosen(self.engine)
                self.announce(f"embedding with {why}")

            self.progress("load", 0, None)
            with stage(self.report, "load"):
                engine = self.bulk(build_default, self.index.check_embedder, said)
                if engine is not default and not isinstance(engine, Deferred):
                    self.index.check_embedder(engine)  # the same model, whatever runs it
            self.progress("load", 1, 1)
            self.engine = engine
            self.chosen(engine)
        return self.engine


class _Switch:
    """The embedder `ensure_vectors` sees: the run's own, or a bulk run's chosen engine."""

    def __init__(self, default: Embedder, chooser: Callable[[], _BulkChooser | None]) -> None:
        self.default, self._chooser = default, chooser
        self.name, self.dim = default.name, default.dim

    @property
    def checksum(self) -> str:
        return str(getattr(self.default, "checksum", ""))

    def embed_documents(
        self, texts: Sequence[str], on_progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        chooser = self._chooser()
        engine = chooser.pick() if chooser is not None else self.default
        return engine.embed_documents(texts, on_progress)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self.default.embed_query(text)
