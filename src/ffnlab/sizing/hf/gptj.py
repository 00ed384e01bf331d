"""GPT-J (gptj): one LayerNorm per block (parallel attention and MLP), RoPE, an LM head with bias."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("n_embd", 4096)
    return ModelConfig(
        d_model=d, n_layers=k.get("n_layer", 28), vocab_size=k.get("vocab_size", 50400),
        ffn=FFNSpec(k.act("activation_function", "gelu_new", gated=False), k.get("n_inner", 4 * d), bias=True),
        attn=AttentionSpec(k.get("n_head", 16)), norm="layernorm", norms_per_block=1,
        norm_placement="parallel", positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool), lm_head_bias=True)
