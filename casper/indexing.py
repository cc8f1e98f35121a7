"""Keep the chunk index in step with the store: re-chunk dirty chats, embed only new content.

Imports: casper.chunking, casper.store (db, index), casper.protocols, casper.records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo

import numpy as np

from casper.chunking import chunk_chat
from casper.config import CHUNK_GAP_S, CHUNK_MAX_CHARS, CHUNK_SIZE, CHUNK_STRIDE
from casper.protocols import Embedder
from casper.records import ChatInfo, Chunk
from casper.store.db import Store
from casper.store.index import ChunkIndex, IndexedChunk

log = logging.getLogger(__name__)

# chunks per embed call, each committed on its own: the progress bar and a kill's loss move in
# steps of this size. 128 rather than 512: encode speed measured the same (64 vs 512 per call:
# 145.8 vs 145.1 passages per CPU-second, median of 3), and the bar no longer jumps by 512.
EMBED_BATCH = 128
WRITE_BATCH = 4096  # rows per LanceDB write: fewer, larger fragments
PLAN_CHATS = 256  # chats whose indexed chunks are looked up in one scan

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """What one `update_index` run changed."""

    chunks_total: int
    chunks_new: int  # ids that did not exist before
    chunks_deleted: int  # ids that no longer exist
    embedded: int  # chunks embedded by this run (new content, or left over by a killed run)
    vectors_done: int = 0  # chunks with a vector afterwards
    vectors_total: int = 0


@dataclass(frozen=True, slots=True)
class VectorFill:
    """What one `ensure_vectors` run did: `resumed_from` > 0 when earlier work was kept."""

    embedded: int
    done: int
    total: int
    resumed_from: int = 0


@dataclass(slots=True)
class _Plan:
    write: list[Chunk] = field(default_factory=list)
    new_ids: set[str] = field(default_factory=set)
    delete: list[str] = field(default_factory=list)


def update_index(
    store: Store,
    index: ChunkIndex,
    embedder: Embedder,
    *,
    dirty: Mapping[int, bool],
    size: int = CHUNK_SIZE,
    stride: int = CHUNK_STRIDE,
    gap_s: float = CHUNK_GAP_S,
    max_chars: int = CHUNK_MAX_CHARS,
    tz_name: str | tzinfo | None = None,
    on_progress: Progress | None = None,
) -> IndexUpdate:
    """`update_lexical`, then `ensure_vectors`: the whole index in one call."""
    if embedder.dim != index.dim:
        raise ValueError(f"embedder dim {embedder.dim} != index dim {index.dim}")
    lexical = update_lexical(
        store, index, dirty=dirty, size=size, stride=stride, gap_s=gap_s, max_chars=max_chars,
        tz_name=tz_name,
    )  # fmt: skip
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
    size: int = CHUNK_SIZE,
    stride: int = CHUNK_STRIDE,
    gap_s: float = CHUNK_GAP_S,
    max_chars: int = CHUNK_MAX_CHARS,
    tz_name: str | tzinfo | None = None,
) -> IndexUpdate:
    """Re-chunk dirty chats and write their rows without vectors: searchable by the lexical
    legs when this returns. Chats are planned and written a group at a time, so memory holds
    one group's chunks, not the whole history's.

    A chat marked full is re-chunked whole; otherwise from the start of its last indexed
    segment, unless messages before that point changed (then whole, too).
    """
    cleared = _follow_store_reset(store, index)
    if cleared:
        dirty = {c.id: True for c in store.chats()}
    if not dirty:
        return IndexUpdate(index.count(), 0, 0, 0)
    chats = {c.id: c for c in store.chats()}
    names = store.names()
    has_rows = index.count() > 0
    new_total = deleted = written = 0
    pending = _Plan()
    wanted = sorted(dirty.items())
    for lo in range(0, len(wanted), PLAN_CHATS):
        group = wanted[lo : lo + PLAN_CHATS]
        indexed = index.chunk_rows([c for c, _ in group]) if has_rows else {}
        plan = _Plan()
        for chat_id, full in group:
            chat = chats.get(chat_id) or ChatInfo(chat_id, "", f"chat {chat_id}", False, ())
            _plan_chat(
                store, chat, names, indexed.get(chat_id, []), plan, full=full, size=size,
                stride=stride, gap_s=gap_s, max_chars=max_chars, tz_name=tz_name,
            )  # fmt: skip
            if len(plan.write) >= WRITE_BATCH:
                written += _write(index, plan)
                new_total += len(plan.new_ids)
                plan.write, plan.new_ids = [], set()
        index.delete_ids(plan.delete)  # never in plan.write: those ids were re-produced
        deleted += len(plan.delete)
        pending.write += plan.write
        pending.new_ids |= plan.new_ids
        if len(pending.write) >= WRITE_BATCH:
            written += _write(index, pending)
            new_total += len(pending.new_ids)
            pending = _Plan()
    written += _write(index, pending)
    new_total += len(pending.new_ids)
    if new_total or deleted or written or cleared:
        index.optimize(warm=False)  # publishes: the lexical legs answer from here on
    index.set_source(source_identity(store))
    # `embedded` here: the chunks written for embedding (new ids and changed content); the
    # fill embeds them, less any whose text already has a vector
    return IndexUpdate(index.count(), new_total, deleted, written)


def ensure_vectors(
    index: ChunkIndex, embedder: Embedder, on_progress: Progress | None = None
) -> VectorFill:
    """Embed every chunk that has no vector yet, committing each batch as it is done.

    A killed run loses at most the batch in flight; the next call embeds only what is missing.
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
    index.vectors.set_status(version, before, total)
    embedded = 0
    buffer: list[tuple[str, str]] = []

    def flush() -> None:
        nonlocal embedded
        keys, texts = [k for k, _ in buffer], [t for _, t in buffer]
        vectors = np.asarray(embedder.embed_documents(texts), np.float32)
        index.vectors.put(keys, vectors)  # committed: durable before the next batch starts
        embedded += len(keys)
        index.vectors.set_status(version, min(before + embedded, total), total)
        buffer.clear()
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
    done, total = index.matrix(refresh=True).coverage  # builds this version's search cache
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


