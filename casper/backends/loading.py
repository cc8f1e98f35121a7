"""Model-location and loading helpers the backend adapters share (no adapter imports them
from the factory, so factory -> adapter is the only direction).

Imports: casper.errors, casper.telemetry; transformers only while a model loads (a heavy
library: `quiet_transformers`).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from casper.errors import ModelUnavailable
from casper.telemetry import cache_dir

_TRUTHY = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    """True when HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) asks for no downloads."""
    return any(
        os.environ.get(var, "").strip().lower() in _TRUTHY
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def model_cache() -> Path:
    """Where Casper keeps what it derives from models (the onnxruntime copy of the embedder):
    $CASPER_CACHE, else the platform's user cache folder (casper.telemetry.cache_dir)."""
    return cache_dir()


def hf_cache_dir() -> Path:
    """Where huggingface_hub keeps downloaded models (same precedence as the library)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def not_cached(kind: str, model: str) -> ModelUnavailable | None:
    """Offline, a hub model with no snapshot in the local cache cannot load: the failure,
    found without importing the loading library (mlx_lm and transformers take tens of MB that
    a long-lived service would keep for nothing). None when it may load."""
    if not hub_offline() or local_model_path(model) is not None or "/" not in model:
        return None
    snapshots = hf_cache_dir() / ("models--" + model.replace("/", "--")) / "snapshots"
    try:
        if any(snapshots.iterdir()):
            return None
    except OSError:
        pass
    return ModelUnavailable(
        f"cannot load {kind} {model}: it is not in the local model cache",
        hint="Casper never downloads while answering: run `casper pull` once while online, "
        "or point the setting at a local copy",
    )


def local_model_path(model: str) -> Path | None:
    """The local directory `model` names, or None for a hub id; a missing path raises."""
    path = Path(model).expanduser()
    if path.exists():
        return path
    if model.startswith(("/", "~", ".")) or "\\" in model or model.count("/") > 1:
        raise ModelUnavailable(
            f"model path {model} does not exist",
            hint="check the path (a directory with config.json and weights) in config.toml "
            "or the --model flag",
        )
    return None


def load_failure(kind: str, model: str, exc: BaseException) -> ModelUnavailable:
    """Turn any load exception into ModelUnavailable with a hint fitting the situation."""
    detail = brief(str(exc))
    message = f"cannot load {kind} {model}: {type(exc).__name__}"
    if detail:
        message += f": {detail}"
    if Path(model).expanduser().exists():
        hint = "the directory exists but is not a loadable model; re-download or fix the path"
    elif hub_offline():
        hint = (
            f"{model} is not in the local model cache (Casper never downloads while answering); "
            "run `casper pull` once while online, or point the setting at a local copy"
        )
    else:
        hint = (
            "check the model id and your connection; it is downloaded once and then cached "
            "(or point the setting at a local copy)"
        )
    return ModelUnavailable(message, hint=hint)


def brief(text: str, limit: int = 200) -> str:
    """An exception's first line, cut at a sentence end (or a word, with `…`) when it is long:
    never half a word or an open quote, as a plain `[:200]` left ("…set 'HF_HUB_OFFLINE")."""
    lines = text.strip().splitlines()
    line = lines[0].strip() if lines else ""
    if len(line) <= limit:
        return line
    cut = line[:limit]
    end = cut.rfind(". ")
    if end > limit // 3:
        return cut[: end + 1]
    return cut.rsplit(" ", 1)[0].rstrip(",;:") + " …"


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' progress bars and info logs while a model loads."""
    from transformers.utils import logging as hf_logging

    bars, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


@contextmanager
def quiet_load_failure() -> Iterator[None]:
    """Keep the hub's retry warnings and library warnings off stderr while loading a model whose
    failure is expected and reported by us (as one ModelUnavailable), e.g. a missing reranker."""
    loggers = [logging.getLogger(n) for n in ("huggingface_hub", "sentence_transformers")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
