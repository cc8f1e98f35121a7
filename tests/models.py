"""Builders of tiny, random-weight models for real-load tests; nothing is downloaded or committed.

Heavy libraries (mlx, tokenizers, transformers, torch) are imported inside the builders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from casper.backends.loading import quiet_transformers

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen marks these as added but not special, so they survive decoding and reach the parser.
QWEN_ADDED = ["<tool_call>", "</tool_call>", "<think>", "</think>"]

# A small ChatML template in the shape of Qwen3's: it renders `tools`, assistant `tool_calls`
# (name + arguments) and tool results, and honours `enable_thinking`.
TINY_CHATML_TEMPLATE = """\
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
For each call reply <tool_call>{"name": <name>, "arguments": <args>}</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}<|im_start|>\
{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{{ message.content or '' }}
{%- for tool_call in message.tool_calls or [] %}
{%- if tool_call.function %}{% set tool_call = tool_call.function %}{% endif %}
<tool_call>
{"name": "{{ tool_call.name }}", "arguments": {{ tool_call.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif %}{% endif %}"""

# ChatML with no notion of tools: MlxEngine must describe tools in the system prompt itself.
PLAIN_CHATML_TEMPLATE = """\
{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

_CORPUS = [
    "When did I last talk to Sam about the dentist?",
    '{"name": "search_messages", "arguments": {"query": "dinner plans"}}',
    "ok see you at 7 — bring the wine 🍷",
    "<|im_start|>assistant\nLet me search your messages.<|im_end|>",
]


def _train_byte_bpe(vocab_size: int = 320):  # noqa: ANN202 - tokenizers.Tokenizer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=QWEN_SPECIAL,
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    return tok


def build_tiny_qwen_tokenizer(
    dest: Path, chat_template: str | None = TINY_CHATML_TEMPLATE, extra: tuple[str, ...] = ()
) -> int:
    """Save a byte-level BPE tokenizer with Qwen's special tokens (and `extra` added tokens) to
    `dest`; returns its size."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    raw = _train_byte_bpe()
    added = [*QWEN_ADDED, *extra]
    raw.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(dest)
    return len(tokenizer)


def build_tiny_qwen3(dest: Path, chat_template: str | None = TINY_CHATML_TEMPLATE) -> Path:
    """Build a random 2-layer Qwen3 (hidden 32) that `mlx_lm.load(dest)` accepts."""
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import qwen3

    dest.mkdir(parents=True, exist_ok=True)
    vocab_size = build_tiny_qwen_tokenizer(dest, chat_template)
    config = {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "intermediate_size": 64,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab_size,
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
    }
    mx.random.seed(0)
    model = qwen3.Model(qwen3.ModelArgs.from_dict(config))
    _mute_tokens(model, dest)
    mx.save_safetensors(str(dest / "model.safetensors"), dict(tree_flatten(model.parameters())))
    (dest / "config.json").write_text(json.dumps(config, indent=1))
    return dest


def build_tool_calling_qwen3(dest: Path, call: dict[str, Any]) -> Path:
    """A tiny Qwen3 whose greedy reply to any prompt is one tool call: `<tool_call>`, `call` as
    JSON, `</tool_call>`, end of turn. Real weights in a real mlx-lm model, built so that a
    server's tool-call parsing can be tested without a model that chooses to call.

    Its layers add nothing to the residual stream (o_proj and down_proj are zero), so the next
    token depends on the current one alone; the embeddings put the four steps of the reply on
    four axes and the (untied) output head maps each to the next: any other token →
    `<tool_call>` → the call (one added token) → `</tool_call>` → `<|im_end|>`.
    """
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import qwen3
    from transformers import PreTrainedTokenizerFast

    dest.mkdir(parents=True, exist_ok=True)
    text = json.dumps(call)
    vocab_size = build_tiny_qwen_tokenizer(dest, extra=(text,))
    tokenizer = PreTrainedTokenizerFast.from_pretrained(dest)
    steps = [tokenizer.convert_tokens_to_ids(t) for t in ("<tool_call>", text, "</tool_call>")]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    hidden = 32
    config = {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "intermediate_size": 64,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab_size,
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
    }
    model = qwen3.Model(qwen3.ModelArgs.from_dict(config))
    for layer in model.model.layers:
        layer.self_attn.o_proj.weight = mx.zeros_like(layer.self_attn.o_proj.weight)
        layer.mlp.down_proj.weight = mx.zeros_like(layer.mlp.down_proj.weight)
    axis = [[0.0] * hidden for _ in range(4)]
    for i in range(4):
        axis[i][i] = 1.0
    embed = [axis[0]] * vocab_size  # every other token: step 0
    for i, token in enumerate(steps):
        embed[token] = axis[i + 1]
    head = [[0.0] * hidden for _ in range(vocab_size)]
    for i, token in enumerate([*steps, end]):
        head[token] = axis[i]  # the token on axis i follows the token embedded there
    model.model.embed_tokens.weight = mx.array(embed)
    model.lm_head.weight = mx.array(head)
    mx.save_safetensors(str(dest / "model.safetensors"), dict(tree_flatten(model.parameters())))
    (dest / "config.json").write_text(json.dumps(config, indent=1))
    return dest


def _mute_tokens(model: Any, dest: Path) -> None:
    """Zero the tied embeddings of whitespace and added tokens so greedy output is visible text.

    Their logits become 0 while some random token scores above 0, so the random model streams
    printable gibberish until max_tokens instead of blank lines or an immediate stop.
    """
    import mlx.core as mx
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(dest)
    mask = [1.0] * len(tokenizer)
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id])
        if not text.strip() or token_id in tokenizer.added_tokens_decoder:
            mask[token_id] = 0.0
    weight = model.model.embed_tokens.weight
    model.model.embed_tokens.weight = weight * mx.array(mask)[:, None]


def _write_wordpiece_vocab(dest: Path, words: list[str]) -> Path:
    vocab = dest / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    return vocab


def _build_bert_cross_encoder(dest: Path, words: list[str], **shape: int) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    dest.mkdir(parents=True, exist_ok=True)
    vocab = _write_wordpiece_vocab(dest, words)
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        num_labels=1,
        max_position_embeddings=512,
        **shape,
    )
    with quiet_transformers():
        BertForSequenceClassification(config).save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest


TINY_WORDS = ["dinner", "lunch", "dentist", "sam", "alex", "party", "when", "where", "did",
              "we", "talk", "about", "the", "##s", "ok", "yes"]  # fmt: skip


def build_tiny_cross_encoder(dest: Path) -> Path:
    """A 1-layer BERT cross-encoder (hidden 16); initializer_range=0.5 so scores spread out."""
    return _build_bert_cross_encoder(
        dest,
        TINY_WORDS,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        initializer_range=0.5,
    )


def build_minilm_shaped_cross_encoder(dest: Path, vocab_size: int = 30522) -> Path:
    """Random weights in ms-marco-MiniLM-L6's shape, for rerank latency benchmarks only."""
    # Latency depends on the shape, not the words: pad the vocab with synthetic pieces.
    words = TINY_WORDS + [f"w{i}" for i in range(vocab_size - 5 - len(TINY_WORDS))]
    return _build_bert_cross_encoder(
        dest,
        words,
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=12,
        intermediate_size=1536,
    )
