"""Qwen2 and Qwen2.5 (qwen2): the LLaMA layout with biased q/k/v projections and an unbiased output."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

QWEN2_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "intermediate_size": 22016,
    "vocab_size": 151936,
    "num_key_value_heads": 32,
}

translate = llama_like(
    QWEN2_DEFAULTS, DecoderLayout(qkv_bias_key=None, qkv_bias=True, out_bias_follows=False)
)
