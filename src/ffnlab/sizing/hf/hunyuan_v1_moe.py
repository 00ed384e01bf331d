"""Hunyuan MoE V1 (hunyuan_v1_moe): Hunyuan's attention (per-head q/k RMSNorms) with, in every
layer, num_experts routed SwiGLU experts and one shared MLP, all of width intermediate_size as
transformers builds them (a per-layer list of top-k values must be uniform here; transformers
5.25 refuses a list of expert counts)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.hunyuan_v1_dense import HUNYUAN_DEFAULTS
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import DecoderLayout, decoder
from ffnlab.sizing.hf.moe import with_moe
from ffnlab.validation import show


def _uniform(k: ConfigKeys, key: str, default: int) -> int:
    """An int, or a per-layer list whose values all agree."""
    value: Any = k.data.get(key, default)
    if isinstance(value, list):
        require(
            len(set(map(repr, value))) == 1,
            f"config.json key {key!r}: per-layer values {show(value)} are not supported",
        )
        layers = k.get("num_hidden_layers", 32)
        require(len(value) >= layers, f"config.json key {key!r} lists {len(value)} values for "
                                      f"{layers} layers (transformers reads one per layer)")
        return int(ConfigKeys({key: value[0]}, k.model_type).get(key))
    return int(k.get(key, default))


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = decoder(k, HUNYUAN_DEFAULTS, DecoderLayout(qk_norm="head"))
    moe = replace(
        cfg.ffn,
        n_experts=k.get("num_experts", 1),  # an int in transformers 5.25's config (moe_topk may be a list)
        top_k=_uniform(k, "moe_topk", 1),
        n_shared_experts=1,
    )
    return with_moe(cfg, moe)
