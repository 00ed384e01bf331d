"""Phi-3 (phi3): the LLaMA layout with fused projections (same parameter count) and a 32064 vocabulary."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

translate = llama_like(
    {**LLAMA_DEFAULTS, "hidden_size": 3072, "intermediate_size": 8192, "vocab_size": 32064},
    DecoderLayout(qkv_bias_key=None),
)
