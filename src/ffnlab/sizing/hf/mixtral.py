"""Mixtral (mixtral): Mistral's layer with its FFN replaced by top-k routed SwiGLU experts."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import DecoderLayout, decoder
from ffnlab.sizing.hf.mistral import MISTRAL_DEFAULTS
from ffnlab.sizing.hf.moe import with_moe


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = decoder(k, MISTRAL_DEFAULTS, DecoderLayout(qkv_bias_key=None, sliding_every=1))
    moe = replace(
        cfg.ffn, n_experts=k.get("num_local_experts", 8), top_k=k.get("num_experts_per_tok", 2)
    )
    return with_moe(cfg, moe)
