"""OnnxEmbedder: a sentence-transformers model run by onnxruntime on the CPU, from a one-time
export kept in the model cache (`casper.backends.onnx_export` writes it).

No torch at run time: the model's own fast tokenizer (`tokenizers`), onnxruntime and numpy,
pooled and normalised as sentence-transformers does. The copy is used only when its export
reproduced torch's vectors (placement.MIN_COSINE on placement.PROBE_TEXTS, recorded in its
meta.json) and its model file still has the sha256 recorded then; a missing or damaged copy is
made again, a failed export is remembered beside it so every run does not retry it. The cache is
held owner-only and checked against the data dir's own record (casper.backends.onnx_cache).

Imports: casper.backends (embedder, loading, onnx_cache, placement), casper.errors,
casper.config, casper.telemetry; onnxruntime and tokenizers inside functions (the heavy
libraries: loaded only when a copy is used). The export is passed in (the factory gives
onnx_export's).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict

import numpy as np
from numpy.typing import NDArray

from casper.backends import onnx_cache
from casper.backends.batching import ProgressFn, embed_longest_first
from casper.backends.embedder import MINILM_SHA256, fingerprint, hub_fingerprint
from casper.backends.loading import local_model_path
from casper.backends.onnx_cache import sha256_of as sha256_of  # re-exported (tests, older callers)
from casper.backends.placement import Placement
from casper.config import BUNDLED_EMBEDDER
from casper.errors import CasperError
from casper.telemetry import switch_off

if TYPE_CHECKING:
    from tokenizers import Encoding

# Bump when what an export writes (files, meta keys, graph inputs) changes: older copies are
# then made again instead of misread.
FORMAT = 1
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "meta.json"
FAILED_SUFFIX = ".failed.json"
COPY_FILES = (MODEL_FILE, TOKENIZER_FILE, META_FILE)  # what decides the vectors
POOLINGS = ("mean", "cls")

# writes a checked copy of a model into a folder, or raises OnnxUnusable (onnx_export.py)
Export = Callable[[str, Path], None]


class ExportMeta(TypedDict, total=False):
    """An export's meta.json: what the torch embedder it reproduces says of itself, how to
    tokenize and pool, the model file's sha256 and how close its vectors came (min_cosine)."""

    format: int
    name: str
    dim: int
    checksum: str
    max_seq_length: int
    query_prefix: str
    document_prefix: str
    pooling: str
    pad_id: int
    pad_token: str
    model_sha256: str
    tokenizer: str  # the tokenizer class it was saved from
    export_s: float
    min_cosine: float


log = logging.getLogger(__name__)


