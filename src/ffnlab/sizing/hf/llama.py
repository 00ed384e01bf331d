"""LLaMA (llama) and the decoders that share its layout: RMSNorm, RoPE, a gated FFN, GQA.

``llama_like`` builds a translator from the defaults of a ``transformers`` config class; the
family modules beside this one (mistral, mixtral, qwen2, gemma, gemma2, phi3, olmo) call it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys


def llama_like(defaults: dict[str, Any], *, qkv_bias_key: str | None = "attention_bias",
                qkv_bias: bool = False, out_bias_follows: bool = True, norm: str = "rmsnorm",
                norms_per_block: int = 2, act_key: str = "hidden_act",
                mlp_bias_key: str | None = None) -> Callable[[ConfigKeys], ModelConfig]:
    """LLaMA-family decoders differ only in defaults, bias flags and norm placement."""

    def translate(k: ConfigKeys) -> ModelConfig:
        d = k.get("hidden_size", defaults["hidden_size"])
        n_heads = k.get("num_attention_heads", defaults["num_attention_heads"])
        qb = k.get(qkv_bias_key, qkv_bias, kind=bool) if qkv_bias_key else qkv_bias
        if k.data.get("head_dim") is None and not defaults.get("head_dim"):
            require(d % n_heads == 0, f"config.json: num_attention_heads={n_heads} does not divide "
                                      f"hidden_size={d} (and no head_dim is given)")
        n_experts = k.first("num_local_experts", default=defaults["moe"]) if defaults.get("moe") else 0
        ffn = FFNSpec(
            k.act(act_key, defaults[act_key], gated=True),
            k.get("intermediate_size", defaults["intermediate_size"]),
            bias=k.get(mlp_bias_key, False, kind=bool) if mlp_bias_key else False,
            n_experts=n_experts,
            top_k=k.get("num_experts_per_tok", 2) if n_experts else 0,
        )
        return ModelConfig(
            d_model=d, n_layers=k.get("num_hidden_layers", defaults["num_hidden_layers"]),
            vocab_size=k.get("vocab_size", defaults["vocab_size"]), ffn=ffn,
            attn=AttentionSpec(n_heads, n_kv_heads=k.get("num_key_value_heads", defaults.get("num_key_value_heads") or n_heads),
                               head_dim=k.get("head_dim", defaults.get("head_dim") or d // n_heads),
                               qkv_bias=qb, out_bias=qb and out_bias_follows),
            norm=norm, norms_per_block=norms_per_block, positions="rope",
            tied_embeddings=k.get("tie_word_embeddings", defaults["tie_word_embeddings"], kind=bool))

    return translate




LLAMA_DEFAULTS = dict(hidden_size=4096, num_attention_heads=32, num_hidden_layers=32, intermediate_size=11008,
              vocab_size=32000, hidden_act="silu", tie_word_embeddings=False)


translate = llama_like(LLAMA_DEFAULTS, mlp_bias_key="mlp_bias")
