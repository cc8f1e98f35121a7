"""Builds concrete backends and stores from Config: the only place that knows both sides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from casper.config import Config
from casper.errors import IndexMissing
from casper.store.db import Store
from casper.timeutil import local_tz


def open_store(cfg: Config, *, must_exist: bool = True) -> Store:
    """The SQLite store; a missing one tells the user to run `casper index`."""
    if must_exist and not cfg.store_path.exists():
        raise IndexMissing(f"nothing indexed yet in {cfg.data_dir}")
    return Store.open(cfg.store_path)


def open_index(cfg: Config, embedder: Any | None, *, create: bool = False) -> Any:
    """The LanceDB chunk index, checked against the embedder and chunker it was built with
    (`embedder=None`: whichever model built it, for BM25-only use without loading one)."""
    import os

    # lance's Rust logger warns on routine events (a new table); keep stderr for real problems
    os.environ.setdefault("LANCE_LOG", "error")
    from casper.chunking import chunker_signature
    from casper.store.index import ChunkIndex

    if not create and not cfg.index_dir.exists():
        raise IndexMissing(f"no search index in {cfg.data_dir}")
    return ChunkIndex.open(
        cfg.index_dir,
        embedder_name=embedder.name if embedder is not None else None,
        dim=embedder.dim if embedder is not None else None,
        checksum=getattr(embedder, "checksum", "") if embedder is not None else None,
        chunker_version=chunker_signature(
            cfg.chunk_size, cfg.chunk_stride, cfg.chunk_gap_s, cfg.chunk_max_chars
        ),
        create=create,
    )


def make_index_fn(
    cfg: Config, *, rebuild: bool = False, vectors: bool = True
) -> Callable[..., tuple[int, int]]:
    """The pipeline's search-index step: re-chunk changed chats and write them, then embed
    what has no vector. With `vectors=False` it stops once the lexical legs are searchable
    (`casper index` does that, then runs `fill_vectors` after the store's dirty chats are
    cleared, so a killed fill never redoes the lexical step)."""

    def index_fn(
        store: Store, dirty: dict[int, bool], progress: Callable[..., None]
    ) -> tuple[int, int]:
        from casper.backends.factory import make_embedder
        from casper.indexing import ensure_vectors, update_lexical

        progress("load", 0, None)  # loading a model can take half a minute: say so
        embedder = make_embedder(cfg)
        progress("load", 1, 1)
        if rebuild and cfg.index_dir.exists() and not _reusable(cfg, embedder):
            from casper.store.index import discard

            discard(cfg.index_dir)  # another model or a broken index: start afresh
        index = open_index(cfg, embedder, create=True)
        if rebuild:
            # every chunk is rebuilt in place: readers keep the published generation until
            # the rebuilt one is published, instead of losing the directory under them
            index.clear()
        if not cfg.index_dir.exists() or index.count() == 0:
            dirty = {c.id: True for c in store.chats()}
        update = update_lexical(
            store,
            index,
            dirty=dirty,
            size=cfg.chunk_size,
            stride=cfg.chunk_stride,
            gap_s=cfg.chunk_gap_s,
            max_chars=cfg.chunk_max_chars,
            tz_name=local_tz(cfg.timezone),  # the zone every command resolves
        )
        if vectors:
            ensure_vectors(index, embedder, lambda done, total: progress("embed", done, total))
        # chunks_new: what this run re-chunked for embedding (new ids and changed content)
        return update.chunks_total, update.embedded

    return index_fn


def _reusable(cfg: Config, embedder: Any) -> bool:
    """True when the existing index opens for this embedder and chunker."""
    try:
        open_index(cfg, embedder)
    except Exception:  # noqa: BLE001 - a mismatch or a damaged index: either way, rebuild it
        return False
    return True


def fill_vectors(
    cfg: Config, progress: Callable[..., None], announce: Callable[[str], None]
) -> Any:
    """Embed the chunks that have no vector yet (all of a first index, or what a killed run left).

    Returns the VectorFill, or None when there is no index. Checks completeness before loading
    the embedder, so a run with nothing to do stays fast.
    """
    from casper.store.index import vector_status_at

    status = vector_status_at(cfg.index_dir)
    if status is None:
        return None
    done, total = status
    if done == total:
        from casper.indexing import VectorFill

        return VectorFill(0, done, total)
    from casper.backends.factory import make_embedder
    from casper.indexing import ensure_vectors

    if done:
        announce(f"resuming: {done} of {total} chunks already embedded; embedding the rest")
    embedder = make_embedder(cfg)
    index = open_index(cfg, embedder)
    return ensure_vectors(index, embedder, lambda d, t: progress("embed", d, t))
