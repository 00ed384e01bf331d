"""OLMo 3 (olmo3): OLMo 2's layer with a 4096-token window in three of every four layers."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.hf.llama import llama_like
from ffnlab.sizing.hf.olmo2 import OLMO2_DEFAULTS, OLMO2_LAYOUT

translate = llama_like(
    {**OLMO2_DEFAULTS, "sliding_window": 4096}, replace(OLMO2_LAYOUT, sliding_every=4, layer_types_key=True)
)
