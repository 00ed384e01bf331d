"""MosaicML MPT (mpt): ALiBi, bias-free LayerNorms and projections, a GELU MLP that
transformers' MptMLP fixes at 4 x d_model (it does not read expansion_ratio; every published
MPT uses 4), tied embeddings."""

from __future__ import annotations

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys, json_kind
from ffnlab.validation import show


def translate(k: ConfigKeys) -> ModelConfig:
    attn = k.data.get("attn_config") or {}  # its class validates these (5.25), read by ffnlab or not
    drop, kind = attn.get("attn_pdrop", 0), attn.get("attn_type", "multihead_attention")
    require(json_kind(drop) not in ("int", "float") or 0 <= drop <= 1,
            f"config.json key 'attn_config.attn_pdrop' is {show(drop)}, outside [0, 1]: transformers' MPT "
            "attention refuses it")
    require(kind in ("multihead_attention", "multiquery_attention"),
            f"config.json key 'attn_config.attn_type' is {show(kind)}: transformers' MPT config takes "
            "multihead_attention or multiquery_attention")
    d = k.get("d_model", 2048)
    n_heads = k.get("n_heads", 16)
    return ModelConfig(
        d_model=d,
        n_layers=k.get("n_layers", 24),
        vocab_size=k.get("vocab_size", 50368),
        ffn=FFNSpec("gelu", 4 * d),
        # Wqkv and out_proj are d x d whatever the heads; heads that do not divide d (which
        # transformers builds) count as one head of width d: the same parameters, FLOPs and cache
        attn=AttentionSpec(n_heads) if d % n_heads == 0 else AttentionSpec(1, head_dim=d),
        norm="layernorm-nobias",
        positions="alibi",
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool),
    )
