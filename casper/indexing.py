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

EMBED_BATCH = 512  # chunks per embed call: progress granularity vs padding savings
WRITE_BATCH = 4096  # rows per LanceDB write: fewer, larger fragments

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """What one `update_index` run changed."""

    chunks_total: int
    chunks_new: int  # ids that did not exist before
    chunks_deleted: int  # ids that no longer exist
    embedded: int  # new + changed chunks (the only ones embedded)


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
    """Re-chunk dirty chats, embed only chunks whose content is new, delete the rest, optimize.

    A chat marked full is re-chunked whole; otherwise from the start of its last indexed
    segment, unless messages before that point changed (then whole, too).
    """
    if embedder.dim != index.dim:
        raise ValueError(f"embedder dim {embedder.dim} != index dim {index.dim}")
    cleared = _follow_store_reset(store, index)
    if cleared:
        dirty = {c.id: True for c in store.chats()}
    if not dirty:
        return IndexUpdate(index.count(), 0, 0, 0)
    chats = {c.id: c for c in store.chats()}
    names = store.names()
    plan = _Plan()
    indexed = index.chunk_rows(list(dirty)) if index.count() else {}
    for chat_id, full in sorted(dirty.items()):
        chat = chats.get(chat_id) or ChatInfo(chat_id, "", f"chat {chat_id}", False, ())
        _plan_chat(store, chat, names, indexed.get(chat_id, []), plan, full=full, size=size,
                   stride=stride, gap_s=gap_s, max_chars=max_chars, tz_name=tz_name)  # fmt: skip
    stale = plan.delete  # never in plan.write: those ids were re-produced
    index.delete_ids(stale)
    _embed_and_write(index, embedder, plan, on_progress)
    if plan.write or stale or cleared:
        index.optimize()
    index.set_source(source_identity(store))
    return IndexUpdate(index.count(), len(plan.new_ids), len(stale), len(plan.write))


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


def _embed_and_write(
    index: ChunkIndex, embedder: Embedder, plan: _Plan, on_progress: Progress | None
) -> None:
    total = len(plan.write)
    pending: list[tuple[Sequence[Chunk], np.ndarray]] = []
    pending_rows = 0
    for start in range(0, total, EMBED_BATCH):
        batch = plan.write[start : start + EMBED_BATCH]
        vectors = np.asarray(embedder.embed_documents([c.embed_text for c in batch]), np.float32)
        pending.append((batch, vectors))
        pending_rows += len(batch)
        if pending_rows >= WRITE_BATCH or start + EMBED_BATCH >= total:
            _write(index, pending, plan.new_ids)
            pending, pending_rows = [], 0
        if on_progress is not None:
            on_progress(min(start + EMBED_BATCH, total), total)


def _write(
    index: ChunkIndex, pending: list[tuple[Sequence[Chunk], np.ndarray]], new_ids: set[str]
) -> None:
    chunks = [c for batch, _ in pending for c in batch]
    vectors = np.concatenate([v for _, v in pending])
    fresh = np.array([c.id in new_ids for c in chunks], dtype=bool)
    if fresh.any():
        index.add([c for c, f in zip(chunks, fresh, strict=True) if f], vectors[fresh])
    if (~fresh).any():
        index.upsert([c for c, f in zip(chunks, fresh, strict=True) if not f], vectors[~fresh])