class OnnxUnusable(CasperError):
    """onnxruntime cannot run this model here (export failed, or its vectors differ from
    torch's): the caller embeds with torch instead and says why."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """An export ready to load, and what happened to get it (said to the user once)."""

    folder: Path
    notice: str | None = None


def cache_key(name: str, checksum: str) -> str:
    """The cache folder's name for a model: its weights' identity, this export format and the
    onnxruntime that checked it (a new onnxruntime exports and checks again)."""
    runtime = metadata.version("onnxruntime")
    digest = hashlib.sha256(f"{FORMAT}\n{name}\n{checksum}\n{runtime}".encode()).hexdigest()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower().rsplit("/", 1)[-1]).strip("-") or "model"
    return f"{slug}-{digest[:16]}"


def prepare(
    model: str,
    *,
    name: str,
    checksum: str,
    cache: Path,
    export: Export,
    ledger: Path | None = None,
) -> Prepared:
    """The cache folder holding a checked ONNX copy of `model` (exported now when missing,
    damaged, a link, or not the copy `ledger` recorded: casper.backends.onnx_cache). Raises
    OnnxUnusable when it cannot be made here (also when an earlier run found that: delete the
    `.failed.json` it names to try again) or the cache belongs to someone else."""
    if not checksum:
        raise OnnxUnusable(f"the files of {name} could not be identified for an onnx copy")
    folder = cache / "onnx" / cache_key(name, checksum)
    found = onnx_cache.inspect(cache, folder)
    if found.refusal:
        raise OnnxUnusable(found.refusal)
    notices = found.notices
    failed = folder.with_name(folder.name + FAILED_SUFFIX)
    if failed.exists():
        reason = _read_json(failed).get("reason", "an earlier export failed")
        raise OnnxUnusable(f"{reason} (to try again, delete {failed})")
    if folder.exists() or folder.is_symlink():
        recorded = onnx_cache.recorded(ledger, folder)
        files = {} if found.problem else onnx_cache.digests(folder, COPY_FILES)
        problem = found.problem or _problem(folder, files, recorded)
        if problem is None:
            if recorded != files:  # first use from this data dir
                onnx_cache.record(ledger, folder, files)
            return Prepared(folder, _joined(notices))
        _discard(folder)
        notices.append(
            f"the onnxruntime copy of the embedding model was damaged ({problem}); made again"
        )
    log.warning(
        "making the onnxruntime copy of %s (once, checked against torch; about a minute)", name
    )
    _private_dir(cache)
    _private_dir(folder.parent)
    try:
        export(model, folder)
    except OnnxUnusable as exc:
        _write_json(failed, {"reason": exc.message, "at": time.time()})
        raise
    problem = check_folder(folder)
    if problem is not None:  # written and checked a moment ago: a disk or a second writer
        raise OnnxUnusable(f"the onnxruntime copy could not be read back: {problem}")
    onnx_cache.record(ledger, folder, onnx_cache.digests(folder, COPY_FILES))
    return Prepared(folder, _joined(notices))


def check_folder(folder: Path, recorded: dict[str, str] | None = None) -> str | None:
    """What is wrong with an export folder (None when it is complete and unchanged: its model
    has the sha256 its meta.json says and, given `recorded`, every file the sha256 a data dir
    recorded when it first used the copy)."""
    return _problem(folder, onnx_cache.digests(folder, COPY_FILES), recorded)


def _problem(folder: Path, files: dict[str, str], recorded: dict[str, str] | None) -> str | None:
    """check_folder, given the sha256 of the copy's files (each hashed once per load)."""
    meta = read_meta(folder)
    if meta.get("format") != FORMAT:
        return "no readable meta.json of this format"
    for file in (MODEL_FILE, TOKENIZER_FILE):
        if not (folder / file).is_file():
            return f"{file} missing"
    if files.get(MODEL_FILE) != meta.get("model_sha256"):
        return f"{MODEL_FILE} changed since it was checked"
    return onnx_cache.mismatch(recorded, files)


def _joined(notices: list[str]) -> str | None:
    return "; ".join(notices) or None


