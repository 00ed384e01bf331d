"""OLMo (olmo): the LLaMA layout with non-parametric LayerNorm (no norm weights)."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

translate = llama_like({**LLAMA_DEFAULTS, "vocab_size": 50304}, DecoderLayout(norm="none"))
