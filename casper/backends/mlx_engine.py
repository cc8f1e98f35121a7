"""MlxEngine: the concrete Engine over mlx-lm (Qwen chat templates, streamed, tool calls parsed).

Imports: casper.protocols, casper.errors, casper.backends.{loading,toolcalls}; mlx_lm inside
the methods (a heavy library: loaded with the model, on the first chat).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from casper.backends.loading import hub_offline, load_failure, local_model_path, not_cached
from casper.backends.toolcalls import (
    CALL_END,
    CALL_START,
    THINK_END,
    THINK_START,
    SegmentParser,
    library_parsers,
    parser_format,
    reply_from_text,
    tools_as_text,
)
from casper.errors import ModelUnavailable
from casper.protocols import ChatMessage, JSONValue, Reply, ToolCall, ToolSpec

if TYPE_CHECKING:
    from mlx_lm.tokenizer_utils import TokenizerWrapper

DescribeTools = Callable[[Sequence[ToolSpec]], str]


class MlxEngine:
    """Engine over an MLX chat model: a hub id (cached) or a local directory.

    Templates that render `tools` get them natively; otherwise `describe_tools` (default
    `toolcalls.tools_as_text`) writes them into the system prompt, and tool turns are rendered
    as plain text in the same `<tool_call>` / `<tool_response>` shape.
    """

    def __init__(
        self,
        model: str,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        thinking: bool = False,
        describe_tools: DescribeTools = tools_as_text,
    ) -> None:
        self.name = model
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.thinking = thinking
        self._describe_tools = describe_tools
        local_model_path(model)  # a missing folder is its own error, before any loading
        missing = not_cached("language model", model)
        if missing is not None:
            raise missing
        try:
            from mlx_lm import load

            # typed as maybe (model, tokenizer, config): the config comes only with return_config
            self._model, self._tokenizer, *_ = load(_resolve(model))
        except Exception as exc:  # any load failure is a user-facing ModelUnavailable
            raise load_failure("language model", model, exc) from exc
        if not self._tokenizer.has_chat_template:
            raise ModelUnavailable(
                f"{model} has no chat template", hint="use an instruct/chat build of the model"
            )
        template = str(getattr(self._tokenizer, "chat_template", "") or "")
        self.native_tools: bool = bool(self._tokenizer.has_tool_calling) or "tools" in template
        self.tool_format, self.tool_parsers = tool_parsers_for(self._tokenizer)
        # KV cache of the previous call and the tokens it holds: the agent's next prompt
        # repeats the last one plus a few turns, so only the new tail needs reading
        self._cache: list[Any] | None = None
        self._cached_ids: list[int] = []

    def render(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> str:
        """The exact prompt text the model sees for these messages and tools."""
        dicts: Sequence[Mapping[str, JSONValue]]
        if self.native_tools:
            dicts = [_native_message(m) for m in messages]
            schemas = [spec.to_openai() for spec in tools] or None
        else:
            dicts = plain_messages(messages, self._describe_tools(tools) if tools else "")
            schemas = None
        return str(
            self._tokenizer.apply_chat_template(
                dicts,
                tools=schemas,
                add_generation_prompt=True,
                enable_thinking=self.thinking,
                tokenize=False,
            )
        )

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        on_token: Callable[[str], None] | None = None,
    ) -> Reply:
        """Generate one reply; `on_token` gets only visible text (no thinking, no tool calls)."""
        from mlx_lm import stream_generate
        from mlx_lm.sample_utils import make_sampler

        prompt = self.render(messages, tools)
        ids = self._tokenizer.encode(prompt, add_special_tokens=False)
        cache, fresh = self._reuse(ids)
        opened = prompt.rstrip().endswith(THINK_START)  # the template started the thought
        visible = VisibleStream(on_token, thinking=opened)
        parts: list[str] = []
        finish, generated, last = "stop", 0, None
        tokens: list[int] = []
        for response in stream_generate(
            self._model,
            self._tokenizer,
            fresh,
            max_tokens=self.max_new_tokens,
            sampler=make_sampler(self.temperature),
            prompt_cache=cache,
        ):
            parts.append(response.text)
            visible.feed(response.text)
            finish = response.finish_reason or finish
            generated = response.generation_tokens
            tokens.append(response.token)
            last = response
        visible.close()
        self._remember(cache, ids + tokens)
        raw = "".join(parts)
        if opened:
            raw = THINK_START + raw  # so a reply cut off mid-thought shows no thought as text
        return reply_from_text(
            raw,
            tools,
            parsers=self.tool_parsers,
            finish_reason=finish,
            prompt_tokens=len(ids),
            completion_tokens=generated,
            prompt_s=_seconds(last.prompt_tokens, last.prompt_tps) if last else 0.0,
            generation_s=_seconds(generated, last.generation_tps) if last else 0.0,
        )

    def _reuse(self, ids: list[int]) -> tuple[list[Any], list[int]]:
        """The cache to continue from and the prompt tokens it has not seen yet."""
        from mlx_lm.models.cache import (
            can_trim_prompt_cache,
            make_prompt_cache,
            trim_prompt_cache,
        )

        cache = self._cache
        if cache is not None and can_trim_prompt_cache(cache):
            same = 0
            for old, new in zip(self._cached_ids, ids, strict=False):
                if old != new:
                    break
                same += 1
            same = min(same, len(ids) - 1)  # the model must read at least one token
            if same > 0:
                trim_prompt_cache(cache, len(self._cached_ids) - same)
                return cache, ids[same:]
        self._cache, self._cached_ids = None, []
        return make_prompt_cache(self._model), ids

    def _remember(self, cache: list[Any], seen: list[int]) -> None:
        offset = int(getattr(cache[0], "offset", 0)) if cache else 0
        self._cache, self._cached_ids = cache, seen[:offset]


def tool_parsers_for(tokenizer: TokenizerWrapper) -> tuple[str | None, dict[str, SegmentParser]]:
    """The tokenizer's tool-call format (if one of FORMATS) and the mlx_lm parser per shape."""
    # mlx_lm names the format from the chat template and gives the tokenizer its parser, which
    # reads that shape; the other shape keeps the library's parser, since either was read
    # whatever the template (and `tools_as_text` asks templates without tools for JSON)
    parsers = library_parsers()
    parser = getattr(tokenizer, "tool_parser", None)
    fmt = parser_format(parser)
    if fmt is not None and parser is not None:
        parsers[fmt] = parser
    return fmt, parsers


