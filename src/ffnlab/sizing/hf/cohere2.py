"""Cohere Command R7B and Command A (cohere2): Command R's parallel block without q/k norms,
three sliding-window layers (4096 tokens) to each global one."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.hf.cohere import COHERE_DEFAULTS, COHERE_LAYOUT
from ffnlab.sizing.hf.llama import llama_like

translate = llama_like(
    {**COHERE_DEFAULTS, "sliding_window": 4096},
    replace(COHERE_LAYOUT, qk_norm=None, sliding_every=4, pattern_key=True),
)
