"""The composition root: the one place that turns a Config into stores, indexes and models.

The CLI (in-process path), the background service (`casper serve`) and the eval harness all
build through here, so there is a single copy of the wiring. `Runtime` builds each part on first
use and keeps it: a `casper chat` session or the service pays for a model load once.

Imports: config, errors, store (lazily), backends.factory (lazily, always as `factory.make_*`
so tests can swap the backends), use-cases. Heavy libraries only inside functions.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casper.backends.lazy import LazyEmbedder
from casper.config import Config
from casper.errors import IndexMissing, ModelUnavailable

if TYPE_CHECKING:
    from casper.protocols import Embedder, Engine, Reranker
    from casper.store.db import Store

Say = Callable[[str], None]
GENERATION_FILE = "index.generation"


def _quiet(_text: str) -> None:
    pass


# ---- plain builders (also used by eval/ and bench/) -----------------------------------------
def make_embedder(cfg: Config) -> Embedder:
    """The configured embedder (raises ModelUnavailable)."""
    from casper.backends import factory

    return factory.make_embedder(cfg)


def make_reranker(cfg: Config) -> tuple[Reranker | None, str | None]:
    """(reranker, None), (None, None) when off, (None, why) when it cannot load."""
    from casper.backends import factory

    return factory.make_reranker(cfg)


def make_engine(cfg: Config) -> Engine:
    """The configured chat model (raises ModelUnavailable)."""
    from casper.backends import factory

    return factory.make_engine(cfg)


def open_store(cfg: Config, *, must_exist: bool = True) -> Store:
    """The SQLite store; a missing one tells the user to run `casper index`."""
    from casper.store.db import Store

    if must_exist and not cfg.store_path.exists():
        raise IndexMissing(f"nothing indexed yet in {cfg.data_dir}")
    return Store.open(cfg.store_path)


def open_index(cfg: Config, embedder: Any | None, *, create: bool = False) -> Any:
    """The LanceDB chunk index, checked against the embedder and chunker it was built with
    (`embedder=None`: whichever model built it, for BM25-only use without loading one)."""
    # lance's Rust logger warns on routine events (a new table); keep stderr for real problems
    os.environ.setdefault("LANCE_LOG", "error")
    from casper.index.chunk_index import ChunkIndex
    from casper.indexer.chunking import chunker_signature

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


def make_retriever(
    cfg: Config,
    store: Store,
    *,
    rerank: bool = True,
    lexical: str | None = None,
    mode: str = "hybrid",
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    candidates: int | None = None,
    fuse: str = "convex",
    say: Say = _quiet,
) -> Any:
    """Embedder + index + (optional) reranker + query reader → Retriever.

    With `mode="bm25"` and no embedder given, the embedder is a LazyEmbedder: built (and
    checked against the index) only if a vector is ever asked for, so a BM25 search never
    imports torch. A reranker that can't be loaded is said once through `say` (remembered in
    the data dir) and then only by `casper doctor`.
    """
    from casper.app.optional_models import load_reranker
    from casper.backends import factory
    from casper.search.retriever import Retriever

    if embedder is None and mode == "bm25":
        index = open_index(cfg, None)
        embedder = LazyEmbedder(
            lambda: factory.make_embedder(cfg), name=cfg.embed_model, check=index.check_embedder
        )
    else:
        embedder = embedder if embedder is not None else factory.make_embedder(cfg)
        index = open_index(cfg, embedder)
    _same_history(index, store)
    if reranker is None and rerank:
        reranker = load_reranker(cfg, say)
    return Retriever(
        index,
        embedder,
        reranker if rerank else None,
        store=store,
        candidates=candidates or cfg.candidates,
        top_k=cfg.top_k,
        lexical=lexical or cfg.lexical,
        fuse=fuse,
        reader=make_reader(cfg, store),
    )


def make_reader(cfg: Config, store: Store, *, aliases: bool = True) -> Any:
    """The query reader over the store's people: every name on their cards (`aliases`), the
    owner's own names, the locale's date order and the indexed days."""
    from casper.agent.answer import covered_days
    from casper.dates.zones import local_tz
    from casper.search.query import Reader

    people = store.people()
    tz = local_tz(cfg.timezone)
    return Reader(
        people=[(p.id, p.name) for p in people],
        aliases={p.id: p.name_forms() for p in people if p.names} if aliases else None,
        me_names=cfg.me_names,
        locale=cfg.locale,
        tz=tz,
        coverage=covered_days(store, tz),
    )


def _same_history(index: Any, store: Store) -> None:
    """An index built from another history (the store was reset and `casper index` did not
    finish) must not label new messages with old chunks."""
    from casper.errors import IndexMismatch

    built_from = (index.manifest.get("source") or {}).get("store_id")
    if built_from and built_from != (store.get_meta("store_id") or built_from):
        raise IndexMismatch(
            "the search index was built from another message history",
            hint="run `casper index` to rebuild it for the current one",
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
        from casper.indexer.chunk_update import ensure_vectors, update_lexical

        embedder = _index_embedder(cfg, progress)
        index_fn.embedder = embedder  # type: ignore[attr-defined]  # fill_vectors reuses it
        if rebuild and cfg.index_dir.exists() and not _reusable(cfg, embedder):
            from casper.index.chunk_index import discard

            discard(cfg.index_dir)  # another model or a broken index: start afresh
        index = open_index(cfg, embedder, create=True)
        if isinstance(embedder, LazyEmbedder):
            embedder.set_check(index.check_embedder)  # the model, once loaded, must match
        if rebuild:
            # every chunk is rebuilt in place: readers keep the published generation until
            # the rebuilt one is published, instead of losing the directory under them
            index.clear()
        if not cfg.index_dir.exists() or index.count() == 0:
            dirty = {c.id: True for c in store.chats()}
        update = update_lexical(
            store, index, dirty=dirty, options=chunk_options(cfg), on_progress=progress
        )
        if vectors:
            _load_now(embedder, progress)
            ensure_vectors(index, embedder, lambda done, total: progress("embed", done, total))
        # chunks_new: what this run re-chunked for embedding (new ids and changed content)
        return update.chunks_total, update.embedded

    return index_fn


def chunk_options(cfg: Config) -> Any:
    """How this configuration cuts chats into chunks (`casper.indexer.chunking.ChunkOptions`)."""
    from casper.dates.zones import local_tz
    from casper.indexer.chunking import ChunkOptions

    return ChunkOptions(
        size=cfg.chunk_size, stride=cfg.chunk_stride, gap_s=cfg.chunk_gap_s,
        max_chars=cfg.chunk_max_chars,
        tz_name=local_tz(cfg.timezone),  # the zone every command resolves
    )  # fmt: skip


def fill_vectors(
    cfg: Config,
    progress: Callable[..., None],
    announce: Callable[[str], None],
    embedder: Any | None = None,
) -> Any:
    """Embed the chunks that have no vector yet (all of a first index, or what a killed run left).

    Returns the VectorFill, or None when there is no index. Checks completeness before loading
    the embedder, so a run with nothing to do stays fast.
    """
    from casper.index.chunk_index import vector_status_at

    status = vector_status_at(cfg.index_dir)
    if status is None:
        return None
    done, total = status
    if done == total:
        from casper.indexer.chunk_update import VectorFill

        return VectorFill(0, done, total)
    from casper.backends import factory
    from casper.indexer.chunk_update import ensure_vectors

    if done:
        announce(f"resuming: {done} of {total} chunks already embedded; embedding the rest")
    # the lexical step of the same run already loaded the model: loading it twice costs seconds
    embedder = embedder or factory.make_embedder(cfg)
    index = open_index(cfg, embedder)
    _load_now(embedder, progress)
    return ensure_vectors(index, embedder, lambda d, t: progress("embed", d, t))


def _index_embedder(cfg: Config, progress: Callable[..., None]) -> Any:
    """The embedder `casper index` writes with. The bundled MiniLM's name, size and checksum are
    known without loading it, so it loads after the lexical step, which does not need it (the
    first search then waits for no model load); any other model loads first, as its size and
    checksum go into a new index's manifest."""
    from casper.backends import factory

    known = factory.embedder_identity(cfg)
    if known is not None:
        name, dim, checksum = known
        build = lambda: factory.make_embedder(cfg)  # noqa: E731
        return LazyEmbedder(build, name=name, dim=dim, checksum=checksum)
    progress("load", 0, None)  # loading a model can take half a minute: say so
    embedder = factory.make_embedder(cfg)
    progress("load", 1, 1)
    return embedder


