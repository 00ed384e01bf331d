"""Mistral (mistral): the LLaMA layout with GQA (8 KV heads) and a 14336-wide SwiGLU by default."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, llama_like

translate = llama_like({**LLAMA_DEFAULTS, "intermediate_size": 14336, "num_key_value_heads": 8}, qkv_bias_key=None)
