"""Cohere Command R7B and Command A (cohere2): Command R's parallel block without q/k norms,
three sliding-window layers (4096 tokens) to each global one. Its config class computes head_dim
itself, but a null head_dim in config.json replaces it and the model cannot be built."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.cohere import COHERE_DEFAULTS, COHERE_LAYOUT
from ffnlab.sizing.hf.keys import ConfigKeys, json_kind
from ffnlab.sizing.hf.llama import llama_like
from ffnlab.validation import show


def translate(k: ConfigKeys) -> ModelConfig:
    require("head_dim" not in k.data or k.data["head_dim"] is not None,
            "config.json key 'head_dim' is null: transformers builds no cohere2 model with a null head_dim")
    # without layer_types, its config computes them as (i + 1) % sliding_window_pattern (5.25)
    pattern = k.data.get("sliding_window_pattern", 4)
    require(isinstance(k.data.get("layer_types"), list) or (json_kind(pattern) in ("int", "float") and pattern != 0),
            f"config.json key 'sliding_window_pattern' is {show(pattern)}: transformers' cohere2 config computes "
            "its layer types as (layer + 1) % it, which needs a number other than 0")
    return _translate(k)


_translate = llama_like(
    {**COHERE_DEFAULTS, "sliding_window": 4096},
    replace(COHERE_LAYOUT, qk_norm=None, sliding_every=4, pattern_key=True, layer_types_key=True),
)
