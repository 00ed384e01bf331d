"""Qwen1.5-MoE and Qwen2-MoE (qwen2_moe): Qwen2's attention (biased q/k/v), routed SwiGLU
experts plus one shared expert (shared_expert_intermediate_size) behind a sigmoid gate
(a d_model x 1 Linear), in the layers decoder_sparse_step and mlp_only_layers choose."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import with_moe
from ffnlab.sizing.hf.qwen3 import qwen_sliding
from ffnlab.sizing.hf.qwen3_moe import qwen_moe_layers

QWEN2_MOE_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 151936,
}


def translate(k: ConfigKeys) -> ModelConfig:
    layout = DecoderLayout(qkv_bias_key="qkv_bias", qkv_bias=True, out_bias_follows=False)
    cfg = qwen_sliding(decoder(k, QWEN2_MOE_DEFAULTS, layout), k, "odd-below")
    if not k.count("num_experts", 60):
        return cfg
    moe = replace(
        cfg.ffn,
        d_ff=k.get("moe_intermediate_size", 1408),
        n_experts=k.get("num_experts", 60),
        top_k=k.get("num_experts_per_tok", 4),
        n_shared_experts=1,
        d_shared=k.get("shared_expert_intermediate_size", 5632),
        shared_expert_gate=True,
    )
    return with_moe(cfg, moe, qwen_moe_layers(k, cfg.n_layers))
