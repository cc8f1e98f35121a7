"""The composition root: the one place that turns a Config into stores, indexes and models.

The CLI (in-process path), the background service (`casper serve`) and the eval harness all
build through here, so there is a single copy of the wiring. `Runtime` builds each part on first
use and keeps it: a `casper chat` session or the service pays for a model load once.

Imports: config, errors, store, backends.factory (lazily, always as `factory.make_*`
so tests can swap the backends), use-cases. Heavy libraries only inside functions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from casper.backends.lazy import LazyEmbedder
from casper.config import DEFAULT_LLM, Config, load_config
from casper.dates.zones import local_tz
from casper.errors import ConfigError, IndexMismatch, IndexMissing, ModelUnavailable
from casper.index.files import Generation, read_generation
from casper.store.db import Store

if TYPE_CHECKING:
    from casper.index.chunk_index import ChunkIndex
    from casper.index.place import IndexPlace
    from casper.indexer.chunking import ChunkOptions
    from casper.indexer.pipeline import Progress
    from casper.indexer.run import BulkSupply, EmbedderSupply, Source
    from casper.protocols import Embedder, Engine, Reranker
    from casper.search.query import Reader
    from casper.search.retriever import Retriever
    from casper.vocab import Fusion, Lexical, Mode

# inside: the thin and client paths load this module, not the search, indexer or backends

Say = Callable[[str], None]


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


def _config_stamp(cfg: Config) -> tuple[int, int] | None:
    try:
        st = (cfg.data_dir / "config.toml").stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def open_store(cfg: Config, *, must_exist: bool = True) -> Store:
    """The SQLite store; a missing one tells the user to run `casper index`."""
    if must_exist and not cfg.store_path.exists():
        raise IndexMissing(f"nothing indexed yet in {cfg.data_dir}")
    return Store.open(cfg.store_path)


def store_to_show(cfg: Config) -> Store:
    """The store for a command that shows what it holds (`export`, `review`, `chats`): refused
    while config.toml keeps out someone it may still hold (casper.indexer.exclude)."""
    from casper.indexer.exclude import require_applied

    store = open_store(cfg)
    if cfg.exclude:
        require_applied(store, cfg.exclude)
    return store


def open_index(cfg: Config, embedder: Embedder | None, *, create: bool = False) -> ChunkIndex:
    """The LanceDB chunk index, checked against the embedder and chunker it was built with
    (`embedder=None`: whichever model built it, for BM25-only use without loading one)."""
    if not create and not cfg.index_dir.exists():
        raise IndexMissing(f"no search index in {cfg.data_dir}")
    return index_place(cfg).open(embedder, create=create)


def make_retriever(
    cfg: Config,
    store: Store,
    *,
    rerank: bool = True,
    lexical: Lexical | None = None,
    mode: Mode = "hybrid",
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    candidates: int | None = None,
    fuse: Fusion | None = None,
    say: Say = _quiet,
) -> Retriever:
    """Embedder + index + (optional) reranker + query reader → Retriever.

    With `mode="bm25"` and no embedder given, the embedder is a LazyEmbedder: built (and
    checked against the index) only if a vector is ever asked for, so a BM25 search never
    imports torch. A reranker that can't be loaded is said once through `say` (remembered in
    the data dir) and then only by `casper doctor`. The reranker is fixed here; a long-lived
    retriever shared by requests gets none and is handed one per search instead. `fuse` None:
    the configured fusion (`cfg.fusion`).
    """
    from casper.app.optional_models import load_reranker
    from casper.backends import factory
    from casper.search.retriever import Retriever

    index: ChunkIndex
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
        fuse=fuse or cfg.fusion,
        reader=make_reader(cfg, store),
        by_message=cfg.messages_alone,
        days_after=cfg.named_day_after,
    )


def me_names(cfg: Config, store: Store) -> tuple[str, ...]:
    """The owner's own names: `me_names` as set, then the names on their own card (the card
    holding an address chat.db says is theirs): its first name, nickname and full name."""
    owner = store.owner()
    found = owner.name_forms("first", "nickname", "full") if owner is not None else ()
    return tuple(dict.fromkeys(n for n in (*cfg.me_names, *found) if n.strip()))


def make_reader(cfg: Config, store: Store, *, aliases: bool = True) -> Reader:
    """The query reader over the store's people: every name on their cards (`aliases`), the
    owner's own names (`me_names`, their own card's), the locale's date order and the indexed
    days. The owner's own card is the owner, not a contact."""
    from casper.agent.answer import covered_days
    from casper.search.query import Reader

    owner = store.owner()
    people = [p for p in store.people() if owner is None or p.id != owner.id]
    tz = local_tz(cfg.timezone)
    return Reader(
        people=[(p.id, p.name) for p in people],
        aliases={p.id: p.name_forms() for p in people if p.names} if aliases else None,
        me_names=me_names(cfg, store),
        locale=cfg.locale,
        tz=tz,
        coverage=covered_days(store, tz),
    )


