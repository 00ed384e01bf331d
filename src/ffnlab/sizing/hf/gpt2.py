"""GPT-2 (``model_type`` gpt2): learned positions, LayerNorm, a plain MLP of width n_inner (default 4d)."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("n_embd", 768)
    return ModelConfig(
        d_model=d, n_layers=k.get("n_layer", 12), vocab_size=k.get("vocab_size", 50257),
        ffn=FFNSpec(k.act("activation_function", "gelu_new", gated=False), k.get("n_inner", 4 * d), bias=True),
        attn=AttentionSpec(k.get("n_head", 12), qkv_bias=True, out_bias=True),
        norm="layernorm", positions="learned", max_positions=k.get("n_positions", 1024),
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool))
