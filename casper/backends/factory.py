"""The only place concrete backends are chosen: make_embedder / make_reranker / make_engine.

Imports: casper.config, casper.errors, casper.protocols; the adapters (and their heavy libraries),
`casper.backends.loading` and `importlib.metadata` inside the functions, so a command that builds
no model (the cold lexical search, a no-op `casper index`) loads none of them.
The helpers the adapters share live in `casper.backends.loading` (no import circle).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from casper.config import BUNDLED_EMBEDDER, DEFAULT_LLM, Config, llm_server
from casper.errors import ConfigError, ModelUnavailable

if TYPE_CHECKING:
    from casper.protocols import Embedder, Engine, Reranker

log = logging.getLogger(__name__)


def make_embedder(cfg: Config) -> Embedder:
    """The configured embedder, where `embed_backend` and `embed_device` place it (see
    casper.backends.placement): onnxruntime or torch on the CPU, torch on the Apple GPU. A
    backend that cannot run the model here falls back to torch on the CPU, and the embedder's
    `placement.notice` says why. The bundled MiniLM is checksum-verified. Raises
    ModelUnavailable."""
    from casper.backends.embedder import SentenceTransformerEmbedder
    from casper.backends.placement import choose

    plan = choose(cfg.embed_backend, cfg.embed_device)
    notice = plan.notice
    if plan.backend == "onnx":
        from casper.backends.loading import model_cache
        from casper.backends.onnx_cache import LEDGER_FILE
        from casper.backends.onnx_embedder import OnnxEmbedder, OnnxUnusable
        from casper.backends.onnx_export import export_checked
        from casper.backends.placement import cpu_threads

        try:
            embedder = OnnxEmbedder.cached(
                cfg.embed_model, cache=model_cache(), export=export_checked,
                batch_size=cfg.embed_batch, threads=cpu_threads(),
                ledger=cfg.data_dir / LEDGER_FILE,
            )  # fmt: skip
            if embedder.placement.notice:  # its copy was damaged and made again
                log.warning("%s", embedder.placement.notice)
            return embedder
        except ModelUnavailable:
            raise  # the model itself: torch could not load it either
        except OnnxUnusable as exc:
            notice = f"onnxruntime not used ({exc.message}): embedding with torch on the CPU"
        except Exception as exc:  # noqa: BLE001 - onnxruntime refused the copy: torch still works
            notice = f"onnxruntime failed ({type(exc).__name__}): embedding with torch on the CPU"
    if notice:  # said by every command that loads it (`notice: …` on stderr, the service log)
        log.warning("%s", notice, extra={"hint": FALLBACK_HINT})
    return SentenceTransformerEmbedder(
        cfg.embed_model, batch_size=cfg.embed_batch, device=plan.device, notice=notice
    )


FALLBACK_HINT = 'set embed_backend = "torch" and embed_device = "cpu" in config.toml to choose it'


def make_bulk_embedder(
    cfg: Config,
    default: Callable[[], Embedder],
    check: Callable[[Embedder], None],
    said: Callable[[str], None],
) -> Embedder:
    """The engine a bulk run embeds with (casper.backends.bulk): what the settings fix (the
    Apple GPU, a backend in config.toml, no onnxruntime), else a race of onnxruntime (`default`,
    the engine queries use) and torch on the CPU on this run's own passages. `check` is called
    with torch once it is built (the same model, whatever runs it), `said` with each choice."""
    from casper.backends import bulk
    from casper.backends.embedder import SentenceTransformerEmbedder
    from casper.backends.placement import apple_gpu, onnxruntime_installed

    fixed = bulk.decide(cfg.embed_backend, cfg.embed_device, gpu=apple_gpu(),
                        onnx=onnxruntime_installed(), load=os.getloadavg()[0],
                        cores=os.cpu_count() or 1)  # fmt: skip
    engine = default()
    placement = getattr(engine, "placement", None)
    if fixed is not None or placement is None or placement.backend != "onnxruntime":
        # fixed by the settings, or onnxruntime fell back to torch: nothing to race
        if fixed is not None and placement is not None:
            setattr(engine, "placement", placement.with_why(fixed.why))  # noqa: B010 - torch's and onnx's
            said(fixed.why)
        return engine

    def torch_cpu() -> Embedder:
        return SentenceTransformerEmbedder(cfg.embed_model, batch_size=cfg.embed_batch)

    return bulk.Race({"onnx": lambda: engine, "torch": torch_cpu}, check=check, on_choice=said)


_MAKE_EMBEDDER = make_embedder


def embedder_replaced() -> bool:
    """`make_embedder` was replaced (tests, benchmarks): what it builds embeds every run."""
    return make_embedder is not _MAKE_EMBEDDER


def embedder_identity(cfg: Config) -> tuple[str, int, str] | None:
    """(name, dim, checksum) of the configured embedder when they are known without loading
    it: the bundled MiniLM's are constants (its files are verified when it loads). None for
    any other model, and when `make_embedder` was replaced (tests, benchmarks), since the
    constants would not describe what that builds."""
    from casper.backends.embedder import MINILM_DIM, MINILM_SHA256

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
    """The configured chat model: an OpenAI-compatible server when `llm_base_url` is set (its
    host checked first: nothing is built, and so nothing connects, for a refused one), else
    MLX. Raises ModelUnavailable, or RemoteLLMRefused / ConfigError for the server's URL."""
    if cfg.llm_base_url:
        return make_server_engine(cfg, cfg.llm_base_url)
    from casper.backends.mlx_engine import MlxEngine

    return MlxEngine(
        cfg.llm_model,
        max_new_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        thinking=cfg.thinking,
    )


def make_server_engine(cfg: Config, base_url: str) -> Engine:
    """OpenAIEngine for `base_url`, once `llm_server` allowed its host."""
    from casper.backends.openai_engine import OpenAIEngine

    url, _local = llm_server(base_url, allow_remote=cfg.allow_remote_llm)
    key = None
    if cfg.llm_api_key_env:
        key = os.environ.get(cfg.llm_api_key_env) or None
        if key is None:
            raise ConfigError(
                f"llm_api_key_env names {cfg.llm_api_key_env}, which is not set here",
                hint=f"export {cfg.llm_api_key_env}=… before the command (a running "
                "`casper serve` keeps the environment it started with: "
                "`casper serve --stop` first), or remove llm_api_key_env from config.toml",
            )
    return OpenAIEngine(
        url,
        # the MLX default names nothing a server knows: then the server's only model
        None if cfg.llm_model == DEFAULT_LLM else cfg.llm_model,
        api_key=key,
        max_new_tokens=cfg.llm_max_tokens,
        temperature=cfg.temperature,
        thinking=cfg.thinking,
        timeout_s=cfg.llm_timeout_s,
        first_token_timeout_s=cfg.llm_first_token_timeout_s,
    )
