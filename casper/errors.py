"""User-facing errors: a message plus a hint the CLI prints. Stdlib only."""

from __future__ import annotations


class CasperError(Exception):
    """An error the user can act on; `cli.py` prints `error:` + `hint:` and exits 1."""

    default_hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint


class IndexMissing(CasperError):
    default_hint = "run `casper index` first"


class IndexMismatch(CasperError):
    default_hint = "run `casper index --rebuild` to rebuild the search index with the current model"


class ModelUnavailable(CasperError):
    default_hint = (
        "download the model once while online (it is cached), or pass --model with a local path; "
        "`--no-llm` answers from search alone"
    )


class RemoteLLMRefused(CasperError):
    """A model server whose host is not this machine, while `allow_remote_llm` is off: refused
    before any connection (casper.config.llm_server)."""


class ModelServerFailed(CasperError):
    """An OpenAI-compatible model server that did not answer as one: unreachable, timed out,
    closed mid-reply, or sent something that is not a chat completion."""

    default_hint = (
        "check that the server runs and serves that model (`casper doctor` asks it); "
        "`--no-llm` answers from search alone"
    )


class BadRequest(CasperError):
    """A command or argument that cannot be answered as asked: an unknown name, a wrong type, a
    value out of range (casper.app.requests checks both the CLI's and the service's)."""


class ConfigError(CasperError):
    default_hint = "check $CASPER_HOME/config.toml"


class AmbiguousPerson(CasperError):
    """A name matched several people; `candidates` lists (id, name)."""

    def __init__(self, query: str, candidates: list[tuple[str, str]]) -> None:
        listed = ", ".join(f"{name} ({pid})" for pid, name in candidates)
        super().__init__(
            f"'{query}' matches {len(candidates)} people: {listed}",
            hint="pass the id or a handle instead of the name",
        )
        self.candidates = candidates


class PersonNotFound(CasperError):
    default_hint = "run `casper contacts` to see names, handles and ids"


class AmbiguousChat(CasperError):
    """A name matched several chats; `candidates` lists (id, name). Every command that takes a
    chat's name says it in these words."""

    def __init__(self, query: str, candidates: list[tuple[int, str]]) -> None:
        listed = ", ".join(f"{name} ({chat_id})" for chat_id, name in candidates)
        example = next((chat_id for chat_id, _name in candidates if chat_id), candidates[0][0])
        super().__init__(
            f"'{query}' matches {len(candidates)} chats: {listed}",
            hint=f"pass the chat id, e.g. --chat {example} (`casper chats` lists them)",
        )
        self.candidates = candidates


class ChatNotFound(CasperError):
    default_hint = "`casper chats` lists every chat with its id"


class StoreBusy(CasperError):
    # not "another index is running" again: what to do about it
    default_hint = (
        "it ends on its own; run the command again once it has (`casper index` picks up "
        "anything it missed)"
    )


class DataDamaged(CasperError):
    """A file Casper wrote into the data dir no longer reads (random bytes, a truncated file, a
    half-copied backup). Everything there but config.toml is rebuilt from chat.db; `path` is the
    file or folder named, so a rebuild can move it aside."""

    default_hint = (
        "run `casper index --rebuild`: it moves the damaged file aside (kept, renamed "
        "*.damaged-<time>) and rebuilds it from chat.db"
    )

    def __init__(self, what: str, path: object, problem: str, hint: str | None = None) -> None:
        super().__init__(f"{what} is damaged: {path} ({problem})", hint=hint)
        self.path = path


class DiskFull(CasperError):
    """A write failed for lack of space (or a file-size limit): nothing half-written is used."""

    default_hint = (
        "free some disk space and run `casper index` again: the previous store and search "
        "index keep serving until it finishes"
    )


class StoreOutdated(CasperError):
    default_hint = (
        "delete casper.sqlite and index.lance in the data dir and run `casper index`: "
        "both are rebuilt from chat.db"
    )
