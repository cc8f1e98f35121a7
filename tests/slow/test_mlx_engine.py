"""MlxEngine on a tiny self-built Qwen3 (real mlx-lm), plus the pure VisibleStream filter."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper.backends.mlx_engine import MlxEngine, VisibleStream
from casper.errors import ModelUnavailable
from casper.protocols import ChatMessage, ToolCall, ToolSpec
from tests.helpers import assert_unloadable_models_raise
from tests.models import PLAIN_CHATML_TEMPLATE, build_tiny_qwen3

SEARCH = ToolSpec(
    name="search_messages",
    description="Search the user's messages by meaning and keywords.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}},
)
CONVERSATION = (
    ChatMessage("system", "You answer questions about the user's messages."),
    ChatMessage("user", "When did Sam mention the dentist?"),
    ChatMessage("assistant", "", (ToolCall("search_messages", {"query": "dentist Sam"}),)),
    ChatMessage("tool", "[2024-05-02] Sam: dentist at 9", name="search_messages"),
)


@pytest.fixture(scope="module")
def engine(tiny_qwen_path: Path) -> MlxEngine:
    return MlxEngine(str(tiny_qwen_path), max_new_tokens=12)


@pytest.mark.slow
def test_loads_with_native_tool_support(engine: MlxEngine, tiny_qwen_path: Path) -> None:
    assert engine.name == str(tiny_qwen_path)
    assert engine.native_tools


@pytest.mark.slow
def test_render_includes_tools_and_tool_turns(engine: MlxEngine) -> None:
    prompt = engine.render(CONVERSATION, [SEARCH])
    assert "search_messages" in prompt and SEARCH.description in prompt
    assert '"arguments": {"query": "dentist Sam"}' in prompt
    assert "<tool_response>\n[2024-05-02] Sam: dentist at 9\n</tool_response>" in prompt
    assert prompt.endswith("<think>\n\n</think>\n\n")  # thinking off
    assert "<tools>" not in engine.render(CONVERSATION[:2], [])


@pytest.mark.slow
def test_chat_streams_and_counts_tokens(engine: MlxEngine) -> None:
    pieces: list[str] = []
    reply = engine.chat(CONVERSATION, [SEARCH], on_token=pieces.append)
    assert pieces and "".join(pieces).strip() == reply.text
    assert reply.prompt_tokens > 0
    assert 0 < reply.completion_tokens <= engine.max_new_tokens
    assert reply.finish_reason in {"stop", "length"}
    assert engine.chat(CONVERSATION, [SEARCH]) == reply  # greedy: deterministic


@pytest.mark.slow
def test_a_reused_kv_cache_answers_like_a_fresh_engine(tiny_qwen_path: Path) -> None:
    """The agent's second call extends the first prompt: only the tail is read, same reply."""
    warm = MlxEngine(str(tiny_qwen_path), max_new_tokens=8)
    first = warm.chat(CONVERSATION[:2], [SEARCH])
    longer = (*CONVERSATION, ChatMessage("user", "And when was the dentist moved?"))
    again = warm.chat(longer, [SEARCH])
    assert 0 < len(warm._cached_ids) <= again.prompt_tokens + again.completion_tokens
    fresh = MlxEngine(str(tiny_qwen_path), max_new_tokens=8).chat(longer, [SEARCH])
    assert again == fresh and first.prompt_tokens < again.prompt_tokens
    assert warm.chat(CONVERSATION[:2], [SEARCH]) == first  # a shorter prompt trims the cache


@pytest.mark.slow
def test_thinking_flag_reaches_the_template(tiny_qwen_path: Path) -> None:
    thinking = MlxEngine(str(tiny_qwen_path), max_new_tokens=4, thinking=True)
    assert "</think>" not in thinking.render(CONVERSATION[:2], [])


@pytest.mark.slow
def test_template_without_tools_gets_them_in_the_system_prompt(tmp_path: Path) -> None:
    path = build_tiny_qwen3(tmp_path / "plain", chat_template=PLAIN_CHATML_TEMPLATE)
    engine = MlxEngine(str(path), max_new_tokens=4)
    assert not engine.native_tools
    prompt = engine.render(CONVERSATION, [SEARCH])
    system = prompt.split("<|im_end|>")[0]
    assert "You answer questions" in system and "- search_messages: " in system
    assert '<tool_call>\n{"name": "search_messages"' in prompt
    assert "<|im_start|>tool" not in prompt and "<tool_response>" in prompt
    assert engine.chat(CONVERSATION, [SEARCH]).completion_tokens > 0


@pytest.mark.slow
def test_unloadable_models_raise_model_unavailable(tmp_path: Path) -> None:
    assert_unloadable_models_raise(
        MlxEngine, tmp_path, "mlx-community/not-a-cached-model", "language"
    )


def _stream(pieces: list[str], thinking: bool = False) -> str:
    out: list[str] = []
    visible = VisibleStream(out.append, thinking=thinking)
    for piece in pieces:
        visible.feed(piece)
    visible.close()
    return "".join(out)


@pytest.mark.parametrize(
    ("raw", "thinking", "expected"),
    [
        ("Hello there", False, "Hello there"),
        ("<think>plan</think>\n\nAnswer.", False, "Answer."),
        ("still planning</think>\nAnswer.", True, "Answer."),
        ('Let me look.<tool_call>{"name": "x"}</tool_call>', False, "Let me look."),
        ("a < b <thin but not a tag", False, "a < b <thin but not a tag"),
        ("<think>never closed", False, ""),
        ("\n\n  lead", False, "lead"),
    ],
)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_visible_stream_hides_thinking_and_calls(
    raw: str, thinking: bool, expected: str, size: int
) -> None:
    pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
    assert _stream(pieces, thinking) == expected


@pytest.mark.slow
def test_uncached_hub_id_never_goes_online_even_if_the_hub_was_imported_online(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub freezes HF_HUB_OFFLINE at its first import; a process that imported it
    with the hub on must still not reach for the network while Casper is offline."""
    import socket

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    lookups: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        lookups.append(args[0] if args else None)
        raise OSError("network used")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(ModelUnavailable) as info:
        MlxEngine("mlx-community/not-a-cached-model")
    assert lookups == []
    assert info.value.hint and "casper pull" in info.value.hint
