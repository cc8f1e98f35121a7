"""The three model Protocols (Engine, Embedder, Reranker) and the value types they exchange.

Imports: stdlib and numpy only. Adapters live in `casper.backends`; fakes in `tests/fakes.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

# a value as json.loads gives it; arrays and objects are only read, so any sequence or mapping
JSONValue = str | int | float | bool | None | Sequence["JSONValue"] | Mapping[str, "JSONValue"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: Mapping[str, JSONValue]

    def to_openai(self) -> dict[str, JSONValue]:
        """The `{"type": "function", ...}` shape chat templates expect."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: Mapping[str, JSONValue]
    id: str = ""


@dataclass(frozen=True, slots=True)
class ToolResult:
    call: ToolCall
    ok: bool
    text: str
    # guids of messages this result showed the model: candidates for citations
    message_guids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    name: str | None = None  # tool name, for role == "tool"


@dataclass(frozen=True, slots=True)
class Reply:
    """What one model call produced, already parsed."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    malformed: tuple[str, ...] = ()  # raw tool-call segments that could not be parsed
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # requests the engine sent for this reply (a model server asked again without native
    # tools: 2); what "model calls" counts
    requests: int = field(default=1, compare=False)
    # the engine's own timings (mlx-lm's prompt_tps / generation_tps turned into seconds)
    # (not compared: two identical replies may take different times)
    prompt_s: float = field(default=0.0, compare=False)  # reading the prompt: to the first token
    generation_s: float = field(default=0.0, compare=False)  # writing the reply


class Engine(Protocol):
    """A chat model that may call tools."""

    name: str

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        """Run one model call.

        Args:
            messages: the conversation so far, system prompt first.
            tools: tools the model may call now; empty means answer in text.
            on_token: receives text as it is generated (for streaming).

        Returns:
            The parsed reply; malformed tool calls are reported in `Reply.malformed`.
        """
        ...


class Embedder(Protocol):
    """Turns text into L2-normalised vectors."""

    name: str

    @property
    def dim(self) -> int:
        """Vector width; read-only (a lazy embedder knows it before or by loading the model)."""
        ...

    def embed_documents(
        self, texts: Sequence[str], on_progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float32]:
        """Embed passages. Returns an (n, dim) float32 array, rows L2-normalised.

        `on_progress(done, total)` may be called as slices finish (for index progress bars).
        """
        ...

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed a query (models may prefix queries differently). Returns shape (dim,)."""
        ...


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant."""

    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Score each text against the query. Returns scores aligned with `texts`."""
        ...


@dataclass(frozen=True, slots=True)
class HitMessage:
    rowid: int
    guid: str
    ts: float  # UTC epoch seconds
    sender: str  # "me" or a display name
    text: str


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved chunk with its messages in chronological order."""

    chunk_id: str
    chat: str
    score: float
    start: float
    end: float
    participants: tuple[str, ...]
    messages: tuple[HitMessage, ...] = field(default_factory=tuple)