def _plan_chat(
    store: Store,
    chat: ChatInfo,
    names: Mapping[str, str],
    existing: Sequence[IndexedChunk],
    plan: _Plan,
    *,
    full: bool,
    size: int,
    stride: int,
    gap_s: float,
    max_chars: int,
    tz_name: str | tzinfo | None,
) -> None:
    since = None if full or not existing else max(c.segment_start for c in existing)
    if since is not None and not _head_unchanged(store, chat.id, existing, since):
        since = None  # something older than the tail changed: re-chunk the whole chat
    messages = store.chat_messages(chat.id, since_ts=since)
    chunks = chunk_chat(
        messages, chat, names, size=size, stride=stride, gap_s=gap_s, max_chars=max_chars,
        tz_name=tz_name,
    )  # fmt: skip
    known = {c.id: c.content_hash for c in existing if since is None or c.segment_start >= since}
    fresh = {c.id for c in chunks}
    plan.delete.extend(cid for cid in known if cid not in fresh)
    for chunk in chunks:
        if chunk.id not in known:
            plan.new_ids.add(chunk.id)
            plan.write.append(chunk)
        elif known[chunk.id] != chunk.content_hash:
            plan.write.append(chunk)


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


def _write(index: ChunkIndex, plan: _Plan) -> int:
    """Rows without vectors: new ids appended, changed ones replaced; returns how many."""
    fresh = [c for c in plan.write if c.id in plan.new_ids]
    changed = [c for c in plan.write if c.id not in plan.new_ids]
    for lo in range(0, len(fresh), WRITE_BATCH):
        index.add(fresh[lo : lo + WRITE_BATCH])
    for lo in range(0, len(changed), WRITE_BATCH):
        index.upsert(changed[lo : lo + WRITE_BATCH])
    return len(plan.write)
