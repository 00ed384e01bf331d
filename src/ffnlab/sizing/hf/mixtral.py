"""Mixtral (mixtral): Mistral's layer with its FFN replaced by top-k routed SwiGLU experts."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, llama_like

translate = llama_like({**LLAMA_DEFAULTS, "intermediate_size": 14336, "num_key_value_heads": 8, "moe": 8},
                       qkv_bias_key=None)
