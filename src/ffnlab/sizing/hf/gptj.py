"""GPT-J (gptj): one LayerNorm per block (parallel attention and MLP), RoPE, an LM head with bias."""

from __future__ import annotations

import math

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.init_buffers import check_init_buffers
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.validation import show


def translate(k: ConfigKeys) -> ModelConfig:
    # GPTJRotaryEmbedding builds its sinusoidal position table at init with torch.arange(n_positions)
    # (transformers 5.25), on any device, the meta one too: an infinite count, which only
    # max_position_embeddings can carry (set through attribute_map, unvalidated; a negative or NaN
    # one is refused with the other tensor sizes), fails; so does a count whose table torch cannot
    # size (above 2**63 - 1 bytes: "Storage size calculation overflowed", or an int64 overflow)
    positions = k.data.get("n_positions")
    name = k.written_name("n_positions")
    require(not (isinstance(positions, float) and math.isinf(positions)),
            f"config.json key {name!r} is {show(positions)}: transformers' gptj model "
            "builds a table of that many rotary positions (torch.arange refuses it)")
    d = k.get("n_embd", 4096)
    rotary = k.data.get("rotary_dim", 64)
    dim = rotary if isinstance(rotary, int) and not isinstance(rotary, bool) and rotary else d
    n_layers = k.get("n_layer", 28)
    check_init_buffers("gptj", {"positions": positions, "rotary_pairs_x2": 2 * -(-dim // 2)}, n_layers, name)
    return ModelConfig(
        d_model=d, n_layers=n_layers, vocab_size=k.get("vocab_size", 50400),
        ffn=FFNSpec(k.act("activation_function", "gelu_new", gated=False), k.get("n_inner", 4 * d), bias=True),
        attn=AttentionSpec(k.get("n_head", 16)), norm="layernorm", norms_per_block=1,
        norm_placement="parallel", positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool), lm_head_bias=True)