def _same_history(index: ChunkIndex, store: Store) -> None:
    """An index built from another history (the store was reset for another chat.db and
    `casper index` did not finish) must not label new messages with old chunks.

    The chat.db each was read from decides, where both recorded it: a store rebuilt from the
    same chat.db (a killed `--rebuild`, a damaged store moved aside) holds the same rows under
    the same ids, so the index keeps serving until the rebuilt one is published. Else the
    store's id, which changes at every reset."""
    source = index.manifest.get("source") or {}
    read_from, now_from = source.get("chat_db"), store.get_meta("source")
    if read_from and now_from:
        same = read_from == now_from
    else:
        built_from = source.get("store_id")
        same = not built_from or built_from == (store.get_meta("store_id") or built_from)
    if not same:
        raise IndexMismatch(
            "the search index was built from another message history",
            hint="run `casper index` to rebuild it for the current one",
        )


# ---- the parts of `casper index` (casper.indexer.run.run_index) -------------------------------
def index_place(cfg: Config) -> IndexPlace:
    """Where this configuration's chunk index lives and the chunker it must have been cut with."""
    from casper.index.place import IndexPlace

    return IndexPlace(cfg.index_dir, chunk_options(cfg).signature())


def index_source(cfg: Config) -> Source:
    """The history `casper index` reads: chat.db, the AddressBook, the zone all commands use."""
    from casper.indexer.run import Source

    return Source(cfg.chat_db, cfg.contacts, local_tz(cfg.timezone), cfg.exclude)


def index_embedder(cfg: Config) -> EmbedderSupply:
    """How `casper index` gets the embedder it writes with. The bundled MiniLM's name, size and
    checksum are known without loading it, so it comes deferred and loads after the lexical
    step, which does not need it (the first search then waits for no model load); any other
    model loads first, as its size and checksum go into a new index's manifest."""

    def supply(progress: Progress) -> Embedder:
        from casper.backends import factory  # only when the run touches the index

        known = factory.embedder_identity(cfg)
        if known is not None:
            name, dim, checksum = known
            build = lambda: factory.make_embedder(cfg)  # noqa: E731
            return LazyEmbedder(build, name=name, dim=dim, checksum=checksum)
        progress("load", 0, None)  # loading a model can take half a minute: say so
        embedder = factory.make_embedder(cfg)
        progress("load", 1, 1)
        return embedder

    return supply


def bulk_embedder(cfg: Config) -> BulkSupply | None:
    """How `casper index` picks the engine for bulk work (casper.backends.bulk): the faster
    one on this run's own passages, raced. None when `make_embedder` was replaced (tests,
    benchmarks: their embedder embeds every run, and no real engine is loaded beside it)."""
    from casper.backends import factory

    if factory.embedder_replaced():
        return None

    def supply(
        default: Callable[[], Embedder],
        check: Callable[[Embedder], None],
        said: Callable[[str], None],
    ) -> Embedder:
        return factory.make_bulk_embedder(cfg, default, check, said)

    return supply


def chunk_options(cfg: Config) -> ChunkOptions:
    """How this configuration cuts chats into chunks."""
    from casper.indexer.chunking import ChunkOptions

    return ChunkOptions(
        size=cfg.chunk_size, stride=cfg.chunk_stride, gap_s=cfg.chunk_gap_s,
        max_chars=cfg.chunk_max_chars,
        tz_name=local_tz(cfg.timezone),  # the zone every command resolves
        messages_alone=cfg.messages_alone,
    )  # fmt: skip


# ---- the cached runtime -------------------------------------------------------------------
def engine_key(model: str, base_url: str | None) -> str:
    """How a Runtime names an engine it keeps (`casper serve --status` and the `loading` event
    show it); the MLX default names nothing on a server (casper.backends.factory)."""
    if not base_url:
        return model
    return f"{'its only model' if model == DEFAULT_LLM else model} at {base_url.rstrip('/')}"


class Loaded(TypedDict):
    """What a Runtime holds, for `casper serve --status`."""

    store: bool
    index: bool
    embedder: str | None
    embedder_on: str | None  # where it runs: "onnxruntime on the CPU, 2 threads"
    reranker: str | None
    engines: list[str]
    loads: dict[str, int]


