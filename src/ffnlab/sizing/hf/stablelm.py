"""StableLM 2 and StableLM 3B (stablelm): LayerNorm with bias, a SwiGLU FFN, optional q/k/v
biases (use_qkv_bias), optional per-head bias-free q/k LayerNorms (qk_layernorm) and an
optional parallel block with one norm (use_parallel_residual)."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("hidden_size", 2560)
    n_heads = k.get("num_attention_heads", 32)
    parallel = k.get("use_parallel_residual", False, kind=bool)
    return ModelConfig(
        d_model=d,
        n_layers=k.get("num_hidden_layers", 32),
        vocab_size=k.get("vocab_size", 50304),
        ffn=FFNSpec(k.act("hidden_act", "silu", gated=True), k.get("intermediate_size", 6912)),
        attn=AttentionSpec(
            n_heads,
            n_kv_heads=k.get("num_key_value_heads", 32),
            qkv_bias=k.get("use_qkv_bias", False, kind=bool),
            qk_norm=k.get("qk_layernorm", False, kind=bool),
            qk_norm_kind="layernorm-nobias",
            qk_norm_width="full",
        ),
        norm="layernorm",
        norms_per_block=1 if parallel else 2,
        norm_placement="parallel" if parallel else "pre",
        positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool),
    )
