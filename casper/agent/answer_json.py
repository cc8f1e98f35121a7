"""An answer as `ask --json` prints it: the agent's part of the document, declared once.

`Answer` is what `casper.agent.answer.Asked.to_dict` makes; `casper.app.documents.AskDoc`
extends it with what the request ran, so the producer and every renderer read the same keys.
Kept apart from `answer` (which imports the store and the tools) so the documents module can
build on it cheaply.

Imports: stdlib only.
"""

from __future__ import annotations

from typing import TypeAlias, TypedDict

from casper.vocab import Grounding

# What an answer rests on: cited (the model cited messages it was shown), stats, abstained (the
# model said it found nothing), exempt (small talk) — the kinds casper.agent.core finishes
# with — and what the answer around the loop says instead: search_only (no model: the messages
# search found), fallback (the model's reply was not used: the cited lines of what its tools
# showed), nothing_found.
AnswerGrounding: TypeAlias = Grounding  # casper.vocab: the one list of these words


class Citation(TypedDict):
    """A cited message of `ask --json` and of an MCP tool's result, in the words every message
    is printed with (`id`, `time`, `sender`, `text`, `chat`)."""

    id: int  # Casper's message id: `casper show ID`, `get_conversation_context`
    guid: str
    time: str | None  # local, with its UTC offset
    sender: str
    text: str
    chat: str  # the chat's name, as `casper chats` prints it
    rowid: int  # deprecated: `id`, kept one release
    ts: str | None  # deprecated: `time`, kept one release


class ToolCallJson(TypedDict):
    name: str
    arguments: dict[str, object]
    ok: bool
    prefetch: bool  # run before the first model call (the search the question implies)


class Tokens(TypedDict):
    prompt: int
    completion: int


class UsageJson(TypedDict):
    """`usage` in `ask --json` (casper.agent.loop.Usage)."""

    prompt_tokens: int
    completion_tokens: int
    tokens_per_s: float
    first_token_s: float
    model_s: float
    tools_s: float
    iterations: int
    model_calls: int


class Answer(TypedDict):
    """`ask --json` as the agent makes it (casper.app.documents.AskDoc adds what the request
    ran)."""

    answer: str
    citations: list[Citation]
    iterations: int
    tool_calls: list[ToolCallJson]
    guards: list[str]
    model: str | None
    tokens: Tokens
    elapsed_s: float
    load_s: float
    usage: UsageJson
    grounding: AnswerGrounding
    invalid_citations: int
    notices: list[str]
    misattributed_citations: list[int]
