"""IBM Granite 3 MoE (granitemoe): Granite's attention with num_local_experts routed SwiGLU
experts of width intermediate_size in every layer, no shared expert."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, decoder
from ffnlab.sizing.hf.moe import with_moe


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = decoder(k, LLAMA_DEFAULTS)
    moe = replace(
        cfg.ffn, n_experts=k.get("num_local_experts", 8), top_k=k.get("num_experts_per_tok", 2)
    )
    return with_moe(cfg, moe)
