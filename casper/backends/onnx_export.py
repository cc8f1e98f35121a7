"""The one-time ONNX export of a sentence-transformers model, checked against torch before use.

`export_checked` loads the model with torch on the CPU (the reference), exports its transformer
with `torch.onnx.export` (the torch.export-based exporter; fp32, batch and sequence length
dynamic), saves the fast tokenizer beside it, then embeds placement.PROBE_TEXTS both ways: the
copy is kept only when every vector's cosine to torch's is at least placement.MIN_COSINE. It is
written into a temporary folder and renamed into place, so a reader never sees half of one.

Models this reads: a Transformer, then mean or CLS Pooling (prompt tokens included), then an
optional Normalize, the shape of all-MiniLM-L6-v2, BGE, E5 and GTE. Anything else stays on torch.

Imports: casper.backends (embedder, onnx_cache, onnx_embedder, placement), casper.errors; torch,
sentence_transformers lazily (this module runs only when a copy is made).
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from casper.backends.onnx_cache import sha256_of
from casper.backends.onnx_embedder import (
    MODEL_FILE,
    POOLINGS,
    TOKENIZER_FILE,
    OnnxEmbedder,
    OnnxUnusable,
    read_meta,
    write_meta,
)
from casper.backends.placement import MIN_COSINE, PROBE_TEXTS

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer

    from casper.protocols import Embedder


def export_checked(model: str, folder: Path) -> None:
    """Export `model` into `folder` (created; an existing one is left as it is) and check it.
    Raises OnnxUnusable when the model's shape is not one we read, the export fails, or its
    vectors differ from torch's."""
    # here, not at the top: the tests replace casper.backends.embedder.SentenceTransformerEmbedder
    from casper.backends.embedder import SentenceTransformerEmbedder

    reference = SentenceTransformerEmbedder(model, device="cpu")
    st = reference._model  # noqa: SLF001 - the export needs the modules themselves
    pooling = _pooling(st)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}-{time.time_ns()}")
    tmp.mkdir(mode=0o700)
    try:
        started = time.perf_counter()
        _export_transformer(st, tmp / MODEL_FILE)
        tokenizer_file = _save_tokenizer(st, tmp)
        tokenizer = st.tokenizer
        write_meta(
            tmp,
            {
                "name": reference.name,
                "dim": reference.dim,
                "checksum": reference.checksum,
                "max_seq_length": int(st.max_seq_length or 512),
                "query_prefix": reference.query_prefix,
                "document_prefix": reference.document_prefix,
                "pooling": pooling,
                "pad_id": int(tokenizer.pad_token_id or 0),
                "pad_token": str(tokenizer.pad_token or "[PAD]"),
                "model_sha256": sha256_of(tmp / MODEL_FILE),
                "tokenizer": tokenizer_file,
                "export_s": round(time.perf_counter() - started, 1),
            },
        )
        worst = min_cosine(reference, OnnxEmbedder(tmp, threads=1))
        if worst < MIN_COSINE:
            raise OnnxUnusable(
                f"onnxruntime's vectors differ from torch's (min cosine {worst:.6f} < {MIN_COSINE})"
            )
        write_meta(tmp, {**read_meta(tmp), "min_cosine": round(worst, 6)})
        for path in tmp.iterdir():
            os.chmod(path, 0o600)
        try:
            tmp.rename(folder)
        except OSError:  # another process finished the same export first: theirs is kept
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def min_cosine(
    reference: Embedder, candidate: Embedder, texts: tuple[str, ...] = PROBE_TEXTS
) -> float:
    """The lowest cosine between two embedders' vectors of `texts` (documents and queries)."""
    pairs = [
        (reference.embed_documents(list(texts)), candidate.embed_documents(list(texts))),
        (
            np.stack([reference.embed_query(t) for t in texts[:3]]),
            np.stack([candidate.embed_query(t) for t in texts[:3]]),
        ),
    ]
    return float(min(np.min(np.sum(a * b, axis=1)) for a, b in pairs))


def _pooling(st: SentenceTransformer) -> str:
    """The pooling mode of a Transformer → Pooling [→ Normalize] model, or OnnxUnusable."""
    kinds = [type(module).__name__ for module in st]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
        raise OnnxUnusable(f"its modules ({' → '.join(kinds)}) are not a shape the export reads")
    config: dict[str, object] = st[1].get_config_dict()
    mode = config.get("pooling_mode")  # sentence-transformers >= 5
    if mode is None:  # 3 and 4: one flag per mode
        modes = [k for k, on in config.items() if k.startswith("pooling_mode_") and on is True]
        named = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
        mode = named.get(modes[0]) if len(modes) == 1 else None
    if mode not in POOLINGS or config.get("include_prompt", True) is not True:
        raise OnnxUnusable(f"its pooling ({mode or config}) is not one the export reads")
    return str(mode)


def _export_transformer(st: SentenceTransformer, path: Path) -> None:
    import torch

    inner = st[0].auto_model.eval()
    typed = "token_type_ids" in st.tokenizer.model_input_names

    class LastHidden(torch.nn.Module):
        """The transformer's token vectors; pooling is done by the caller (numpy)."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state  # fmt: skip

    class Untyped(LastHidden):
        def forward(  # type: ignore[override]
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor
        ) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    names = ["input_ids", "attention_mask"] + ["token_type_ids"] * typed
    sample = st.tokenizer(["a short one", "and a longer second example"], padding=True,
                          return_tensors="pt")  # fmt: skip
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                (LastHidden() if typed else Untyped()).eval(),
                tuple(sample[n] for n in names),
                str(path),
                dynamo=True,
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_shapes={n: {0: batch, 1: length} for n in names},
                external_data=False,
                verbose=False,
            )
    except Exception as exc:  # any exporter failure means: stay on torch
        raise OnnxUnusable(f"the onnx export failed: {type(exc).__name__}: {exc}"[:300]) from exc


def _save_tokenizer(st: SentenceTransformer, folder: Path) -> str:
    """Write the model's fast tokenizer as tokenizer.json (the only tokenizer file kept)."""
    backend = getattr(st.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise OnnxUnusable("its tokenizer has no fast (tokenizers) version")
    backend.save(str(folder / TOKENIZER_FILE))
    return type(st.tokenizer).__name__
