"""Phi-1.5 and Phi-2 (phi): parallel block with one LayerNorm, partial RoPE, an LM head with bias;
an explicit ``head_dim`` sets the heads' width (PhiAttention reads it; a null one it cannot build)."""

from __future__ import annotations

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("hidden_size", 2048)
    n_heads = k.get("num_attention_heads", 32)
    require(k.data.get("head_dim", 0) is not None,
            "config.json key 'head_dim' is null: transformers builds no phi model with a null head_dim")
    head_dim = k.get("head_dim", d // n_heads)
    qk_norm = k.get("qk_layernorm", False, kind=bool)
    # PhiAttention's q/k LayerNorms are hidden_size // heads wide whatever head_dim says: no ffnlab
    # attention has norms of another width than its heads
    require(not qk_norm or head_dim == d // n_heads,
            f"config.json: qk_layernorm with head_dim {head_dim} != hidden_size // heads {d // n_heads} "
            "(transformers' q/k norms keep the latter width; ffnlab does not model that)")
    return ModelConfig(
        d_model=d, n_layers=k.get("num_hidden_layers", 24), vocab_size=k.get("vocab_size", 51200),
        ffn=FFNSpec(k.act("hidden_act", "gelu_new", gated=False), k.get("intermediate_size", 8192), bias=True),
        attn=AttentionSpec(n_heads, n_kv_heads=k.get("num_key_value_heads", n_heads),
                           head_dim=head_dim, qkv_bias=True,
                           out_bias=True, qk_norm=qk_norm),
        norm="layernorm", norms_per_block=1, norm_placement="parallel", positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool), lm_head_bias=True)