def _seconds(tokens: int, per_second: float) -> float:
    """mlx-lm reports rates; the usage report wants durations."""
    return tokens / per_second if per_second > 0 else 0.0


class VisibleStream:
    """Forwards streamed text minus `<think>…</think>` and `<tool_call>…</tool_call>` spans."""

    _CLOSERS = {THINK_START: THINK_END, CALL_START: CALL_END}

    def __init__(self, sink: Callable[[str], None] | None, thinking: bool = False) -> None:
        self._sink = sink
        self._closer: str | None = THINK_END if thinking else None
        self._pending = ""
        self._started = False

    def feed(self, text: str) -> None:
        """Accept the next generated piece; emit whatever is certainly visible."""
        if self._sink is None:
            return
        self._pending += text
        while self._pending:
            if self._closer is not None:
                head, found, tail = self._pending.partition(self._closer)
                if not found:
                    # keep only what could still be the start of the closing marker
                    self._pending = self._pending[-(len(self._closer) - 1) :]
                    return
                self._closer, self._pending = None, tail
                continue
            hits = [(self._pending.find(m), m) for m in self._CLOSERS if m in self._pending]
            if hits:
                index, marker = min(hits)
                self._emit(self._pending[:index])
                self._closer = self._CLOSERS[marker]
                self._pending = self._pending[index + len(marker) :]
                continue
            keep = _partial_marker_suffix(self._pending, tuple(self._CLOSERS))
            self._emit(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
            return

    def close(self) -> None:
        """Flush held-back text at the end of generation."""
        if self._sink is not None and self._closer is None:
            self._emit(self._pending)
        self._pending = ""

    def _emit(self, text: str) -> None:
        if not self._started:
            text = text.lstrip()  # models put blank lines after </think> and tool calls
        if text and self._sink is not None:
            self._started = True
            self._sink(text)


def _partial_marker_suffix(text: str, markers: tuple[str, ...]) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of some marker."""
    best = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), best, -1):
            if text.endswith(marker[:size]):
                best = size
                break
    return best


def _call_dict(call: ToolCall) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {
        "type": "function",
        "function": {"name": call.name, "arguments": dict(call.arguments)},
    }
    if call.id:
        out["id"] = call.id
    return out


def _native_message(message: ChatMessage) -> dict[str, JSONValue]:
    """A message in the OpenAI-style shape Qwen templates read (arguments as a mapping)."""
    out: dict[str, JSONValue] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [_call_dict(c) for c in message.tool_calls]
    if message.role == "tool" and message.name:
        out["name"] = message.name
    return out


def plain_messages(messages: Sequence[ChatMessage], tool_text: str) -> list[dict[str, str]]:
    """Messages for a template (or a server) without tool support: tools in the system prompt,
    turns as text (OpenAIEngine sends these to a server that refuses `tools`)."""
    out: list[dict[str, str]] = []
    for m in messages:
        if m.role == "tool":
            body = f"<tool_response>\n{m.content}\n</tool_response>"
            if out and out[-1]["role"] == "user":  # some templates demand alternating roles
                out[-1]["content"] += "\n" + body
            else:
                out.append({"role": "user", "content": body})
            continue
        content = m.content
        for call in m.tool_calls:
            payload = json.dumps({"name": call.name, "arguments": dict(call.arguments)})
            content += f"\n{CALL_START}\n{payload}\n{CALL_END}"
        out.append({"role": m.role, "content": content.strip()})
    if tool_text:
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{tool_text}"
        else:
            out.insert(0, {"role": "system", "content": tool_text})
    return out


def _resolve(model: str) -> str:
    """A local folder for `model`: the path itself, or the cached hub snapshot when offline.

    huggingface_hub reads HF_HUB_OFFLINE once, when it is first imported; in a process that
    imported it earlier with the hub on, mlx_lm.load would go online for a hub id. Resolving the
    snapshot ourselves with local_files_only keeps "no network while answering" true either way
    (the embedder and the reranker pass local_files_only for the same reason)."""
    if local_model_path(model) is not None or not hub_offline():
        return model
    from huggingface_hub import snapshot_download

    return snapshot_download(model, local_files_only=True)
