"""StarCoder2 (starcoder2): LayerNorm, GQA, a plain GELU (tanh) MLP, biases on every
projection (use_bias), tied embeddings; an explicit ``head_dim`` sets the heads' width (null or
absent: hidden_size // heads, as Starcoder2Attention reads it)."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys, floor_head_dim
from ffnlab.sizing.hf.llama import sliding


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("hidden_size", 3072)
    n_heads = k.get("num_attention_heads", 24)
    n_layers = k.get("num_hidden_layers", 30)
    bias = k.get("use_bias", True, kind=bool)
    return ModelConfig(
        d_model=d,
        n_layers=n_layers,
        vocab_size=k.get("vocab_size", 49152),
        ffn=FFNSpec(
            k.act("hidden_act", "gelu_pytorch_tanh", gated=False),
            k.get("intermediate_size", 12288),
            bias=bias,
        ),
        attn=AttentionSpec(
            n_heads,
            n_kv_heads=k.get("num_key_value_heads", 2),
            head_dim=k.get("head_dim", None, null=None) or floor_head_dim(d, n_heads),
            qkv_bias=bias,
            out_bias=bias,
            **sliding(k, n_layers, 1, types_key=False),
        ),
        norm="layernorm",
        positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool),
    )
