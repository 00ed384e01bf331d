"""Phi-1.5 and Phi-2 (phi): parallel block with one LayerNorm, partial RoPE, an LM head with bias."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("hidden_size", 2048)
    n_heads = k.get("num_attention_heads", 32)
    return ModelConfig(
        d_model=d, n_layers=k.get("num_hidden_layers", 24), vocab_size=k.get("vocab_size", 51200),
        ffn=FFNSpec(k.act("hidden_act", "gelu_new", gated=False), k.get("intermediate_size", 8192), bias=True),
        attn=AttentionSpec(n_heads, n_kv_heads=k.get("num_key_value_heads", n_heads), qkv_bias=True,
                           out_bias=True, qk_norm=k.get("qk_layernorm", False, kind=bool)),
        norm="layernorm", norms_per_block=1, norm_placement="parallel", positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool), lm_head_bias=True)
