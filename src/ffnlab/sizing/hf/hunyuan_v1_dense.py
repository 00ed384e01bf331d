"""Hunyuan dense V1 (hunyuan_v1_dense): the LLaMA layout with an RMSNorm over each query and
key head (query_layernorm, key_layernorm)."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

HUNYUAN_DEFAULTS = {**LLAMA_DEFAULTS, "vocab_size": 290943}

translate = llama_like(HUNYUAN_DEFAULTS, DecoderLayout(qk_norm="head"))
