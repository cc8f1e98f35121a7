"""OpenAIEngine: the concrete Engine over an OpenAI-compatible chat server (Ollama, LM Studio,
llama.cpp's llama-server, mlx_lm.server, vLLM), through the official `openai` client.

Tools go to the server natively (`tools` in the request, `tool_calls` in the reply); a server
that rejects them gets them described in the system prompt instead, with tool turns as text,
exactly as MlxEngine does for a template without tools, and its reply is read by the same
`<tool_call>` parser. Content is always read by that parser too: a server that accepts
`tools` but leaves a call in the text still produces a tool call, and the agent's guards see
malformed ones. Streamed text reaches `on_token` without thinking or tool-call spans.

The host is checked by the factory before this is built (casper.config.llm_server); the HTTP
client here never follows a redirect and ignores proxy settings from the environment, so the
request goes to that host and nowhere else. Nothing connects before the first `chat`.

Imports: casper.protocols, casper.errors, casper.backends.{loading,toolcalls,mlx_engine};
openai inside functions (a heavy library: loaded only when a server is used).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from casper.backends.loading import brief
from casper.backends.mlx_engine import VisibleStream, plain_messages
from casper.backends.toolcalls import reply_from_text, tools_as_text
from casper.errors import ModelServerFailed
from casper.protocols import ChatMessage, JSONValue, Reply, ToolCall, ToolSpec

if TYPE_CHECKING:
    from openai import Stream
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

DescribeTools = Callable[[Sequence[ToolSpec]], str]
CONNECT_S = 5.0  # a server on this machine accepts at once, or it is not running
NO_KEY = "no-key"  # sent as the bearer token when the config names no key
NAME_IT = (
    'name the model: --model NAME, or llm_model = "NAME" in config.toml, and it is not asked '
    "(mlx_lm.server calls the model it was started with default_model)"
)


@dataclass
class _Calls:
    """Tool calls arriving in pieces (name and arguments streamed per index)."""

    parts: dict[int, dict[str, str]] = field(default_factory=dict)

    def add(self, delta: ChoiceDeltaToolCall) -> None:
        index = getattr(delta, "index", None)
        slot = self.parts.setdefault(
            index if isinstance(index, int) else len(self.parts),
            {"id": "", "name": "", "arguments": ""},
        )
        slot["id"] = getattr(delta, "id", None) or slot["id"]
        function = getattr(delta, "function", None)
        if function is not None:
            slot["name"] += getattr(function, "name", None) or ""
            slot["arguments"] += getattr(function, "arguments", None) or ""

    def calls(self) -> tuple[list[ToolCall], list[str]]:
        """(calls, malformed raw calls): arguments that are not a JSON object are malformed."""
        calls: list[ToolCall] = []
        malformed: list[str] = []
        for _, slot in sorted(self.parts.items()):
            raw = slot["arguments"].strip()
            try:
                args = json.loads(raw) if raw else {}
            except ValueError:
                args = None
            if not slot["name"].strip() or not isinstance(args, dict):
                malformed.append(json.dumps({"name": slot["name"], "arguments": raw}))
                continue
            calls.append(ToolCall(slot["name"].strip(), args, slot["id"]))
        return calls, malformed


class OpenAIEngine:
    """Engine over an OpenAI-compatible `/chat/completions` endpoint, streamed.

    `model` None: the server's only model (asked once, from `/models`); a server that lists
    none or several needs it named. `api_key` is sent as a bearer token when given (read by
    the caller from the environment variable the config names; never kept anywhere else).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None,
        *,
        api_key: str | None = None,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        thinking: bool = False,
        timeout_s: float = 60.0,
        first_token_timeout_s: float | None = None,
        describe_tools: DescribeTools = tools_as_text,
    ) -> None:
        import openai

        # httpx2 logs every request line at INFO: the service's log keeps to commands and times
        logging.getLogger("httpx2").setLevel(logging.WARNING)
        self.base_url = base_url
        self.model = model
        self.name = model or "the server's model"
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.thinking = thinking
        self.timeout_s = timeout_s
        # a local server reads the whole prompt before its first token (53–78 s for a 135M
        # model on a laptop): that wait has its own, longer limit; None: timeout_s
        self.first_token_timeout_s = first_token_timeout_s
        self._describe_tools = describe_tools
        # None until a request with tools shows whether the server takes them
        self.native_tools: bool | None = None
        http = openai.DefaultHttpxClient(
            # a redirect could resend the message text to another host; proxies from the
            # environment would carry it through a third one
            follow_redirects=False,
            trust_env=False,
            timeout=openai.Timeout(
                max(timeout_s, first_token_timeout_s or 0), connect=min(CONNECT_S, timeout_s)
            ),
        )
        # `api_key` always given: the library would otherwise read OPENAI_API_KEY, a key meant
        # for another service, and send it here; local servers without keys ignore the word
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or NO_KEY,
            max_retries=0,  # a failure is said at once, not after resending the messages
            http_client=http,
        )

    # ---- the Engine protocol -------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        """One streamed completion; raises ModelServerFailed when the server fails."""
        import openai

        model = self.model or self._only_model()
        native = bool(tools) and self.native_tools is not False
        try:
            reply = self._complete(model, messages, tools, native, on_token)
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if not native:
                raise self._failure(type(exc), exc) from None
            # the server refused the request with `tools`: describe them in the prompt instead
            self.native_tools = False
            again = self._complete(model, messages, tools, False, on_token)
            return replace(again, requests=2)  # both requests reached the server
        if native:
            self.native_tools = True
        return reply

    def check(self) -> str:
        """Whether the server answers and what it says it serves, for `casper doctor` (one
        GET of `/models`: no message text). Raises ModelServerFailed when it does not answer;
        a server that answers but lists its models badly still answers."""
        import openai

        try:
            listed = self._listed_models()
        except openai.APIConnectionError as exc:  # refused, unreachable, timed out
            raise self._failure(type(exc), exc) from None
        except openai.APIStatusError as exc:
            return f"answers (its model list: HTTP {exc.status_code})"
        except Exception as exc:  # noqa: BLE001 - it answered, with something unreadable
            return f"answers (its model list does not read: {type(exc).__name__})"
        if not listed:
            return "answers (lists no models)"
        shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
        return f"answers, serving {shown}"

    # ---- one request -----------------------------------------------------------------------
    def _complete(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        native: bool,
        on_token: Callable[[str], None] | None,
    ) -> Reply:
        import openai

        wire: Sequence[Mapping[str, JSONValue]]
        if native:
            wire = wire_messages(messages)
        else:
            wire = plain_messages(messages, self._describe_tools(tools) if tools else "")
        request: dict[str, Any] = {
            "model": model,
            "messages": wire,
            "max_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
            # Qwen-style templates read it (mlx_lm.server, vLLM, llama-server); others ignore it
            "extra_body": {"chat_template_kwargs": {"enable_thinking": self.thinking}},
        }
        if native:
            request["tools"] = [spec.to_openai() for spec in tools]
        visible = VisibleStream(on_token)
        parts: list[str] = []
        calls = _Calls()
        finish: str | None = None
        usage, chunks = None, 0
        started = time.perf_counter()
        first: float | None = None
        stream: Stream[ChatCompletionChunk] | None = None
        try:
            stream = self._client.chat.completions.create(**request)
            for chunk in _chunks(stream):
                chunks += 1
                usage = getattr(chunk, "usage", None) or usage
                for choice in chunk.choices or ():
                    delta = choice.delta
                    text = getattr(delta, "content", None) or ""
                    pieces = getattr(delta, "tool_calls", None) or ()
                    if (text or pieces) and first is None:
                        first = time.perf_counter()
                    if text:
                        parts.append(text)
                        visible.feed(text)
                    for piece in pieces:
                        calls.add(piece)
                    finish = choice.finish_reason or finish
                if len(parts) > self.max_new_tokens and finish is None:
                    # a server that ignores max_tokens is cut here: each streamed piece is
                    # at least one token, so the reply stops at the cap whatever it does
                    finish = "length"
                    break
        except (openai.BadRequestError, openai.UnprocessableEntityError):
            raise  # the caller may retry without native tools
        except ModelServerFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the server did, one clear error
            raise self._failure(type(exc), exc, first_token=first is None) from None
        finally:
            if stream is not None:
                stream.close()  # a reply broken off leaves no connection half-read
        ended = time.perf_counter()
        visible.close()
        if chunks and finish is None:
            # a server speaking HTTP/1.0 ends the stream by closing the connection, so a
            # server that died mid-reply looks like a short reply: only the finish says not
            raise ModelServerFailed(
                f"the model server at {self.base_url} broke off mid-reply (the stream ended "
                "without a finish reason)"
            )
        if chunks == 0:
            raise ModelServerFailed(
                f"the model server at {self.base_url} sent no chat completion (an empty or "
                "non-streamed reply)",
                hint="check that the URL is the server's OpenAI-compatible root (it usually "
                "ends in /v1)",
            )
        native_calls, bad_calls = calls.calls()
        reply = reply_from_text(
            "".join(parts),
            tools,
            finish_reason=finish or "stop",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            prompt_s=(first or ended) - started,
            generation_s=ended - first if first is not None else 0.0,
        )
        if native_calls or bad_calls:
            reply = replace(
                reply,
                tool_calls=tuple(native_calls) + reply.tool_calls,
                malformed=tuple(bad_calls) + reply.malformed,
            )
        return reply

    # ---- the model's name --------------------------------------------------------------------
    def _only_model(self) -> str:
        try:
            listed = self._listed_models()
        except Exception as exc:  # noqa: BLE001 - mapped to one user-facing error
            raise self._models_failure(exc) from None
        if len(listed) == 1:
            self.model = self.name = listed[0]
            return listed[0]
        said = f"it serves {', '.join(listed[:8])}" if listed else "it lists no models"
        raise ModelServerFailed(
            f"which model should the server at {self.base_url} use? {said}", hint=NAME_IT
        )

    def _models_failure(self, exc: BaseException) -> ModelServerFailed:
        """Asking the server which model it serves failed: the request that did, and what it
        answered (mlx_lm.server answers GET /v1/models with a 200 and no body when it cannot
        scan the Hugging Face cache); naming the model skips the request."""
        import openai

        if isinstance(exc, openai.APIConnectionError | openai.APITimeoutError):
            return self._failure(type(exc), exc)  # nothing answered: not about this request
        call = f"GET {urlsplit(self.base_url).path.rstrip('/')}/models"
        if isinstance(exc, openai.APIStatusError):
            said = f"answered HTTP {exc.status_code}"
        else:
            cause = exc if isinstance(exc, ValueError) else exc.__cause__
            empty = isinstance(cause, json.JSONDecodeError) and not cause.doc.strip()
            said = "answered with an empty body" if empty else "answered with no model list"
        return ModelServerFailed(
            f"the model server at {self.base_url} failed {call}: it {said}", hint=NAME_IT
        )

    def _listed_models(self) -> list[str]:
        return sorted({m.id for m in self._client.models.list() if getattr(m, "id", None)})

    def _failure(
        self, kind: type[BaseException], exc: BaseException | None, *, first_token: bool = False
    ) -> ModelServerFailed:
        """One user-facing error for anything the server (or the way to it) did;
        `first_token`: it failed before the reply's first token."""
        import openai

        where = f"the model server at {self.base_url}"
        timed_out = isinstance(exc, openai.APITimeoutError) or "Timeout" in kind.__name__
        if timed_out and first_token and self.first_token_timeout_s is not None:
            return ModelServerFailed(
                f"{where} sent no first token in {self.first_token_timeout_s:g} s",
                hint="it may still be loading the model or reading a long prompt; raise "
                "llm_first_token_timeout_s in config.toml to wait longer",
            )
        if timed_out:
            return ModelServerFailed(
                f"{where} said nothing for {self.timeout_s:g} s",
                hint="it may still be loading the model or be too busy; raise llm_timeout_s in "
                "config.toml to wait longer",
            )
        if isinstance(exc, openai.APIConnectionError) and "onnect" in type(exc.__cause__).__name__:
            return ModelServerFailed(
                f"cannot connect to {where}",
                hint="start the server (e.g. `mlx_lm.server --model …`, `ollama serve`) or "
                "check the port in --base-url / llm_base_url",
            )
        if isinstance(exc, openai.APIStatusError):
            detail = brief(str(getattr(exc, "message", "") or ""), 160)
            said = f"{where} answered HTTP {exc.status_code}" + (f": {detail}" if detail else "")
            if exc.status_code in (401, 403):
                return ModelServerFailed(
                    said,
                    hint="if it wants an API key, set llm_api_key_env in config.toml to the "
                    "name of the environment variable that holds it",
                )
            if exc.status_code == 404:
                return ModelServerFailed(
                    said,
                    hint="check the model name (--model) and that the URL is the server's "
                    "OpenAI-compatible root (it usually ends in /v1)",
                )
            return ModelServerFailed(said)
        cause = exc.__cause__ if exc is not None and exc.__cause__ is not None else exc
        name = type(cause).__name__ if cause is not None else kind.__name__
        return ModelServerFailed(
            f"{where} broke off or sent something that is not a chat completion ({name})"
        )


def _chunks(stream: Iterable[ChatCompletionChunk]) -> Iterator[ChatCompletionChunk]:
    """The stream's chunks; a chunk that is not an object is the server's fault."""
    for chunk in stream:
        if not hasattr(chunk, "choices"):
            raise ValueError("not a chat completion chunk")
        yield chunk


def wire_messages(messages: Sequence[ChatMessage]) -> list[dict[str, JSONValue]]:
    """Messages in the chat completions shape: tool calls with string arguments and ids, each
    tool result answering its call by id (in the order the calls were made)."""
    out: list[dict[str, JSONValue]] = []
    waiting: list[str] = []  # ids of calls whose results have not come yet
    for turn, message in enumerate(messages):
        entry: dict[str, JSONValue] = {"role": message.role, "content": message.content}
        if message.role == "tool":
            entry["tool_call_id"] = waiting.pop(0) if waiting else f"call_{turn}"
            if message.name:
                entry["name"] = message.name
            out.append(entry)
            continue
        if message.tool_calls:
            ids = [c.id or f"call_{turn}_{i}" for i, c in enumerate(message.tool_calls)]
            entry["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                }
                for call_id, c in zip(ids, message.tool_calls, strict=True)
            ]
            waiting = ids
        out.append(entry)
    return out
