"""Mistral (mistral): the LLaMA layout with GQA (8 KV heads) and a 14336-wide SwiGLU by default;
v0.1 slides a 4096-token window in every layer."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

MISTRAL_DEFAULTS = {**LLAMA_DEFAULTS, "intermediate_size": 14336, "num_key_value_heads": 8}

translate = llama_like(
    {**MISTRAL_DEFAULTS, "sliding_window": 4096}, DecoderLayout(qkv_bias_key=None, sliding_every=1)
)
