"""Frozen settings and `load_config`: defaults < $CASPER_HOME/config.toml < explicit overrides.

Imports: stdlib, casper.datadir (stdlib only). Only `load_config` reads the environment.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import os
import re
import stat
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from casper.datadir import not_yours
from casper.errors import ConfigError, RemoteLLMRefused
from casper.setting_values import Accepts, accepted_words, checked, kind_of, refused, setting
from casper.vocab import MAX_ITERATIONS, MAX_K, Fusion, Lexical, Privacy

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
# Where the embedder runs (casper/backends/placement.py): the library, and the device under it.
EmbedBackend = Literal["auto", "torch", "onnx"]
EmbedDevice = Literal["auto", "cpu", "mps"]


def _zone_problem(name: str) -> str | None:
    # zoneinfo (and json in `remember`) here: `casper --version` and the thin path load neither
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return "unknown time zone"
    return None


def _locale_problem(name: str) -> str | None:
    return None if re.fullmatch(r"[A-Za-z]{2,3}([_-][A-Za-z]{2,3})?(\.[\w-]+)?", name) else "?"


def _url_problem(url: str) -> str | None:
    try:
        llm_server(url, allow_remote=True)  # where it is, is checked when it is used
    except ConfigError:
        return "not an http(s) URL with a host"
    return None


def _env_name_problem(name: str) -> str | None:
    return None if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "not a variable name"


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Immutable settings; each field's accepted type is its annotation (a set of words is a
    `Literal`), and its range and a one-line description are declared beside it (`setting`).
    `load_config` checks every value it is given against them, once, naming the file and the
    key."""

    data_dir: Path
    # resolved when a Config is built (not at import), so the default follows $HOME
    chat_db: Path = setting(
        factory=lambda: Path.home() / "Library/Messages/chat.db",
        doc="the Messages database, opened read-only (`casper index --chat-db` saves it here)",
    )
    contacts: Path | None = setting(
        factory=lambda: Path.home() / "Library/Application Support/AddressBook",
        doc="the AddressBook: a `.abcddb` file or the folder with `Sources/*/` (`--contacts`)",
    )
    # unset with `llm_base_url`: the server's only model; mlx_lm.server calls its own
    # "default_model"
    llm_model: str = setting(
        DEFAULT_LLM,
        at_least=1,
        doc="the chat model: an MLX hub id or local folder; with `llm_base_url`, the server's name",
    )
    # http(s) only, and a host on this machine (127.0.0.0/8, ::1, localhost) unless
    # `allow_remote_llm` (checked by `llm_server`, before any connection)
    llm_base_url: str | None = setting(
        None,
        valid=_url_problem,
        words='an http(s) URL with a host, e.g. "http://127.0.0.1:8080/v1"',
        doc="an OpenAI-compatible server on this machine, answering instead of MLX (`--base-url`)",
    )
    # the key itself is never written to config.toml, a log or a document
    llm_api_key_env: str | None = setting(
        None,
        valid=_env_name_problem,
        words='an environment variable\'s name ("OPENAI_API_KEY")',
        secret=True,
        doc="the NAME of the environment variable that holds the model server's API key",
    )
    allow_remote_llm: bool = setting(
        False, doc="let `llm_base_url` be on another machine (every answer then says so)"
    )
    llm_timeout_s: float = setting(
        60.0,
        at_least=0.1,
        at_most=3600,
        doc="seconds the model server may stay silent (connecting, between tokens)",
    )
    # it reads the whole prompt first: a 135M model on a laptop took 53–78 s
    llm_first_token_timeout_s: float = setting(
        240.0, at_least=1, at_most=3600, doc="seconds the model server may take to its first token"
    )
    # the stream is cut there if the server ignores it: at a laptop's 3–4 tokens/s, about two
    # minutes
    llm_max_tokens: int = setting(
        384,
        at_least=16,
        at_most=32_768,
        doc="tokens a model server may write per reply (sent as max_tokens)",
    )
    embed_model: str = setting(
        BUNDLED_EMBEDDER,
        at_least=1,
        doc="the sentence-transformers model for vectors; the default is bundled",
    )
    # None → no rerank (a Python caller's value: TOML has no null)
    rerank_model: str | None = setting(
        DEFAULT_RERANKER, doc="the cross-encoder that reranks search hits"
    )
    rerank: bool = setting(True, doc="rerank search hits (`search --no-rerank` for one search)")
    lexical: Lexical = setting(
        "lancedb",
        doc="the word index: LanceDB full-text search or rank-bm25 in memory (`search --lexical`)",
    )
    candidates: int = setting(
        50, at_least=1, at_most=1000, doc="hits each search leg hands to fusion"
    )
    # adaptive is opt-in: it lost texting with the typed and event-date legs
    # (docs/retrieval.md); casper/search/fusion.py
    fusion: Fusion = setting(
        "convex",
        doc="how the search legs are fused: fixed weights (convex), weights moved per query by "
        "how sure each leg is (adaptive), or reciprocal rank (rrf)",
    )
    top_k: int = setting(8, at_least=1, at_most=MAX_K, doc="hits a search returns (`search -k`)")
    chunk_size: int = setting(
        CHUNK_SIZE, at_least=1, at_most=100, doc="messages per indexed passage"
    )
    chunk_stride: int = setting(
        CHUNK_STRIDE,
        at_least=1,
        at_most=100,
        doc="messages the next passage starts after the last one (at most `chunk_size`)",
    )
    # opt-in: it gains message R@10 on every set but loses two REALTALK cells to a single leg
    # (docs/retrieval.md#messages-alone-beside-the-windows); changing it needs `index --rebuild`
    messages_alone: bool = setting(
        False,
        doc="index each message alone beside the passages too, and rank messages by both "
        "(`casper index --rebuild` after changing it)",
    )
    named_day_after: int = setting(
        0,
        at_least=0,
        at_most=7,
        doc="days after a day the question names that rank with it (people answer the next "
        "day); `--since`/`--until` stay exact",
    )
    chunk_gap_s: float = setting(
        CHUNK_GAP_S, at_least=0, doc="seconds of silence that start a new passage"
    )
    chunk_max_chars: int = setting(
        CHUNK_MAX_CHARS, at_least=100, at_most=100_000, doc="the longest passage, in characters"
    )
    embed_batch: int = setting(
        64, at_least=1, at_most=4096, doc="passages embedded per batch while indexing"
    )
    # onnx only when it reproduces torch's vectors (docs/performance.md#embedding-backends),
    # else torch on the CPU
    embed_backend: EmbedBackend = setting(
        "auto",
        doc="what computes the vectors: auto (torch on the Apple GPU, else onnxruntime on the "
        "CPU), torch or onnx",
    )
    # onnx runs on the CPU only
    embed_device: EmbedDevice = setting(
        "auto",
        doc="the embedder's device: auto (the Apple GPU, mps, when there is one), cpu or mps",
    )
    # nudged retries count; synthesis is +1
    max_iterations: int = setting(
        5,
        at_least=1,
        at_most=MAX_ITERATIONS,
        doc="model calls in the agent's tool loop (`ask --max-iterations`)",
    )
    max_new_tokens: int = setting(
        512, at_least=1, at_most=32_768, doc="tokens the MLX chat model may write per reply"
    )
    temperature: float = setting(
        0.0,
        at_least=0,
        at_most=2,
        doc="the chat model's sampling temperature (0: always the likeliest token)",
    )
    thinking: bool = setting(False, doc="let the chat model think before it answers")
    timezone: str | None = setting(
        None,
        valid=_zone_problem,
        words='an IANA time zone name such as "Europe/London"',
        doc="the zone of every local day and hour (unset: $TZ, else the machine's)",
    )
    # e.g. 3/4 = March 4th in en_US, 3 April in en_GB
    locale: str = setting(
        "en_US",
        valid=_locale_problem,
        words='language_COUNTRY, e.g. "en_GB"',
        doc="the country whose holidays date phrases mean; day-first or month-first numeric dates",
    )
    history_token_budget: int = setting(
        2000,
        at_least=0,
        at_most=1_000_000,
        doc="tokens of earlier turns `casper chat` keeps verbatim",
    )
    me_names: tuple[str, ...] = setting((), doc='your own names: "Kevin" in a question means "me"')
    service_idle_minutes: float = setting(
        20,
        at_least=0,
        at_most=60 * 24 * 365,
        doc="minutes without a request before `casper serve` exits (0: never)",
    )
    auto_index: bool = setting(
        True, doc="the running service indexes new messages as they arrive in chat.db"
    )
    # redacted masks phones, emails, URLs, long numbers and street addresses; aggregate shows
    # counts, ids, dates and senders. `casper mcp --privacy` can only make it stricter
    # (casper/agent/ceiling.py)
    privacy: Privacy = setting(
        "full",
        doc="the most an MCP client or a model server on another machine is shown of the messages",
    )
    # people by any name on their card, chats as "chat:" + the chat's name, handles as a phone
    # or email (casper/indexer/exclude.py)
    exclude: tuple[str, ...] = setting(
        (), doc="people, chats and handles kept out of the index, the stats and every tool"
    )

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
    # as written: `localhost.` and `127.0.0.1.` are names a resolver looks up (past
    # /etc/hosts, on the network's DNS), so they may resolve anywhere
    name = host.lower()
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
    be read (it is the user's own file: never moved aside or rewritten for them), or when
    another user could have written it: it says where questions and messages may be sent
    (`llm_base_url`, `allow_remote_llm`), how much an MCP client sees and who is kept out."""
    steered = _writable_by_others(path)
    if steered is not None:
        raise ConfigError(f"cannot use {path}: it {steered}",
                          hint=f"check what it says, then make it yours alone "
                          f"(`chown $USER {path}; chmod 600 {path}`)")  # fmt: skip
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


def _writable_by_others(path: Path) -> str | None:
    """Why another user could have written `path` (it, or the link to it, is another user's;
    anyone may write it), or None. Root's files are trusted, as ssh trusts them."""
    me = os.getuid()
    try:
        held = [os.lstat(path), os.stat(path)]
    except OSError:
        return None  # not there, or unreadable: reading it says what is wrong
    for st in held:
        if st.st_uid not in (me, 0):
            return f"belongs to uid {st.st_uid}, not to you (uid {me})"
    if held[1].st_mode & stat.S_IWOTH:
        return f"can be written by any user (mode {stat.S_IMODE(held[1].st_mode):o})"
    return None


def _fix_hint(path: Path) -> str:
    return (
        f"correct that line of {path} (settings are `name = value` lines, see docs/cli.md), "
        "or move the file away to use the defaults"
    )


def default_home() -> Path:
    """$CASPER_HOME, else ~/.casper."""
    env = os.environ.get("CASPER_HOME")
    return Path(env).expanduser() if env else Path.home() / ".casper"


def load_config(data_dir: Path | None = None, **overrides: object) -> Config:
    """Build the Config.

    Args:
        data_dir: overrides $CASPER_HOME (the `--home` flag).
        **overrides: explicit values (CLI flags); None values are ignored.

    Returns:
        The frozen Config: defaults < config.toml < environment paths < overrides.

    Raises:
        ConfigError: config.toml does not read, or a value is not what its setting accepts
            (naming the file or flag, the key and what is accepted).
    """
    cfg, problems = checked_config(data_dir, **overrides)
    if problems:
        raise problems[0]
    return cfg


def checked_config(
    data_dir: Path | None = None, **overrides: object
) -> tuple[Config, list[ConfigError]]:
    """The Config with every value that is not accepted left at its default, and what was
    wrong with each (`casper doctor` shows them all and goes on with the rest)."""
    home = Path(data_dir).expanduser() if data_dir else default_home()
    toml_path = home / "config.toml"
    problems: list[ConfigError] = []
    not_a_folder = _file_in_the_way(home)
    if not_a_folder is not None:
        return Config(data_dir=home), [not_a_folder]
    theirs = not_yours(home)  # its settings, store and index are theirs to write: none is read
    if theirs is not None:
        mine = "use a data dir of your own (--home, $CASPER_HOME)"
        return Config(data_dir=home), [ConfigError(f"the data dir {home} {theirs}", hint=mine)]
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    try:
        if toml_path.is_file() or (toml_path.exists() and not toml_path.is_dir()):
            values.update(_read_toml(toml_path))
        elif toml_path.exists():
            raise ConfigError(f"cannot read {toml_path}: it is a directory",
                              hint=f"move {toml_path} away (settings are a file)")  # fmt: skip
    except ConfigError as exc:
        problems.append(exc)
    where.update(dict.fromkeys(values, str(toml_path)))
    for key, env in (("chat_db", "CASPER_CHAT_DB"), ("contacts", "CASPER_CONTACTS")):
        if os.environ.get(env):
            values[key], where[key] = os.environ[env], f"${env}"
    given = {k: v for k, v in overrides.items() if v is not None}
    values.update(given)
    where.update(dict.fromkeys(given, "the command line"))
    fields = {f.name: f for f in dataclasses.fields(Config) if f.name != "data_dir"}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        names = ", ".join(f"{k} (in {where[k]})" for k in unknown)
        problems.append(ConfigError(f"unknown setting(s): {names}",
                                    hint="settings are listed in docs/cli.md"))  # fmt: skip
    types = _field_types()
    accepted: dict[str, Any] = {}
    for key in sorted(set(values) & set(fields)):
        value, problem = checked(key, values[key], types[key], fields[key])
        if problem is None:
            accepted[key] = value
        else:
            problems.append(refused(key, values[key], problem, where[key], fields[key]))
    stride, size = (accepted.get(k, fields[k].default) for k in ("chunk_stride", "chunk_size"))
    if stride > size:
        # windows that step past their own end would leave messages out of every chunk
        problems.append(ConfigError(
            f"chunk_stride {stride} must be between 1 and chunk_size {size}",
            hint=f"set chunk_stride to at most {size} in {toml_path}",
        ))  # fmt: skip
        accepted.pop("chunk_stride", None)
        accepted.pop("chunk_size", None)
    backend, device = (
        accepted.get(k, fields[k].default) for k in ("embed_backend", "embed_device")
    )
    if backend == "onnx" and device == "mps":
        # onnxruntime runs MiniLM on the CPU here; the GPU is torch's (MPS)
        problems.append(ConfigError(
            "embed_backend onnx runs on the CPU, not on embed_device mps",
            hint=f"set embed_backend to torch (or auto) for the GPU in {toml_path}",
        ))  # fmt: skip
        accepted.pop("embed_backend", None)
        accepted.pop("embed_device", None)
    return Config(data_dir=home, **accepted), problems


def _file_in_the_way(home: Path) -> ConfigError | None:
    """The data dir, or a folder above it, is a file: nothing can be kept there."""
    for place in (home, *home.parents):
        if place.exists() or place.is_symlink():
            if place.is_dir():
                return None
            where = "is a file" if place == home else f"is under {place}, which is a file"
            return ConfigError(
                f"the data dir {home} {where}, not a folder",
                hint="give --home (or $CASPER_HOME) a folder; it is created when missing "
                "(the default is ~/.casper)",
            )
    return None


@functools.cache
def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(Config)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:  # its message names the line and column
        raise ConfigError(f"cannot read {path}: {exc}", hint=_fix_hint(path)) from None


def takes(key: str) -> str:
    """What the setting `key` accepts, in the words a refused value is told (docs/cli.md's
    settings table is generated with them)."""
    spec = next(f for f in dataclasses.fields(Config) if f.name == key)
    return accepted_words(kind_of(_field_types()[key]), spec.metadata.get("accepts", Accepts()))
