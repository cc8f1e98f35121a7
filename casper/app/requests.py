"""The requests the handlers answer, checked once: a command name and its arguments (a dict, from
the CLI in this process or from the service socket) → one typed request, or a BadRequest (a
CasperError) with a hint. Every rule about what a user may ask lives here: the handlers trust
what they get, and the Retriever checks only for programming errors.

Each process parses a request once: the CLI before it sends it anywhere (so a mistyped value
never starts the service; typer has already turned `--mode`/`--lexical` into one of their
choices, same names: casper.vocab), then answers the typed request in-process or sends
`wire(request)` to the service, which parses what arrives on its socket (any local process may
write there). A request that came over the socket and is malformed in any way (a wrong type, an
unknown or missing argument, a value out of range) gets the same BadRequest.

Imports: stdlib, casper.errors, casper.vocab (stdlib only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from casper.errors import BadRequest
from casper.vocab import (
    LEXICAL,
    MAX_ITERATIONS,
    MAX_K,
    MODES,
    PRIVACY_MODES,
    STATS_PERIODS,
    Lexical,
    Mode,
    Period,
    Privacy,
)

MAX_CONTEXT = 1_000  # messages before/after one shown by `casper show`
MAX_QUESTION_CHARS = 2_000  # beyond this a question would crowd the evidence out of the prompt
MAX_TEXT_CHARS = 10_000  # a query, a name, a date phrase, a model id
MAX_HISTORY = 100  # earlier turns a `casper chat` session sends along
MAX_ROWID = 2**63 - 1  # SQLite's largest integer: a longer message id names nothing


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    person: str | None = None
    chat: str | None = None
    since: str | None = None
    until: str | None = None
    k: int | None = None  # None: the setting `top_k`
    mode: Mode = "hybrid"
    lexical: Lexical | None = None  # None: the setting `lexical`
    rerank: bool = True
    literal: bool = False


@dataclass(frozen=True, slots=True)
class ContactsRequest:
    pass


@dataclass(frozen=True, slots=True)
class StatsRequest:
    person: str | None = None  # None or "me": the owner overall
    since: str | None = None
    until: str | None = None
    chat: str | None = None  # a chat id or name (--chat)
    period: Period | None = None  # week | month (--by); None: by the range's length


@dataclass(frozen=True, slots=True)
class ShowRequest:
    ref: str
    before: int = 5
    after: int = 5


@dataclass(frozen=True, slots=True)
class AskRequest:
    question: str  # stripped
    model: str | None = None  # None: the setting `llm_model`
    base_url: str | None = None  # None: the setting `llm_base_url` (None there too: MLX)
    max_iterations: int | None = None  # None: the setting `max_iterations`
    no_llm: bool = False
    history: tuple[str, ...] = ()  # notes from earlier turns of a chat session
    # what every search of the answer is kept to, as `search`'s options
    person: str | None = None
    chat: str | None = None
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """One of the agent's five tools called from outside the agent (`casper mcp`): the name and
    the arguments object as the model would send them; the tool checks them itself
    (casper.agent.tools), so both callers get the same validation and caps."""

    name: str
    arguments: Mapping[str, Any]  # JSON values; this module imports only errors and vocab
    # the MCP server's ceiling (`casper mcp --privacy`); the handler keeps the stricter of it
    # and the setting `privacy`, so a request never loosens what config.toml allows
    privacy: Privacy | None = None
    client: str | None = None  # the MCP client's own name, for the service log


Request = SearchRequest | ContactsRequest | StatsRequest | ShowRequest | AskRequest | ToolRequest
R = TypeVar("R", bound=Request)


class _Args:
    """Reads one request's arguments, each at most once, naming the command in every error."""

    def __init__(self, cmd: str, args: Mapping[str, object], known: tuple[str, ...]) -> None:
        self.cmd, self.args = cmd, args
        unknown = sorted(str(name) for name in args if name not in known)
        if unknown:
            takes = ", ".join(known) or "no arguments"
            raise BadRequest(
                f"bad arguments for {cmd}: unknown {', '.join(unknown)}",
                hint=f"{cmd} takes {takes}",
            )

    def _bad(self, name: str, want: str, hint: str | None = None) -> BadRequest:
        got = self.args.get(name)
        return BadRequest(
            f"bad arguments for {self.cmd}: {name} must be {want}, not {_shown(got)}",
            hint=hint or f"see `casper {self.cmd} --help`",
        )

    def text(self, name: str, *, limit: int = MAX_TEXT_CHARS) -> str | None:
        value = self.args.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._bad(name, "a string")
        if len(value) > limit:
            raise BadRequest(
                f"the {name} is {len(value):,} characters long (at most {limit:,})",
                hint=f"see `casper {self.cmd} --help`",
            )
        return _readable(name, value)

    def required(self, name: str, *, example: str, limit: int = MAX_TEXT_CHARS) -> str:
        """A string that must say something: empty or blank is an error, not a match-all."""
        value = self.text(name, limit=limit)
        if value is None or not value.strip():
            raise BadRequest(
                f"the {name} is empty", hint=f"say what you are looking for: {example}"
            )
        return value

    def number(
        self, name: str, flag: str, *, low: int, high: int, hint: str, default: int | None = None
    ) -> int | None:
        value = self.args.get(name, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(name, "a whole number", hint)
        if value < low:
            raise BadRequest(f"{flag} must be at least {low} (got {value})", hint=hint)
        if value > high:
            raise BadRequest(f"{flag} must be at most {high:,} (got {value:,})", hint=hint)
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.args.get(name, default)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def choice(self, name: str, flag: str, choices: tuple[str, ...], default: str | None) -> Any:
        value = self.args.get(name, default)
        if value is None or (isinstance(value, str) and value in choices):
            return value
        raise BadRequest(
            f"{flag} must be one of {', '.join(choices)} (got {_shown(value)})",
            hint=f"e.g. {flag} {choices[0]}",
        )

    def texts(self, name: str, *, most: int) -> tuple[str, ...]:
        value = self.args.get(name) or ()
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise self._bad(name, "a list of strings")
        if len(value) > most:
            raise BadRequest(f"{name} has {len(value)} entries (at most {most})")
        return tuple(_readable(name, v) for v in value)


def _readable(name: str, value: str) -> str:
    """`value` when it is text: bytes that are not UTF-8 (a terminal in another encoding hands
    them over as lone surrogates) or a NUL are refused, never searched for or sent on."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(
            f"the {name} holds bytes that are not UTF-8 text (at character {exc.start + 1})",
            hint="type it again; if it keeps happening, set the terminal's text encoding to UTF-8",
        ) from None
    if "\x00" in value:
        raise BadRequest(f"the {name} holds a NUL character", hint="type it again without it")
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _search(a: _Args) -> SearchRequest:
    return SearchRequest(
        query=a.required("query", example='casper search "dentist appointment"'),
        person=a.text("person"),
        chat=a.text("chat"),
        since=a.text("since"),
        until=a.text("until"),
        k=a.number("k", "-k", low=1, high=MAX_K, hint="e.g. -k 10 for ten hits"),
        mode=a.choice("mode", "--mode", MODES, "hybrid"),
        lexical=a.choice("lexical", "--lexical", LEXICAL, None),
        rerank=a.flag("rerank", True),
        literal=a.flag("literal", False),
    )


def _stats(a: _Args) -> StatsRequest:
    # absent: the owner overall; given, it must say something (blank is not a match-all)
    person = (
        a.required("person", example="casper stats Sam")
        if a.args.get("person") is not None
        else None
    )
    chat = (
        a.required("chat", example="casper stats --chat 7")
        if a.args.get("chat") is not None
        else None
    )
    if person is not None and chat is not None:
        raise BadRequest(
            "name a person or a chat, not both",
            hint='casper stats Sam, or casper stats --chat "Climbing crew"',
        )
    return StatsRequest(
        person,
        since=a.text("since"),
        until=a.text("until"),
        chat=chat,
        period=a.choice("period", "--by", STATS_PERIODS, None),
    )


def _show(a: _Args) -> ShowRequest:
    ref = a.required("ref", example="casper show 1481 (an id from `casper search`)")
    digits = ref.strip().lstrip("#")
    if digits.isdigit() and int(digits) > MAX_ROWID:
        raise BadRequest(
            f"no message has the id {_shown(ref)}: ids are at most {MAX_ROWID:,}",
            hint="take an id from `casper search` (the number after # in front of a message)",
        )
    hint = "the number of messages around it, e.g. --before 5"
    before = a.number("before", "--before", low=0, high=MAX_CONTEXT, hint=hint, default=5)
    after = a.number("after", "--after", low=0, high=MAX_CONTEXT, hint=hint, default=5)
    assert before is not None and after is not None  # defaults
    return ShowRequest(ref, before=before, after=after)


def _ask(a: _Args) -> AskRequest:
    question = a.text("question", limit=1_000_000)  # its own limit below, with its own hint
    if question is None or not question.strip():
        raise BadRequest(
            "the question is empty",
            hint='say what you are looking for: casper ask "when is the dentist?"',
        )
    text = question.strip()
    if len(text) > MAX_QUESTION_CHARS:
        raise BadRequest(
            f"the question is {len(text):,} characters long (at most {MAX_QUESTION_CHARS:,})",
            hint="ask about one thing in a sentence or two; `casper search` takes keywords",
        )
    hint = "each iteration is one model call; the default is 5"
    return AskRequest(
        question=text,
        model=a.text("model"),
        base_url=a.text("base_url", limit=2_000),
        max_iterations=a.number(
            "max_iterations", "--max-iterations", low=1, high=MAX_ITERATIONS, hint=hint
        ),
        no_llm=a.flag("no_llm", False),
        history=a.texts("history", most=MAX_HISTORY),
        person=a.text("person"),
        chat=a.text("chat"),
        since=a.text("since"),
        until=a.text("until"),
    )


def _tool(a: _Args) -> ToolRequest:
    name = a.required("name", example="search_messages", limit=200)
    arguments = a.args.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise a._bad("arguments", "an object of argument names and values")
    given = a.text("privacy", limit=20)
    privacy = next((mode for mode in PRIVACY_MODES if mode == given), None)
    if given is not None and privacy is None:
        raise a._bad("privacy", " or ".join(PRIVACY_MODES))
    client = a.text("client", limit=200)
    return ToolRequest(name.strip(), dict(arguments), privacy, client)


_PARSERS: dict[str, tuple[type[Request], Callable[[_Args], Request]]] = {
    "search": (SearchRequest, _search),
    "contacts": (ContactsRequest, lambda a: ContactsRequest()),
    "stats": (StatsRequest, _stats),
    "show": (ShowRequest, _show),
    "ask": (AskRequest, _ask),
    "tool": (ToolRequest, _tool),
}
COMMANDS = tuple(_PARSERS)


def parse(cmd: object, args: object) -> Request:
    """The typed request for a command name and its arguments; BadRequest (with a hint) for
    an unknown command, an argument that is unknown, missing, of the wrong type or out of
    range."""
    if not isinstance(cmd, str) or cmd not in _PARSERS:
        raise BadRequest(f"unknown command {_shown(cmd)}", hint=f"one of {', '.join(COMMANDS)}")
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise BadRequest(
            f"bad arguments for {cmd}: expected names and values, not {type(args).__name__}",
            hint=f"see `casper {cmd} --help`",
        )
    kind, read = _PARSERS[cmd]
    return read(_Args(cmd, args, tuple(f.name for f in fields(kind))))


def wire(request: Request) -> tuple[str, dict[str, object]]:
    """The command name and arguments `parse` reads back into `request` (what the socket
    carries): every field, tuples as lists."""
    cmd = next(name for name, (kind, _) in _PARSERS.items() if isinstance(request, kind))
    args = {f.name: getattr(request, f.name) for f in fields(request)}
    return cmd, {k: list(v) if isinstance(v, tuple) else v for k, v in args.items()}


def parse_as(kind: type[R], cmd: str, args: Mapping[str, object]) -> R:
    """`parse` for a caller that knows which request it builds (the CLI)."""
    request = parse(cmd, args)
    assert isinstance(request, kind)
    return request
