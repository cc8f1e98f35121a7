"""Frozen settings and `load_config`: defaults < $CASPER_HOME/config.toml < explicit overrides.

Imports: stdlib only. Only `load_config` reads the environment.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from casper.errors import ConfigError, RemoteLLMRefused

DEFAULT_LLM = "mlx-community/Qwen3.5-4B-MLX-4bit"
ALTERNATIVE_LLM = "mlx-community/Qwen3-4B-Instruct-2507-4bit"
BUNDLED_EMBEDDER = "bundled:all-MiniLM-L6-v2"
DEFAULT_RERANKER = "cross-encoder/ms-marco-MiniLM-L6-v2"
# The chunker's defaults, named once: Config uses them and so do the chunking functions' own
# defaults. 3-message passages sliding by 1 measured best on LoCoMo and the demo gold set (README).
CHUNK_SIZE = 3  # messages per chunk
CHUNK_STRIDE = 1
CHUNK_GAP_S = 6 * 3600  # a silence this long starts a new chunk
CHUNK_MAX_CHARS = 1500
# casper.search.fusion.FUSIONS (a leaf cannot import it; a test keeps the two equal)
FUSIONS = ("convex", "adaptive", "rrf")
# Where the embedder runs (casper/backends/placement.py): the library, and the device under it.
EMBED_BACKENDS = ("auto", "torch", "onnx")
EMBED_DEVICES = ("auto", "cpu", "mps")


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Immutable settings. Runtime wiring lives in cli.py as local variables."""

    data_dir: Path
    # resolved when a Config is built (not at import), so the default follows $HOME
    chat_db: Path = field(default_factory=lambda: Path.home() / "Library/Messages/chat.db")
    contacts: Path | None = field(
        default_factory=lambda: Path.home() / "Library/Application Support/AddressBook"
    )
    # the chat model: an MLX hub id or local folder, or with `llm_base_url` the name the server
    # knows it by (unset there: the server's only model; mlx_lm.server calls its own
    # "default_model")
    llm_model: str = DEFAULT_LLM
    # str | None: an OpenAI-compatible server's base URL (".../v1"), answering instead of MLX;
    # http(s) only, and a host on this machine (127.0.0.0/8, ::1, localhost) unless
    # `allow_remote_llm` (checked by `llm_server`, before any connection)
    llm_base_url: str | None = None
    # str | None: the NAME of the environment variable holding that server's API key (the key
    # itself is never written to config.toml, a log or a document)
    llm_api_key_env: str | None = None
    # true: a non-loopback `llm_base_url` may be used (a notice says so on every answer)
    allow_remote_llm: bool = False
    llm_timeout_s: float = 60.0  # > 0: seconds the server may stay silent (connect, each token)
    embed_model: str = BUNDLED_EMBEDDER
    rerank_model: str | None = DEFAULT_RERANKER  # None → no rerank
    rerank: bool = True
    lexical: str = "lancedb"  # lancedb | rank-bm25
    candidates: int = 50  # per retriever before fusion
    # how the hybrid legs are fused: convex (fixed weights) | adaptive (those weights moved per
    # query by how peaked each leg's scores are; opt-in: it lost texting with the typed and
    # event-date legs, docs/retrieval.md) | rrf; casper/search/fusion.py
    fusion: str = "convex"
    top_k: int = 8
    chunk_size: int = CHUNK_SIZE
    chunk_stride: int = CHUNK_STRIDE
    chunk_gap_s: float = CHUNK_GAP_S
    chunk_max_chars: int = CHUNK_MAX_CHARS
    embed_batch: int = 64
    # auto | torch | onnx: auto is torch on the Apple GPU, else onnxruntime on the CPU when it
    # reproduces torch's vectors (docs/performance.md#embedding-backends), else torch on the CPU
    embed_backend: str = "auto"
    embed_device: str = "auto"  # auto | cpu | mps: auto is the Apple GPU (mps) when available
    max_iterations: int = 5  # model calls in the loop (nudged retries count); synthesis is +1
    max_new_tokens: int = 512
    temperature: float = 0.0
    thinking: bool = False
    timezone: str | None = None  # None → the machine's local time zone
    # language_COUNTRY: which country's holidays "labour day" or "Mother's Day" mean, and the
    # order of numeric dates in search questions (3/4 = March 4th in en_US, 3 April in en_GB)
    locale: str = "en_US"
    history_token_budget: int = 2000  # `casper chat` keeps this much history verbatim
    me_names: tuple[str, ...] = ()  # the owner's own names: "Kevin" in a question means "me"
    service_idle_minutes: int = 20  # `casper serve` exits after this long without a request
    auto_index: bool = True  # `casper serve` indexes new messages as they arrive in chat.db

    @property
    def store_path(self) -> Path:
        return self.data_dir / "casper.sqlite"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index.lance"

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "index.lock"

    @property
    def chat_history_path(self) -> Path:
        return self.data_dir / "chat_history.json"


