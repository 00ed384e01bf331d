"""OPT (opt): learned positions offset by 2, optional projection of the embedding width."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("hidden_size", 768)
    bias = k.get("enable_bias", True, kind=bool)
    affine = k.get("layer_norm_elementwise_affine", True, kind=bool)
    final = k.get("do_layer_norm_before", True, kind=bool) and not k.get("_remove_final_layer_norm", False, kind=bool)
    return ModelConfig(
        d_model=d, n_layers=k.get("num_hidden_layers", 12), vocab_size=k.get("vocab_size", 50272),
        ffn=FFNSpec(k.act("activation_function", "relu", gated=False), k.get("ffn_dim", 3072), bias=bias),
        attn=AttentionSpec(k.get("num_attention_heads", 12), qkv_bias=bias, out_bias=bias),
        norm="layernorm" if affine else "none", final_norm=final, positions="learned",
        max_positions=k.get("max_position_embeddings", 2048), position_offset=2,
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool),
        embed_proj_dim=k.get("word_embed_proj_dim", d))
