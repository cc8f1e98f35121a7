"""The progress events a command's work sends while it runs, declared once.

The agent, the handlers and the service's `index` hand-over produce them; the terminal views
(casper.cli), `casper mcp` and the service's socket carry or show them. Through the service each
travels as one JSON frame (casper.service.protocol), exactly as built here, so the dicts stay
plain JSON; the `event` key names the kind, and mypy tells the kinds apart by it.

Imports: stdlib only (the service client imports it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NotRequired, TypeAlias, TypedDict


class StepEvent(TypedDict):
    """A loop model call starts (1-based); `final`: the synthesis pass, tools off."""

    event: Literal["step"]
    iteration: int
    final: NotRequired[bool]


class ToolEvent(TypedDict):
    """A tool call starts; `prefetch`: the search run before the first model call."""

    event: Literal["tool"]
    name: str
    arguments: dict[str, object]
    prefetch: NotRequired[bool]


class ToolDoneEvent(TypedDict):
    """A tool call ended: whether it worked, how long it took, how many messages it showed."""

    event: Literal["tool_done"]
    name: str
    ok: bool
    elapsed_s: float
    messages: int


class TokenEvent(TypedDict):
    """Streamed model text (it may belong to a reply that turns out to be a tool call)."""

    event: Literal["token"]
    text: str


class NoticeEvent(TypedDict):
    """One line for stderr (never `--json`). `key` names the kind, so a view that says it
    another way can skip it (`reranker`)."""

    event: Literal["notice"]
    text: str
    hint: NotRequired[str | None]
    key: NotRequired[str]


class LoadingEvent(TypedDict):
    """A model starts loading (what: the engine's name)."""

    event: Literal["loading"]
    what: str


class ReadAsEvent(TypedDict):
    """How `search` read the query (dates, people), for people; `--json` has `understood`."""

    event: Literal["read_as"]
    text: str


class ProgressEvent(TypedDict):
    """An index run's stage (casper.indexer.run's `progress`); `total` None: it cannot count."""

    event: Literal["progress"]
    stage: str
    done: int
    total: int | None


class HolderJson(TypedDict):
    """casper.indexer.lock.Holder as JSON: who holds the index lock."""

    pid: int
    since: float
    what: str
    background: bool


class WaitingEvent(TypedDict):
    """An index run waits for the index lock (holder None: whoever it is has not said yet)."""

    event: Literal["waiting"]
    holder: HolderJson | None


Event: TypeAlias = (
    StepEvent
    | ToolEvent
    | ToolDoneEvent
    | TokenEvent
    | NoticeEvent
    | LoadingEvent
    | ReadAsEvent
    | ProgressEvent
    | WaitingEvent
)
Emit: TypeAlias = Callable[[Event], None]


def notice(text: str) -> NoticeEvent:
    """The plain notice: one line, no hint."""
    return {"event": "notice", "text": text}


def ignore(_event: Event) -> None:
    """The sink of work nobody watches."""
