"""The tool-call format mlx_lm names from a chat template picks the parser MlxEngine reads replies
with (tiny self-built tokenizers and the tiny Qwen3; real mlx-lm, nothing downloaded)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from casper.backends.mlx_engine import MlxEngine, tool_parsers_for
from casper.backends.toolcalls import CALL_END, CALL_START, JSON_TOOLS, QWEN3_CODER
from casper.protocols import ChatMessage, ToolCall, ToolSpec
from tests.models import PLAIN_CHATML_TEMPLATE, TINY_CHATML_TEMPLATE, build_tiny_qwen_tokenizer

pytestmark = pytest.mark.slow

# assistant tool calls rendered the Qwen3-Coder / Qwen3.5 way, which mlx_lm reads as qwen3_coder
CODER_TEMPLATE = """\
{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}
{%- for tool_call in message.tool_calls or [] %}
<tool_call>
<function={{ tool_call.function.name }}>
{%- for key, value in tool_call.function.arguments.items() %}
<parameter={{ key }}>
{{ value }}
</parameter>
{%- endfor %}
</function>
</tool_call>
{%- endfor %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

SEARCH = ToolSpec(
    name="search_messages",
    description="Search messages.",
    parameters={"type": "object", "properties": {"limit": {"type": "integer"}}},
)


@pytest.mark.parametrize(
    ("template", "fmt"),
    [
        (TINY_CHATML_TEMPLATE, JSON_TOOLS),
        (CODER_TEMPLATE, QWEN3_CODER),
        (PLAIN_CHATML_TEMPLATE, None),
    ],
    ids=["qwen3 json", "qwen3-coder xml", "no tools"],
)
def test_the_chat_template_picks_the_library_parser(
    tmp_path: Path, template: str, fmt: str | None
) -> None:
    from mlx_lm.tokenizer_utils import load

    build_tiny_qwen_tokenizer(tmp_path, template)
    tokenizer = load(tmp_path)
    chosen, parsers = tool_parsers_for(tokenizer)
    assert chosen == fmt
    if fmt is None:
        assert not tokenizer.has_tool_calling
        return
    assert parsers[fmt] is tokenizer.tool_parser
    assert tokenizer.tool_parser.__module__ == f"mlx_lm.tool_parsers.{fmt}"
    # the markers we slice segments between are the ones the library parser expects
    assert (tokenizer.tool_call_start, tokenizer.tool_call_end) == (CALL_START, CALL_END)


def test_the_engine_reads_replies_with_the_tokenizer_s_parser(
    tiny_qwen_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted generation (the random model writes no calls) reaches the chosen parser."""
    import mlx_lm

    engine = MlxEngine(str(tiny_qwen_path), max_new_tokens=8)
    assert engine.tool_format == JSON_TOOLS
    assert engine.tool_parsers[JSON_TOOLS] is engine._tokenizer.tool_parser
    seen: list[str] = []
    library = engine.tool_parsers[JSON_TOOLS]

    def noted(text: str, tools: Any = None) -> Any:
        seen.append(text)
        return library(text, tools)

    pieces = ["Looking.", CALL_START, '{"name": "search_messages", ', '"arguments": {"limit": 3}}']
    pieces.append(CALL_END)

    def scripted(*args: Any, **kwargs: Any) -> Any:
        for i, text in enumerate(pieces):
            last = i == len(pieces) - 1
            yield SimpleNamespace(
                text=text, token=0, generation_tokens=i + 1, prompt_tokens=5, prompt_tps=50.0,
                generation_tps=10.0, finish_reason="stop" if last else None,
            )  # fmt: skip

    monkeypatch.setitem(engine.tool_parsers, JSON_TOOLS, noted)
    monkeypatch.setattr(mlx_lm, "stream_generate", scripted)
    reply = engine.chat([ChatMessage("user", "limit 3")], [SEARCH])
    assert reply.tool_calls == (ToolCall("search_messages", {"limit": 3}),)
    assert reply.text == "Looking." and not reply.malformed
    assert seen == ['{"name": "search_messages", "arguments": {"limit": 3}}']
