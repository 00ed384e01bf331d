"""Cohere Command R7B and Command A (cohere2): Command R's parallel block without q/k norms,
three sliding-window layers (4096 tokens) to each global one. Its config class computes head_dim
itself, but a null head_dim in config.json replaces it and the model cannot be built."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.cohere import COHERE_DEFAULTS, COHERE_LAYOUT
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import llama_like


def translate(k: ConfigKeys) -> ModelConfig:
    require("head_dim" not in k.data or k.data["head_dim"] is not None,
            "config.json key 'head_dim' is null: transformers builds no cohere2 model with a null head_dim")
    return _translate(k)


_translate = llama_like(
    {**COHERE_DEFAULTS, "sliding_window": 4096},
    replace(COHERE_LAYOUT, qk_norm=None, sliding_every=4, pattern_key=True),
)
