"""What one eval variant is (RunSpec × Corpus) and its index: config, build, search.

Shared by the retrieval harness (`eval.harness`) and the answer scoring (`eval.answers`), which
is why it is its own module: neither of those imports the other's internals. The searches only
the ablations run (the feedback pass, the reading's rewrite alone) are `eval.ablation`'s.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casper.app import runtime
from casper.app.runtime import make_retriever
from casper.config import BUNDLED_EMBEDDER, CHUNK_SIZE, CHUNK_STRIDE, Config
from casper.indexer.run import run_index
from casper.vocab import Fusion, Lexical, Mode
from eval.ablation import AblationRetriever
from eval.feedback import FEEDBACK_TERMS
from eval.gold import GoldItem

if TYPE_CHECKING:
    from casper.protocols import Embedder, Reranker
    from casper.search.retriever import Retriever
    from casper.store.db import Store
    from eval.ablation import Rewrites


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One ablation: how to retrieve, and which index (unit × embedder) to retrieve from."""

    mode: Mode
    lexical: Lexical = "lancedb"
    rerank: bool = False
    chunk_size: int = CHUNK_SIZE
    chunk_stride: int = CHUNK_STRIDE
    embed_model: str = BUNDLED_EMBEDDER
    literal: bool = False  # no query understanding (dates, people, scaffolding)
    # hybrid fusion: None, the configured one (config `fusion`) | "rrf", the ablation
    fuse: Fusion | None = None
    feedback: bool = False  # hybrid's second pass with the best hits' words (eval.feedback)
    rewrites: Rewrites = "add"  # "replace": the reading's rewrite alone (the former default)

    @property
    def unit(self) -> str:
        return f"{self.chunk_size}x{self.chunk_stride}"

    @property
    def index_key(self) -> tuple[int, int, str]:
        return self.chunk_size, self.chunk_stride, self.embed_model

    @property
    def label(self) -> str:
        parts: list[str] = [self.mode]
        if self.mode != "vector":
            parts.append(self.lexical)
        if self.mode == "hybrid" and self.fuse is not None:
            parts.append(self.fuse)
        if self.mode == "hybrid" and self.feedback and not self.literal:
            parts.append("feedback")
        if self.rewrites != "add" and not self.literal:
            parts.append(f"rewrites-{self.rewrites}")
        if self.literal:
            parts.append("literal")
        if self.rerank:
            parts.append("rerank")
        parts += [self.unit, model_slug(self.embed_model)]
        return "/".join(parts)


@dataclass(slots=True)
class Corpus:
    """A chat.db with its gold questions; `root` None means the user's current index."""

    name: str
    items: list[GoldItem]
    chat_db: Path | None = None
    contacts: Path | None = None
    root: Path | None = None
    timezone: str | None = None
    groups: dict[str, Collection[str]] = field(default_factory=dict)
    me_names: tuple[str, ...] = ()  # what the owner would set as `me_names`
    locale: str | None = None  # how its questions write numeric dates (None: the configured)
    # message guid → the dataset's session (LoCoMo, REALTALK): session-level recall is scored
    session_of: Callable[[str], str | None] | None = None


def model_slug(model: str) -> str:
    """A short filesystem-safe name: bundled:all-MiniLM-L6-v2 → all-minilm-l6-v2."""
    tail = model.split(":")[-1].rstrip("/").split("/")[-1]
    return re.sub(r"[^a-z0-9]+", "-", tail.lower()).strip("-") or "model"


def variant_config(cfg: Config, corpus: Corpus, spec: RunSpec) -> Config:
    """The Config of one (corpus, unit, embedder) index: its own data dir, named by unit."""
    cfg = dataclasses.replace(cfg, rerank=spec.rerank, lexical=spec.lexical)
    if corpus.root is None:
        return cfg
    return dataclasses.replace(
        cfg,
        data_dir=corpus.root / f"{spec.unit}-{model_slug(spec.embed_model)}",
        chat_db=corpus.chat_db if corpus.chat_db is not None else cfg.chat_db,
        contacts=corpus.contacts,
        chunk_size=spec.chunk_size,
        chunk_stride=spec.chunk_stride,
        embed_model=spec.embed_model,
        timezone=corpus.timezone,
        me_names=corpus.me_names or cfg.me_names,
        locale=corpus.locale or cfg.locale,
    )


def _quiet(stage: str, done: int, total: int | None) -> None:
    pass


def ensure_index(
    vcfg: Config, progress: Callable[[str, int, int | None], None] | None = None
) -> dict[str, Any]:
    """Build or update the index with the same run `casper index` makes (`progress`: its
    `(stage, done, total)` callback, as `casper index` shows it)."""
    if vcfg.store_path.exists() and not vcfg.index_dir.exists():
        for suffix in ("", "-wal", "-shm"):  # a half-built variant: start it over
            Path(str(vcfg.store_path) + suffix).unlink(missing_ok=True)
    store = runtime.open_store(vcfg, must_exist=False)
    try:
        report = run_index(
            store, runtime.index_source(vcfg), runtime.index_place(vcfg),
            runtime.index_embedder(vcfg), options=runtime.chunk_options(vcfg),
            progress=progress or _quiet,
        ).ingest  # fmt: skip
    finally:
        store.close()
    return {
        "messages": report.messages_total,
        "chunks_new": report.chunks_new,
        "reused": report.noop,
        "elapsed_s": report.elapsed_s,
    }


def make_search(
    vcfg: Config,
    store: Store,
    embedder: Embedder,
    reranker: Reranker | None,
    *,
    max_k: int,
    spec: RunSpec | None = None,
) -> Retriever:
    """A Retriever over one variant's index, sharing the loaded models across runs: Casper's
    own, or with the feedback pass or the rewrite alone when the spec asks for them."""
    retriever = make_retriever(
        vcfg,
        store,
        rerank=reranker is not None,
        embedder=embedder,
        reranker=reranker,
        candidates=max(vcfg.candidates, max_k),
        fuse=spec.fuse if spec else None,
    )
    if spec is None or (not spec.feedback and spec.rewrites == "add"):
        return retriever
    terms = FEEDBACK_TERMS if spec.feedback else 0
    return AblationRetriever(retriever, feedback_terms=terms, rewrites=spec.rewrites)