class Runtime:
    """Everything one process needs to answer requests for one Config, built lazily, kept.

    Not thread-safe by itself: the service serialises data access around it (see
    casper.service.server) and a CLI process has one thread. Nothing on it changes per request
    except what is kept on purpose: the parts it built and the notices said once.
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.loads: Counter[str] = Counter()  # how many times each part was built
        self._store: Store | None = None
        self._embedder: Embedder | None = None
        self._reranker: tuple[Reranker | None, str | None] | None = None
        self._engines: dict[str, tuple[Engine | None, ModelUnavailable | None]] = {}
        self._retrievers: dict[tuple[Lexical, bool], Retriever] = {}
        self._generation = read_generation(cfg.index_dir)
        self._said: set[str] = set()
        self._kept_out = (_config_stamp(cfg), tuple(cfg.exclude))

    def kept_out(self) -> tuple[str, ...]:
        """The `exclude` entries config.toml holds now (one stat per request; read again when
        it changed): a process that outlives an edit (`casper mcp`, `casper chat` without the
        service) follows it. Entries it was built with stay when the file no longer reads."""
        stamp = _config_stamp(self.cfg)
        if stamp != self._kept_out[0]:
            try:
                now = tuple(load_config(self.cfg.data_dir).exclude)
            except ConfigError:
                now = tuple(dict.fromkeys([*self._kept_out[1], *self.cfg.exclude]))
            self._kept_out = (stamp, now)
        return self._kept_out[1]

    # data: reopened when `casper index` publishes a new run
    def refresh(self) -> bool:
        """Drop the store and retrievers if a `casper index` run published since they were
        opened (the index's generation record, one small file read).

        A generation that only adds vectors keeps them: their index follows it by itself. Models
        stay loaded. Old objects are dropped, not closed: a request still running in another
        thread keeps its references until it is done.
        """
        now = read_generation(self.cfg.index_dir)
        moved = now.table != self._generation.table
        self._generation = now
        if not moved:
            return False
        self._store = None
        self._retrievers.clear()
        return True

    @property
    def generation(self) -> Generation:
        """The index generation this Runtime last saw (`casper serve --status` shows it)."""
        return self._generation

    def first_time(self, notice: str) -> bool:
        """True the first time a notice of this kind is raised in this process (said once)."""
        if notice in self._said:
            return False
        self._said.add(notice)
        return True

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

    def loaded_embedder(self) -> Embedder | None:
        """The embedder if one is loaded (nothing is built)."""
        return self._embedder

    def adopt_embedder(self, embedder: Embedder) -> None:
        """Keep an embedder this process built elsewhere (the service's auto-index loaded one for
        its run), so searches use it instead of loading a second copy."""
        if self._embedder is None:
            self._embedder = embedder
            self.loads["embedder"] += 1

    def reranker(self, say: Say = _quiet) -> Reranker | None:
        """The cross-encoder, or None when off or not loadable (said once, remembered)."""
        if not (self.cfg.rerank and self.cfg.rerank_model):
            return None
        if self._reranker is None:
            from casper.app.optional_models import load_reranker

            self._reranker = (load_reranker(self.cfg, say), None)
            self.loads["reranker"] += 1
        return self._reranker[0]

    def retriever(self, *, lexical: Lexical | None = None, mode: Mode = "hybrid") -> Retriever:
        """One Retriever per lexical backend (it caches the vector matrix), without a reranker:
        requests share it, so each passes its own (`Retriever.search(reranker=...)`).

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
        return retriever

    def engine(
        self, model: str | None = None, base_url: str | None = None
    ) -> tuple[Engine | None, ModelUnavailable | None]:
        """(engine, None) or (None, why not); a failure is remembered like a success. With a
        `base_url` (or the setting `llm_base_url`) the engine is that server's `model`; its
        host is checked first (RemoteLLMRefused, ConfigError: raised, not remembered)."""
        name = model or self.cfg.llm_model
        url = base_url or self.cfg.llm_base_url
        key = engine_key(name, url)
        if key not in self._engines:
            from casper.backends import factory

            try:
                built = factory.make_engine(replace(self.cfg, llm_model=name, llm_base_url=url))
                self._engines[key] = (built, None)
                self.loads["engine"] += 1
            except ModelUnavailable as exc:
                self._engines[key] = (None, exc)
        return self._engines[key]

    def engine_loaded(self, model: str | None = None, base_url: str | None = None) -> bool:
        key = engine_key(model or self.cfg.llm_model, base_url or self.cfg.llm_base_url)
        return key in self._engines

    def forget_failed_engines(self) -> None:
        """Let the next request retry a model that could not load (it may be cached by now)."""
        self._engines = {k: v for k, v in self._engines.items() if v[0] is not None}

    def loaded(self) -> Loaded:
        """What is in memory, for `casper serve --status`."""
        reranker = self._reranker[0] if self._reranker else None
        return {
            "store": self._store is not None,
            "index": bool(self._retrievers),
            "embedder": getattr(self._embedder, "name", None),
            "embedder_on": _runs_on(self._embedder),
            "reranker": getattr(reranker, "name", None) if reranker is not None else None,
            "engines": sorted(k for k, v in self._engines.items() if v[0] is not None),
            "loads": dict(self.loads),
        }


def _runs_on(embedder: Embedder | None) -> str | None:
    """`onnxruntime on the CPU, 2 threads` for an embedder that says where it runs."""
    placement = getattr(embedder, "placement", None)
    describe = getattr(placement, "describe", None)
    return str(describe()) if callable(describe) else None
