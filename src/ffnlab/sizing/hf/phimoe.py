"""Phi-3.5-MoE (phimoe): LayerNorm with bias, GQA, 16 SwiGLU experts of width 6400 (top-2) in
every layer; attention_bias and lm_head_bias switch biases on. Its config class validates its own
RoPE (transformers 5.25, ``configuration_phimoe.py``): scaling other than the default needs numbers
for ``short_mscale`` and ``long_mscale``."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys, json_kind, rope_groups, rope_kind
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import with_moe
from ffnlab.validation import show

PHIMOE_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "vocab_size": 32064,
    "intermediate_size": 6400,
    "num_key_value_heads": 8,
}


def translate(k: ConfigKeys) -> ModelConfig:
    for label, group in rope_groups(k.data, k.model_type):
        if group and rope_kind(group) != "default":
            for key in ("short_mscale", "long_mscale"):
                require(json_kind(group.get(key)) in ("int", "float"),
                        f"config.json key {label!r} scales RoPE, so its {key} must be a number, got "
                        f"{show(group.get(key))}: transformers' phimoe config refuses it")
    cfg = decoder(k, PHIMOE_DEFAULTS, DecoderLayout(norm="layernorm", sliding_every=1))
    cfg = replace(cfg, lm_head_bias=k.get("lm_head_bias", False, kind=bool))
    moe = replace(
        cfg.ffn, n_experts=k.get("num_local_experts", 16), top_k=k.get("num_experts_per_tok", 2)
    )
    return with_moe(cfg, moe)