def _load_now(embedder: Any, progress: Callable[..., None]) -> None:
    """Load a deferred model under its own progress stage, not inside the first embed batch."""
    if isinstance(embedder, LazyEmbedder) and not embedder.loaded:
        progress("load", 0, None)
        embedder.real()
        progress("load", 1, 1)


def _reusable(cfg: Config, embedder: Any) -> bool:
    """True when the existing index opens for this embedder and chunker."""
    try:
        open_index(cfg, embedder)
    except Exception:  # noqa: BLE001 - a mismatch or a damaged index: either way, rebuild it
        return False
    return True


# ---- index generations ------------------------------------------------------------------------
def index_generation(data_dir: Path) -> str:
    """The number of `casper index` runs that changed something ("0" before the first).

    Long-lived readers (the service, a chat session) read it (one small file) before each
    request and reopen the store and index when it moved, so they never serve what an index
    run replaced. The file is replaced atomically, so a reader sees the old or the new number.
    """
    try:
        return (data_dir / GENERATION_FILE).read_text().strip() or "0"
    except (FileNotFoundError, NotADirectoryError):
        return "0"


def bump_generation(data_dir: Path) -> None:
    """Called by `casper index` after a run that changed something (atomic rename, 0600)."""
    path = data_dir / GENERATION_FILE
    try:
        current = int(path.read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        current = 0
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{current + 1}\n")
    os.replace(tmp, path)


# ---- the cached runtime -------------------------------------------------------------------
class Runtime:
    """Everything one process needs to answer requests for one Config, built lazily, kept.

    Not thread-safe by itself: the service serialises data access around it (see
    casper.service.server) and a CLI process has one thread.
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.loads: Counter[str] = Counter()  # how many times each part was built
        self._store: Store | None = None
        self._embedder: Embedder | None = None
        self._reranker: tuple[Reranker | None, str | None] | None = None
        self._engines: dict[str, tuple[Engine | None, ModelUnavailable | None]] = {}
        self._retrievers: dict[tuple[str, bool], Any] = {}
        self._generation = index_generation(cfg.data_dir)

    # data: reopened when the index generation moves
    def refresh(self) -> bool:
        """Drop the store, index and retrievers if `casper index` wrote since they were opened.

        Models stay loaded. Old objects are dropped, not closed: a request still running in
        another thread keeps its references until it is done.
        """
        now = index_generation(self.cfg.data_dir)
        if now == self._generation:
            return False
        self._generation = now
        self._store = None
        self._retrievers.clear()
        return True

    @property
    def generation(self) -> str:
        return self._generation

    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.cfg)
            self.loads["store"] += 1
        return self._store

    # models: built once
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from casper.backends import factory

            self._embedder = factory.make_embedder(self.cfg)
            self.loads["embedder"] += 1
        return self._embedder

    def reranker(self, say: Say = _quiet) -> Reranker | None:
        """The cross-encoder, or None when off or not loadable (said once, remembered)."""
        if not (self.cfg.rerank and self.cfg.rerank_model):
            return None
        if self._reranker is None:
            from casper.app.optional_models import load_reranker

            self._reranker = (load_reranker(self.cfg, say), None)
            self.loads["reranker"] += 1
        return self._reranker[0]

    def retriever(  # noqa: ANN201
        self,
        *,
        rerank: bool = True,
        lexical: str | None = None,
        mode: str = "hybrid",
        say: Say = _quiet,
    ):
        """One Retriever per lexical backend (it caches the vector matrix); reranker on demand.

        A BM25 request before any model is loaded gets a lean retriever whose embedder loads
        only if a vector is asked for; once the embedder is loaded every mode shares it.
        """
        lexical = lexical or self.cfg.lexical
        lean = mode == "bm25" and self._embedder is None
        key = (lexical, lean)
        retriever = self._retrievers.get(key)
        if retriever is None:
            retriever = make_retriever(
                self.cfg,
                self.store(),
                rerank=False,
                lexical=lexical,
                mode="bm25" if lean else "hybrid",
                embedder=None if lean else self.embedder(),
            )
            self.loads["index"] += 1
            self._retrievers[key] = retriever
        retriever.reranker = self.reranker(say) if rerank else None
        return retriever

    def engine(self, model: str | None = None) -> tuple[Engine | None, ModelUnavailable | None]:
        """(engine, None) or (None, why not); a failure is remembered like a success."""
        from dataclasses import replace

        name = model or self.cfg.llm_model
        if name not in self._engines:
            from casper.backends import factory

            try:
                built = factory.make_engine(replace(self.cfg, llm_model=name))
                self._engines[name] = (built, None)
                self.loads["engine"] += 1
            except ModelUnavailable as exc:
                self._engines[name] = (None, exc)
        return self._engines[name]

    def engine_loaded(self, model: str | None = None) -> bool:
        return (model or self.cfg.llm_model) in self._engines

    def forget_failed_engines(self) -> None:
        """Let the next request retry a model that could not load (it may be cached by now)."""
        self._engines = {k: v for k, v in self._engines.items() if v[0] is not None}

    def loaded(self) -> dict[str, Any]:
        """What is in memory, for `casper serve --status`."""
        reranker = self._reranker[0] if self._reranker else None
        return {
            "store": self._store is not None,
            "index": bool(self._retrievers),
            "embedder": getattr(self._embedder, "name", None),
            "reranker": getattr(reranker, "name", None) if reranker is not None else None,
            "engines": sorted(k for k, v in self._engines.items() if v[0] is not None),
            "loads": dict(self.loads),
        }
