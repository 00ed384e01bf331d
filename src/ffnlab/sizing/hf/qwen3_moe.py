"""Qwen3-MoE (qwen3_moe): Qwen3's attention with fine-grained routed SwiGLU experts
(moe_intermediate_size 768, 128 experts, top-8 by default) in every decoder_sparse_step-th
layer except mlp_only_layers, which keep a dense FFN of intermediate_size; no shared expert."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import every_nth, layer_list, with_moe
from ffnlab.sizing.hf.qwen3 import qwen_sliding

QWEN3_MOE_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "vocab_size": 151936,
}


def qwen_moe_layers(k: ConfigKeys, n_layers: int) -> list[int]:
    """Layers with experts: every decoder_sparse_step-th, less mlp_only_layers."""
    skip = layer_list(k, "mlp_only_layers") or []
    return every_nth(n_layers, k.get("decoder_sparse_step", 1), skip=skip)


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = qwen_sliding(decoder(k, QWEN3_MOE_DEFAULTS, DecoderLayout(qk_norm="head")), k, "all")
    n_experts = k.count("num_experts", 128)
    if not n_experts:
        return cfg
    moe = replace(
        cfg.ffn,
        d_ff=k.get("moe_intermediate_size", 768),
        n_experts=k.get("num_experts", 128),
        top_k=k.get("num_experts_per_tok", 8),
    )
    return with_moe(cfg, moe, qwen_moe_layers(k, cfg.n_layers))
