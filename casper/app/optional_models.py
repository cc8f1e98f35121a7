"""The optional models: the reranker, loaded when it is on and available, and the chat model;
a missing one is said once per data dir, in one line, and in full by `casper doctor`.

When it cannot be loaded, the reason is remembered in the data dir (`casper.app.notices`) together
with a cheap probe of where the model would be (its local path or its Hugging Face cache
folder). Later runs see the same probe and skip the attempt entirely — no `import
sentence_transformers` (~5 s cold) for a model known to be absent, and no repeated notice —
until the probe changes (e.g. after `casper pull`). `casper doctor` shows the remembered reason.
The chat model is tried on every `ask` (a miss costs a fraction of a second), but the notice that
it is missing is said the first time and again only when its probe changes.

Imports: casper.config, casper.app.notices, casper.backends.{factory,loading}; models lazily.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from casper.app import notices
from casper.backends import factory
from casper.backends.loading import hf_cache_dir
from casper.config import Config

if TYPE_CHECKING:
    from casper.errors import ModelUnavailable
    from casper.protocols import Reranker

NOTICE = "reranker"
ENGINE_NOTICE = "engine"


def model_probe(model: str) -> str:
    """A cheap fingerprint of where `model` would load from; changes when it appears or changes."""
    path = Path(model).expanduser()
    if not path.exists() and "/" in model and not model.startswith(("/", "~", ".")):
        path = hf_cache_dir() / ("models--" + model.replace("/", "--")) / "snapshots"
    try:
        return f"{path}:{path.stat().st_mtime_ns}"
    except OSError:
        return f"{path}:absent"


def reranker_notice(cfg: Config) -> dict[str, str] | None:
    """The remembered "reranker unavailable" notice for the configured model, if any."""
    found = notices.get(cfg.data_dir, NOTICE)
    if not found or found.get("model") != cfg.rerank_model:
        return None
    return found


def load_reranker(cfg: Config, say: Callable[[str], None]) -> Reranker | None:
    """The configured reranker, or None when it is off or can't be loaded (said once via `say`)."""
    if not cfg.rerank or not cfg.rerank_model:
        return None
    model = cfg.rerank_model
    probe = model_probe(model)
    known = reranker_notice(cfg)
    if known is not None and known.get("probe") == probe:
        return None  # known to be missing and nothing changed: said already, don't retry
    reranker, reason = factory.make_reranker(cfg)
    if reranker is not None:
        notices.forget(cfg.data_dir, NOTICE)
        return reranker
    notices.remember(
        cfg.data_dir,
        NOTICE,
        {
            "model": model,
            "probe": probe,
            "reason": reason or "unavailable",
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    say(f"rerank off: {model} is not available; searching without it (see `casper doctor`)")
    return None


def not_reranked_because(cfg: Config, asked: bool) -> str:
    """Why a search ran without the reranker, in a few words (what `--json` and the text say)."""
    if not asked:
        return "--no-rerank"
    if not cfg.rerank:
        return "rerank = false in config.toml"
    if not cfg.rerank_model:
        return "no rerank_model is set"
    model = cfg.rerank_model
    if model_probe(model).endswith(":absent"):
        return f"{model} is not downloaded (`casper pull`)"
    return f"{model} did not load (`casper doctor`)"


def engine_notice(cfg: Config, model: str) -> dict[str, str] | None:
    """The remembered "chat model unavailable" notice for `model`, if any."""
    found = notices.get(cfg.data_dir, ENGINE_NOTICE)
    return found if found and found.get("model") == model else None


def engine_unavailable(cfg: Config, model: str, failure: ModelUnavailable) -> str | None:
    """The one-line notice for a chat model that did not load, the first time in this data dir
    (or when where it would load from changed since); None when it was said already. The full
    reason and hint are remembered for `casper doctor`."""
    probe = model_probe(model)
    known = engine_notice(cfg, model)
    if known is not None and known.get("probe") == probe:
        return None
    notices.remember(
        cfg.data_dir,
        ENGINE_NOTICE,
        {
            "model": model,
            "probe": probe,
            "reason": failure.message,
            "hint": failure.hint or "",
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    return f"answering from search alone: {model} {_why_not(model, probe)}"


def engine_loaded(cfg: Config, model: str) -> None:
    """A model that loads clears its notice: if it goes missing again, that is said again."""
    if engine_notice(cfg, model) is not None:
        notices.forget(cfg.data_dir, ENGINE_NOTICE)


def _why_not(model: str, probe: str) -> str:
    local = model.startswith(("/", "~", ".")) or Path(model).expanduser().exists()
    if local:
        return "is not a model folder Casper can load (`casper doctor` says why)"
    if probe.endswith(":absent"):
        return (
            "is not downloaded (`casper pull` fetches it once, online; "
            "`casper doctor` has the details)"
        )
    return "did not load (`casper doctor` says why)"
