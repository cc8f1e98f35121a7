"""Keep the chunk index in step with the store: re-chunk dirty chats, embed only new content.

Imports: casper.indexer.chunking, casper.store.db, casper.index (chunk_index, chunk_table,
chunk_writer), casper.protocols, casper.records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from casper.index.chunk_index import ChunkIndex, IndexedChunk
from casper.index.chunk_table import pieces_to_arrow
from casper.index.chunk_writer import ChunkWriter
from casper.indexer import chunk_workers
from casper.indexer.chunking import ChunkOptions, index_pieces
from casper.protocols import Embedder
from casper.records import ChatInfo, Piece
from casper.store.db import Store

log = logging.getLogger(__name__)

# chunks per embed call, each committed on its own: the progress bar and a kill's loss move in
# steps of this size. 128 rather than 512: encode speed measured the same (64 vs 512 per call:
# 145.8 vs 145.1 passages per CPU-second, median of 3), and the bar no longer jumps by 512.
EMBED_BATCH = 128
WRITE_BATCH = 8192  # rows per Arrow batch handed to the writer (appends are streamed as one)
DEFAULT_OPTIONS = ChunkOptions()
PLAN_CHATS = 256  # chats whose indexed chunks are looked up in one scan
# while vectors are filled in, readers see them at most this late: each publish makes every
# reader re-point its matrix (a vector cache rebuild), so not after every batch
PUBLISH_EVERY_S = 30.0

Progress = Callable[[int, int], None]
# (chunks that already have a vector, chunks): called once before the first batch is embedded
BeforeEmbedding = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """What one `update_index` run changed."""

    chunks_total: int
    chunks_new: int  # ids that did not exist before
    chunks_deleted: int  # ids that no longer exist
    embedded: int  # chunks embedded by this run (new content, or left over by a killed run)
    vectors_done: int = 0  # chunks with a vector afterwards
    vectors_total: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per lexical sub-stage


@dataclass(frozen=True, slots=True)
class VectorFill:
    """What one `ensure_vectors` run did: `resumed_from` > 0 when earlier work was kept."""

    embedded: int
    done: int
    total: int
    resumed_from: int = 0


StageProgress = Callable[[str, int, "int | None"], None]  # (stage, done, total)


def _silent(stage: str, done: int, total: int | None) -> None:
    pass


def update_index(
    store: Store,
    index: ChunkIndex,
    embedder: Embedder,
    *,
    dirty: Mapping[int, bool],
    options: ChunkOptions = DEFAULT_OPTIONS,
    on_progress: Progress | None = None,
) -> IndexUpdate:
    """`update_lexical`, then `ensure_vectors`: the whole index in one call."""
    if embedder.dim != index.dim:
        raise ValueError(f"embedder dim {embedder.dim} != index dim {index.dim}")
    lexical = update_lexical(store, index, dirty=dirty, options=options)
    fill = ensure_vectors(index, embedder, on_progress)
    return IndexUpdate(
        lexical.chunks_total, lexical.chunks_new, lexical.chunks_deleted, fill.embedded,
        fill.done, fill.total,
    )  # fmt: skip


def update_lexical(
    store: Store,
    index: ChunkIndex,
    *,
    dirty: Mapping[int, bool],
    options: ChunkOptions = DEFAULT_OPTIONS,
    on_progress: StageProgress | None = None,
) -> IndexUpdate:
    """Re-chunk dirty chats and write their rows without vectors: searchable by the lexical
    legs when this returns. Chats are chunked one at a time and written in batches by a
    background writer while the next chats are chunked, so memory holds a few batches, not
    the whole history.

    A chat marked full is re-chunked whole; otherwise from the start of its last indexed
    segment, unless messages before that point changed (then whole, too). Progress stages:
    "chunk" (messages of the dirty chats), "write" (the last writes), "optimize" (text index).
    """
    progress = on_progress or _silent
    cleared = _follow_store_reset(store, index)
    if cleared:
        dirty = {c.id: True for c in store.chats()}
    if not dirty:
        return IndexUpdate(index.count(), 0, 0, 0)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    chats = {c.id: c for c in store.chats()}
    names = store.names()
    sizes = store.chat_sizes()
    wanted = sorted(dirty.items())
    total_messages = sum(sizes.get(c, 0) for c, _ in wanted)
    progress("chunk", 0, total_messages)
    has_rows = index.count() > 0
    tally = _Tally()
    writer = ChunkWriter(index)
    try:
        done = 0
        if chunk_workers.wanted(total_messages, fresh=not has_rows, options=options):
            # a fresh index: every chat chunked whole, by worker processes (chunk_workers)
            order = [chats.get(c) or ChatInfo(c, "", f"chat {c}", False, ()) for c, _ in wanted]
            n = chunk_workers.workers()
            parts = chunk_workers.groups(order, sizes, n * chunk_workers.GROUPS_PER_WORKER)
            with chunk_workers.Pool(n) as pool:
                for table, _ in pool.chunk(store.path, parts, names, options, index.dim):
                    writer.append(table)
                    tally.fresh_total += table.num_rows
                    done += sum(sizes.get(c.id, 0) for c in parts[0])
                    parts = parts[1:]
                    progress("chunk", done, total_messages)
            wanted = []  # every chat is chunked
        for lo in range(0, len(wanted), PLAN_CHATS):
            group = wanted[lo : lo + PLAN_CHATS]
            if has_rows and lo:
                writer.settle()  # read the table only between writes, never beside one
            indexed = index.chunk_rows([c for c, _ in group]) if has_rows else {}
            for chat_id, full in group:
                chat = chats.get(chat_id) or ChatInfo(chat_id, "", f"chat {chat_id}", False, ())
                existing = indexed.get(chat_id, [])
                _plan_chat(store, chat, names, existing, tally, writer, full, options)
                done += sizes.get(chat_id, 0)
                progress("chunk", done, total_messages)
        tally.flush(writer, index.dim)
        timings["chunk"] = time.perf_counter() - started
        progress("write", 0, None)
        writer.close()
        progress("write", 1, 1)
    except BaseException:
        writer.abort()
        raise
    timings["write_wait"] = writer.waited_s
    written = tally.fresh_total + tally.changed_total
    if tally.fresh_total or tally.deleted or written or cleared:
        progress("optimize", 0, None)
        mark = time.perf_counter()
        index.optimize(warm=False)  # publishes: the lexical legs answer from here on
        timings["optimize"] = time.perf_counter() - mark
        progress("optimize", 1, 1)
    index.set_source(source_identity(store))
    timings["total"] = time.perf_counter() - started
    log.info("lexical index: %s", {k: round(v, 2) for k, v in timings.items()})
    # `embedded` here: the chunks written for embedding (new ids and changed content); the
    # fill embeds them, less any whose text already has a vector
    return IndexUpdate(
        index.count(), tally.fresh_total, tally.deleted, written,
        timings={k: round(v, 3) for k, v in timings.items()},
    )  # fmt: skip


def ensure_vectors(
    index: ChunkIndex,
    embedder: Embedder,
    on_progress: Progress | None = None,
    *,
    before_embedding: BeforeEmbedding | None = None,
) -> VectorFill:
    """Embed every chunk that has no vector yet, committing each batch as it is done, and
    publish them (every PUBLISH_EVERY_S while it runs, and at the end).

    A killed run loses at most the batch in flight; the next call embeds only what is missing.
    `before_embedding` runs only when something is missing (say "resuming", load the model).
    """
    if embedder.dim != index.dim:
        raise ValueError(f"embedder dim {embedder.dim} != index dim {index.dim}")
    version, total = index.version, index.count()
    status = index.vectors.status()
    if status == {"version": version, "done": total, "total": total}:
        return VectorFill(0, total, total)
    missing = index.count_missing()
    before = total - missing
    if missing:
        log.info("embedding %d of %d chunks (%d kept from before)", missing, total, before)
        if before_embedding is not None:
            before_embedding(before, total)
    index.vectors.set_status(version, before, total)
    embedded = 0
    buffer: list[tuple[str, str]] = []
    published = time.monotonic()

    def flush() -> None:
        nonlocal embedded, published
        keys, texts = [k for k, _ in buffer], [t for _, t in buffer]
        vectors = np.asarray(embedder.embed_documents(texts), np.float32)
        index.vectors.put(keys, vectors)  # committed: durable before the next batch starts
        embedded += len(keys)
        index.vectors.set_status(version, min(before + embedded, total), total)
        buffer.clear()
        if time.monotonic() - published >= PUBLISH_EVERY_S:
            index.publish_vectors()  # readers search what is embedded so far
            published = time.monotonic()
        if on_progress is not None:
            on_progress(min(embedded, missing), missing)

    for batch in index.missing_vectors():
        for item in batch:
            buffer.append(item)
            if len(buffer) >= EMBED_BATCH:
                flush()
    if buffer:
        flush()
    index.prune_vectors()
    if embedded:
        index.publish_vectors()  # the last generation of this fill: every vector it made
    done, total = index.matrix().coverage  # builds this generation's search cache
    index.vectors.set_status(version, done, total)
    return VectorFill(embedded, done, total, before if missing else 0)


def source_identity(store: Store) -> dict[str, str]:
    """Which history the store holds: its id (new at every reset) and the chat.db it reads."""
    return {"store_id": store.get_meta("store_id") or "", "chat_db": store.get_meta("source") or ""}


def _follow_store_reset(store: Store, index: ChunkIndex) -> bool:
    """Drop every chunk when the store was reset (another chat.db, `--rebuild`) since the index
    was last built from it: its chunks label old chats and point at rowids the new history
    reuses. True when it cleared. An index from before sources were recorded adopts the store."""
    recorded = index.manifest.get("source")
    if not isinstance(recorded, dict) or not index.count():
        return False
    if recorded.get("store_id") == source_identity(store)["store_id"]:
        return False
    log.info("the store was reset since the index was built: dropping every chunk")
    index.clear()
    return True


@dataclass(slots=True)
class _Tally:
    """Rows waiting for the writer, and what this run changed."""

    fresh: list[Piece] = field(default_factory=list)  # new ids: appended
    changed: list[Piece] = field(default_factory=list)  # known ids, new content: upserted
    fresh_total: int = 0
    changed_total: int = 0
    deleted: int = 0

    def flush(self, writer: ChunkWriter, dim: int, *, at_least: int = 1) -> None:
        if len(self.fresh) >= at_least:
            writer.append(pieces_to_arrow(self.fresh, dim))
            self.fresh_total += len(self.fresh)
            self.fresh = []
        if len(self.changed) >= at_least:
            writer.upsert(pieces_to_arrow(self.changed, dim))
            self.changed_total += len(self.changed)
            self.changed = []


def _plan_chat(
    store: Store,
    chat: ChatInfo,
    names: Mapping[str, str],
    existing: Sequence[IndexedChunk],
    tally: _Tally,
    writer: ChunkWriter,
    full: bool,
    options: ChunkOptions,
) -> None:
    since = None if full or not existing else max(c.segment_start for c in existing)
    if since is not None and not _head_unchanged(store, chat.id, existing, since):
        since = None  # something older than the tail changed: re-chunk the whole chat
    pieces = index_pieces(store.searchable_rows(chat.id, since_ts=since), chat, names, options)
    known = {c.id: c.content_hash for c in existing if since is None or c.segment_start >= since}
    fresh = {p.id for p in pieces}
    gone = [cid for cid in known if cid not in fresh]
    writer.delete(gone)  # never among the rows written: those ids were re-produced
    tally.deleted += len(gone)
    for piece in pieces:
        digest = known.get(piece.id)
        if digest is None:
            tally.fresh.append(piece)
        elif digest != piece.content_hash:
            tally.changed.append(piece)
    tally.flush(writer, writer.index.dim, at_least=WRITE_BATCH)


def _head_unchanged(
    store: Store, chat_id: int, existing: Sequence[IndexedChunk], since: float
) -> bool:
    """True when the searchable messages before `since` are exactly those already chunked."""
    indexed = {r for c in existing if c.segment_start < since for r in c.rowids}
    stored = {
        r[0]
        for r in store.conn.execute(
            "SELECT rowid FROM messages WHERE chat_id = ? AND ts < ? AND kind != 'system' "
            "AND length(trim(text, ' ' || char(9, 10, 13))) > 0",
            (chat_id, since),
        )
    }
    return indexed == stored
