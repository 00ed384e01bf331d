"""gpt-oss (gpt_oss): biased q/k/v/o, a learned sink logit per head, and in every layer
num_local_experts routed experts with biases (gate_up and down) behind a biased router; the
experts' clamped SwiGLU (alpha 1.702) holds the parameters of a SwiGLU; sliding (128 tokens)
and full attention alternate."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import with_moe

GPT_OSS_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "num_hidden_layers": 36,
    "vocab_size": 201088,
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "head_dim": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "sliding_window": 128,
}


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = decoder(k, GPT_OSS_DEFAULTS, DecoderLayout(qkv_bias=True, sliding_every=2, layer_types_key=True))
    cfg = replace(cfg, attn=replace(cfg.attn, sinks=True))
    moe = replace(
        cfg.ffn,
        bias=True,
        router_bias=True,
        n_experts=k.get("num_local_experts", 128),
        top_k=k.get("num_experts_per_tok", 4),
    )
    return with_moe(cfg, moe)
