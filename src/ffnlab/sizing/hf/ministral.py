"""Ministral (ministral): Mistral's layer with a sliding window in every layer by default."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import DecoderLayout, llama_like
from ffnlab.sizing.hf.mistral import MISTRAL_DEFAULTS

translate = llama_like(
    {**MISTRAL_DEFAULTS, "sliding_window": 4096},
    DecoderLayout(qkv_bias_key=None, sliding_every=1, layer_types_key=True),
)
