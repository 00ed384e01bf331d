"""Falcon (falcon): multi-query or grouped KV heads, parallel attention with one or two norms.
FalconConfig's head_dim is a read-only property: a config.json setting it is refused, as
transformers refuses it, with the other read-only keys (``keys.check_settable``)."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    # FalconConfig.__post_init__ (transformers 5.25, models/falcon/configuration_falcon.py) pops the
    # legacy n_embed from its kwargs and, when it is not null, takes it as hidden_size (then
    # validated as that field, and the default ffn_hidden_size is 4 x it): n_embed wins
    d = k.get("n_embed") if k.present("n_embed") else k.get("hidden_size", 4544)
    # 5.25's FalconConfig has no attribute_map and pops only n_embed: the RW-era n_head, n_layer
    # and n_head_kv are kept as unused attributes, and its own fields (or their defaults) build
    n_heads = k.get("num_attention_heads", 71)
    new_arch = k.get("new_decoder_architecture", False, kind=bool)
    if new_arch:
        n_kv = k.get("num_kv_heads", n_heads)
    elif k.get("multi_query", True, kind=bool):
        n_kv = 1
    else:
        n_kv = n_heads
    parallel = k.get("parallel_attn", True, kind=bool)
    n_ln = k.get("num_ln_in_parallel_attn", 2 if new_arch else 1)
    bias = k.get("bias", False, kind=bool)
    return ModelConfig(
        d_model=d, n_layers=k.get("num_hidden_layers", 32),
        vocab_size=k.get("vocab_size", 65024),
        ffn=FFNSpec(k.act("activation", "gelu", gated=False), k.get("ffn_hidden_size", 4 * d), bias=bias),
        attn=AttentionSpec(n_heads, n_kv_heads=n_kv, qkv_bias=bias, out_bias=bias),
        norm="layernorm", norms_per_block=(n_ln if parallel else 2),
        norm_placement="parallel" if parallel else "pre",
        positions="alibi" if k.get("alibi", False, kind=bool) else "rope",
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool))
