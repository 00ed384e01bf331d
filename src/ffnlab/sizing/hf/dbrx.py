"""Databricks DBRX (dbrx): coarse MoE (16 SwiGLU experts of width 10752 at d_model 6144, top-4,
in the released model), GQA through a fused Wqkv, bias-free LayerNorms and projections; the
attention and FFN shapes live in the nested attn_config and ffn_config."""

from __future__ import annotations

from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import GATED_FROM_ACT, ConfigKeys
from ffnlab.validation import show


def _nested(k: ConfigKeys, key: str) -> ConfigKeys:
    value: Any = k.data.get(key)
    require(value is None or isinstance(value, dict), f"config.json key {key!r} must be an object")
    return ConfigKeys(value or {}, k.model_type)


def translate(k: ConfigKeys) -> ModelConfig:
    attn, ffn = _nested(k, "attn_config"), _nested(k, "ffn_config")
    # the attention reads attn_config.rope_theta, which the 5.25 class does not declare: absent, no
    # attribute (null builds)
    require("rope_theta" in attn.data, "config.json attn_config has no 'rope_theta': transformers' DBRX "
                                       "attention reads it and cannot build the model without it")
    act_fn = ffn.data.get("ffn_act_fn")
    require(act_fn is None or isinstance(act_fn, dict), f"config.json key 'ffn_config.ffn_act_fn' must be an object, "
                                                        f"got {show(act_fn)}: transformers' DBRX config refuses it")
    act = (act_fn or {}).get("name", "silu")
    require(act in GATED_FROM_ACT, f"config.json ffn_config.ffn_act_fn: {show(act)} is not supported")
    n_experts = ffn.get("moe_num_experts", 4)
    d, n_heads = k.get("d_model", 2048), k.get("n_heads", 16)
    # the config mirrors d_model into ffn_config.hidden_size (the router's and experts' width)
    # before it applies a hidden_size key (its other name): the experts keep d_model as written,
    # or the class's 2048 when config.json names the width hidden_size only (transformers 5.25)
    experts_width = ConfigKeys(k.written, k.model_type).get("d_model", 2048) if "hidden_size" in k.written else d
    if "d_model" not in k.written and experts_width != d:
        k.defaulted["d_model (the experts' width)"] = experts_width
    # transformers builds a query of width d and keys/values of d // n_heads per head: with heads
    # that do not divide d these differ, which ffnlab's attention cannot express (so: refused)
    require(d % n_heads == 0, f"config.json: n_heads={n_heads} does not divide d_model={d}; ffnlab "
                              "cannot count DBRX's unequal query and key widths")
    require(not k.get("tie_word_embeddings", False, kind=bool),
            "config.json key 'tie_word_embeddings' is true: transformers' DBRX config refuses tied embeddings")
    return ModelConfig(
        d_model=d,
        n_layers=k.get("n_layers", 24),
        vocab_size=k.get("vocab_size", 32000),
        ffn=FFNSpec(
            GATED_FROM_ACT[act],
            ffn.get("ffn_hidden_size", 3584),
            n_experts=n_experts,
            top_k=ffn.get("moe_top_k", 1),
            d_in=None if experts_width == d else experts_width,
        ),
        attn=AttentionSpec(n_heads, n_kv_heads=attn.get("kv_n_heads", 1)),
        norm="layernorm-nobias",
        positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool),
    )