def llm_server(url: str, *, allow_remote: bool) -> tuple[str, bool]:
    """(the base URL without a trailing slash, whether its host is this machine) for an
    OpenAI-compatible server, decided from the URL's text alone: no name is looked up and no
    connection is made, so a refusal happens before anything could leave the machine.

    This machine is an IP literal in 127.0.0.0/8 or ::1 (also IPv4-mapped), or `localhost`;
    any other name may resolve anywhere, so it counts as remote. Raises ConfigError for a URL
    that is not http(s) with a host, RemoteLLMRefused for a remote host unless `allow_remote`.
    """
    import ipaddress
    from urllib.parse import urlsplit

    text = url.strip()
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ConfigError(f"the model server URL {url!r} does not parse: {exc}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ConfigError(
            f"the model server URL {url!r} is not an http(s) URL with a host",
            hint="e.g. --base-url http://127.0.0.1:8080/v1 (the server's OpenAI-compatible root)",
        )
    name = host.rstrip(".").lower()
    try:
        address = ipaddress.ip_address(name)
        mapped = getattr(address, "ipv4_mapped", None)
        local = bool((mapped or address).is_loopback)
    except ValueError:
        local = name == "localhost"
    if not local and not allow_remote:
        raise RemoteLLMRefused(
            f"refusing to use the model server at {host}: it is not on this machine, and your "
            "questions and the message text Casper finds would leave this machine",
            hint="run the model server on this Mac (127.0.0.1 or localhost), or set "
            "allow_remote_llm = true in config.toml to send them there (every answer then "
            "says so)",
        )
    return text.rstrip("/"), local


def remember(data_dir: Path, **settings: str | Path) -> None:
    """Save settings in `data_dir/config.toml` (0600), keeping every other line as it was, so
    later runs and `casper doctor` use the same `--chat-db` / `--contacts` without the flags."""
    import json
    import re

    path = data_dir / "config.toml"
    text = read_text(path) if path.exists() else ""
    for key, value in settings.items():
        line = f"{key} = {json.dumps(str(value))}"  # a JSON string is a TOML basic string
        pattern = re.compile(rf"^{re.escape(key)}\s*=.*$", re.M)
        found = pattern.search(text)
        if found:  # spliced in as is: a re.sub template would read the value's backslashes
            text = text[: found.start()] + line + text[found.end() :]
        else:
            text += ("" if not text or text.endswith("\n") else "\n") + line + "\n"
    try:
        tomllib.loads(text)  # never leave a file that the next run cannot read
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot update {path}: {exc}") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def read_text(path: Path) -> str:
    """config.toml's text; ConfigError naming the file, the line and the problem when it can't
    be read (it is the user's own file: never moved aside or rewritten for them)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"cannot read {path}: line {line}, column {column}: not UTF-8 text "
            f"(byte 0x{data[exc.start]:02x})",
            hint=_fix_hint(path),
        ) from None


def _fix_hint(path: Path) -> str:
    return (
        f"correct that line of {path} (settings are `name = value` lines, see docs/cli.md), "
        "or move the file away to use the defaults"
    )


def default_home() -> Path:
    """$CASPER_HOME, else ~/.casper."""
    env = os.environ.get("CASPER_HOME")
    return Path(env).expanduser() if env else Path.home() / ".casper"


def load_config(data_dir: Path | None = None, **overrides: Any) -> Config:
    """Build the Config.

    Args:
        data_dir: overrides $CASPER_HOME (the `--home` flag).
        **overrides: explicit values (CLI flags); None values are ignored.

    Returns:
        The frozen Config: defaults < config.toml < environment paths < overrides.
    """
    home = Path(data_dir).expanduser() if data_dir else default_home()
    values: dict[str, Any] = {}
    toml_path = home / "config.toml"
    if toml_path.exists():
        try:
            values.update(tomllib.loads(read_text(toml_path)))
        except tomllib.TOMLDecodeError as exc:  # its message names the line and column
            raise ConfigError(
                f"cannot read {toml_path}: {exc}", hint=_fix_hint(toml_path)
            ) from None
    if os.environ.get("CASPER_CHAT_DB"):
        values["chat_db"] = os.environ["CASPER_CHAT_DB"]
    if os.environ.get("CASPER_CONTACTS"):
        values["contacts"] = os.environ["CASPER_CONTACTS"]
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    if isinstance(values.get("me_names"), str | list):
        names = values["me_names"]
        values["me_names"] = (names,) if isinstance(names, str) else tuple(names)
    for key in ("chat_db", "contacts"):
        if isinstance(values.get(key), str):
            values[key] = Path(values[key]).expanduser()
    cfg = Config(data_dir=home, **values)
    if cfg.fusion not in FUSIONS:
        raise ConfigError(
            f"unknown fusion {cfg.fusion!r}", hint=f"set fusion to one of {', '.join(FUSIONS)}"
        )
    for key, allowed in (("embed_backend", EMBED_BACKENDS), ("embed_device", EMBED_DEVICES)):
        if getattr(cfg, key) not in allowed:
            raise ConfigError(
                f"unknown {key} {getattr(cfg, key)!r}",
                hint=f"set {key} to one of {', '.join(allowed)} in {toml_path}",
            )
    if cfg.embed_backend == "onnx" and cfg.embed_device == "mps":
        # onnxruntime runs MiniLM on the CPU here; the GPU is torch's (MPS)
        raise ConfigError(
            "embed_backend onnx runs on the CPU, not on embed_device mps",
            hint=f"set embed_backend to torch (or auto) for the GPU in {toml_path}",
        )
    if not 1 <= cfg.chunk_stride <= cfg.chunk_size:
        # windows that step past their own end would leave messages out of every chunk
        raise ConfigError(
            f"chunk_stride {cfg.chunk_stride} must be between 1 and chunk_size {cfg.chunk_size}",
            hint=f"set chunk_stride to at most {cfg.chunk_size} in {toml_path}",
        )
    return cfg
