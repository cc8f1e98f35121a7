"""The only place concrete backends are chosen: make_embedder / make_reranker / make_engine.

Imports: casper.config, casper.errors, casper.protocols; adapters (and heavy libraries) lazily.
The helpers the adapters share live in `casper.backends.loading` (no import circle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from casper.config import Config
from casper.errors import ModelUnavailable

if TYPE_CHECKING:
    from casper.protocols import Embedder, Engine, Reranker


def make_embedder(cfg: Config) -> Embedder:
    """The configured embedder; the bundled MiniLM is checksum-verified. Raises ModelUnavailable."""
    from casper.backends.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(cfg.embed_model, batch_size=cfg.embed_batch)


_MAKE_EMBEDDER = make_embedder


def embedder_identity(cfg: Config) -> tuple[str, int, str] | None:
    """(name, dim, checksum) of the configured embedder when they are known without loading
    it: the bundled MiniLM's are constants (its files are verified when it loads). None for
    any other model, and when `make_embedder` was replaced (tests, benchmarks), since the
    constants would not describe what that builds."""
    from casper.backends.embedder import MINILM_DIM, MINILM_SHA256
    from casper.config import BUNDLED_EMBEDDER

    if make_embedder is not _MAKE_EMBEDDER or cfg.embed_model != BUNDLED_EMBEDDER:
        return None
    return BUNDLED_EMBEDDER, MINILM_DIM, MINILM_SHA256


def make_reranker(cfg: Config) -> tuple[Reranker | None, str | None]:
    """(reranker, None); (None, None) when switched off; (None, reason) when it cannot load."""
    if not cfg.rerank or cfg.rerank_model is None:
        return None, None
    try:
        from casper.backends.reranker import CrossEncoderReranker

        return CrossEncoderReranker(cfg.rerank_model), None
    except ModelUnavailable as exc:
        return None, exc.message + (f" ({exc.hint})" if exc.hint else "")


def make_engine(cfg: Config) -> Engine:
    """The configured chat model (MLX). Raises ModelUnavailable."""
    from casper.backends.mlx_engine import MlxEngine

    return MlxEngine(
        cfg.llm_model,
        max_new_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        thinking=cfg.thinking,
    )
