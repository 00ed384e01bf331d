"""BLOOM (bloom): ALiBi, a LayerNorm on the embeddings, an MLP fixed at 4 x hidden_size."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    # BloomConfig.__post_init__ (transformers 5.25, models/bloom/configuration_bloom.py) pops the
    # legacy n_embed from its kwargs and, when it is not null, takes it as hidden_size (then
    # validated as that field): n_embed wins over hidden_size
    d = k.first("n_embed", "hidden_size", default=64)
    return ModelConfig(
        d_model=d, n_layers=k.first("n_layer", "num_hidden_layers", default=2),
        vocab_size=k.get("vocab_size", 250880),
        ffn=FFNSpec("gelu_tanh", 4 * d, bias=True),  # BLOOM's MLP width is fixed at 4 x hidden_size
        attn=AttentionSpec(k.first("n_head", "num_attention_heads", default=8), qkv_bias=True, out_bias=True),
        norm="layernorm", embed_norm=True, positions="alibi",
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool))
