"""`casper pull`: the one command that uses the network, to cache the models once."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from casper.cli.base import Home, Verbose, _stderr, app, config, guarded
from casper.config import Config
from casper.errors import CasperError

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def pull(
    model: Annotated[
        str | None, typer.Option("--model", help="chat model id (default: config)")
    ] = None,
    home: Home = None,
    verbose: Verbose = False,
) -> None:
    """Download the chat model and the reranker into the local cache (needs a connection once),
    and prepare the embedding model."""
    cfg = config(home, llm_model=model)
    # `guarded` switched the hub off for every command; this one downloads on purpose.
    os.environ["HF_HUB_OFFLINE"] = "0"
    os.environ["TRANSFORMERS_OFFLINE"] = "0"
    from huggingface_hub import snapshot_download

    err = _stderr()
    for kind, repo in (("chat model", cfg.llm_model), ("reranker", cfg.rerank_model)):
        if kind == "chat model" and cfg.llm_base_url and not model:
            err.print(f"chat model: served by {cfg.llm_base_url} (llm_base_url); nothing to fetch")
            continue
        if not repo or os.path.isdir(os.path.expanduser(repo)):
            continue
        err.print(f"downloading {kind} {repo} …")
        try:
            path = snapshot_download(repo)
        except Exception as exc:  # noqa: BLE001 - any hub failure is the same advice
            raise CasperError(
                f"could not download {repo}: {type(exc).__name__}",
                hint="check your connection and the model id",
            ) from exc
        err.print(f"  cached at {path}")
    _prepare_embedder(cfg)


def _prepare_embedder(cfg: Config) -> None:
    """Make the embedder's onnxruntime copy now (when it is the backend used here), so the
    first `casper index` does not wait for it. Nothing is downloaded for it."""
    from casper.app import runtime

    err = _stderr()
    err.print("preparing the embedding model …")
    embedder = runtime.make_embedder(cfg)
    placement = getattr(embedder, "placement", None)
    err.print(f"  ready: {placement.describe() if placement else embedder.name}")
