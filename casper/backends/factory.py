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