class OnnxEmbedder:
    """Embedder over a checked export folder: same name, size, checksum and vectors (to
    placement.MIN_COSINE) as the torch embedder of the model it was exported from."""

    def __init__(self, folder: Path, batch_size: int = 64, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        ort = import_onnxruntime()

        meta = read_meta(folder)
        self.name: str = meta["name"]
        self.dim: int = int(meta["dim"])
        self.checksum: str = meta["checksum"]
        self.max_seq_length: int | None = int(meta["max_seq_length"])
        self.query_prefix: str = meta["query_prefix"]
        self.document_prefix: str = meta["document_prefix"]
        self.batch_size = batch_size
        self.min_cosine: float = float(meta.get("min_cosine", 0.0))
        self._pooling: str = meta["pooling"]
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        # the file keeps the settings of its last use; these are sentence-transformers' own
        tokenizer.enable_truncation(max_length=int(meta["max_seq_length"]))
        tokenizer.enable_padding(pad_id=int(meta["pad_id"]), pad_token=meta["pad_token"])
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # idle threads sleep instead of spinning: the cores are shared with the rest of the run
        # (and, on this dev box, with other work); spinning bought nothing measurable
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: its warnings name graph internals
        self._session = ort.InferenceSession(
            str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = [i.name for i in self._session.get_inputs()]
        used = options.intra_op_num_threads or threads
        self.placement = Placement("onnxruntime", "cpu", used or None)

    @classmethod
    def cached(
        cls,
        model: str,
        *,
        cache: Path,
        export: Export,
        batch_size: int = 64,
        threads: int | None = None,
        ledger: Path | None = None,
    ) -> OnnxEmbedder:
        """The embedder of `model` (BUNDLED_EMBEDDER, a hub id or a path) from its checked copy
        in `cache`, made with `export` first when there is none. Raises OnnxUnusable (stay on
        torch), ModelUnavailable (the model itself cannot load). `ledger`: the data dir's record
        of the copies it checked (casper.backends.onnx_cache)."""
        name, checksum = model_identity(model)
        prepared = prepare(
            model, name=name, checksum=checksum, cache=cache, export=export, ledger=ledger
        )
        embedder = cls(prepared.folder, batch_size=batch_size, threads=threads)
        if (embedder.name, embedder.checksum) != (name, checksum):
            raise OnnxUnusable(f"the onnx copy in {prepared.folder} is of another model")
        embedder.placement = embedder.placement.with_notice(prepared.notice)
        return embedder

    def embed_documents(
        self, texts: Sequence[str], on_progress: ProgressFn | None = None
    ) -> NDArray[np.float32]:
        """Embed passages as an (n, dim) float32 array; `on_progress(done, total)` per batch."""
        return embed_longest_first(
            texts,
            self._encode,
            dim=self.dim,
            batch_size=self.batch_size,
            prefix=self.document_prefix,
            on_progress=on_progress,
        )

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query (with the model's query prefix) as a (dim,) float32 vector."""
        return self._encode([self.query_prefix + text])[0]

    def _encode(self, texts: list[str]) -> NDArray[np.float32]:
        # sentence-transformers strips each text before tokenizing
        return self._run(self._tokenizer.encode_batch([t.strip() for t in texts]))

    def _run(self, encoded: list[Encoding]) -> NDArray[np.float32]:
        """Pooled, normalised vectors of a tokenized batch."""
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encoded], dtype=np.int64)
        hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        if self._pooling == "cls":
            vectors = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            vectors = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)


def import_onnxruntime() -> ModuleType:
    """onnxruntime with its telemetry off: the switch is read when its library loads (every
    command sets it first, casper.telemetry; this covers Casper used as a library), and the
    events API stops what a process that imported it earlier would still record."""
    switch_off()
    import onnxruntime as ort

    ort.disable_telemetry_events()
    return ort


def model_identity(model: str) -> tuple[str, str]:
    """(name, checksum) the torch embedder gives `model`, found without loading it."""
    if model == BUNDLED_EMBEDDER:
        return model, MINILM_SHA256
    local = local_model_path(model)
    return model, fingerprint(local) if local else hub_fingerprint(model)


def read_meta(folder: Path) -> ExportMeta:
    """An export's meta.json ({} when it does not read)."""
    try:
        meta: ExportMeta = json.loads((folder / META_FILE).read_text())  # written by write_meta
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def write_meta(folder: Path, meta: ExportMeta) -> None:
    _write_json(folder / META_FILE, {"format": FORMAT, **meta})


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: Mapping[str, object]) -> None:
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def _discard(folder: Path) -> None:
    """Move a folder aside, then delete it (a reader that has it open keeps its files)."""
    aside = folder.with_name(f".{folder.name}.old-{os.getpid()}-{time.time_ns()}")
    try:
        folder.rename(aside)
    except OSError:
        return
    if aside.is_symlink():  # the link goes, never what it points to
        aside.unlink()
    else:
        shutil.rmtree(aside, ignore_errors=True)
