"""GPT-NeoX and Pythia (gpt_neox): RoPE, LayerNorm, biased projections."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    bias = k.get("attention_bias", True, kind=bool)
    return ModelConfig(
        d_model=k.get("hidden_size", 6144), n_layers=k.get("num_hidden_layers", 44),
        vocab_size=k.get("vocab_size", 50432),
        ffn=FFNSpec(k.act("hidden_act", "gelu", gated=False), k.get("intermediate_size", 24576), bias=True),
        attn=AttentionSpec(k.get("num_attention_heads", 64), qkv_bias=bias, out_bias=bias),
        norm="layernorm", positions="rope", tied_embeddings=k.get("tie_word_embeddings", False, kind=bool))
