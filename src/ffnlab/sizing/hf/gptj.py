"""GPT-J (gptj): one LayerNorm per block (parallel attention and MLP), RoPE, an LM head with bias."""

from __future__ import annotations

import math

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.validation import show


def translate(k: ConfigKeys) -> ModelConfig:
    # GPTJAttention builds its sinusoidal position table with torch.arange(n_positions) (transformers
    # 5.25): an infinite count, which only max_position_embeddings can carry (set through
    # attribute_map, unvalidated; a negative or NaN one is refused with the other tensor sizes), fails
    positions = k.data.get("n_positions")
    require(not (isinstance(positions, float) and math.isinf(positions)),
            f"config.json key {k.written_name('n_positions')!r} is {show(positions)}: transformers' gptj model "
            "builds a table of that many rotary positions (torch.arange refuses it)")
    d = k.get("n_embd", 4096)
    return ModelConfig(
        d_model=d, n_layers=k.get("n_layer", 28), vocab_size=k.get("vocab_size", 50400),
        ffn=FFNSpec(k.act("activation_function", "gelu_new", gated=False), k.get("n_inner", 4 * d), bias=True),
        attn=AttentionSpec(k.get("n_head", 16)), norm="layernorm", norms_per_block=1,
        norm_placement="parallel", positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool), lm_head_bias=True)
