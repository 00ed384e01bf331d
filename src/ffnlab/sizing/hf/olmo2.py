"""OLMo 2 (olmo2): RMSNorm after each sub-layer inside the residual ("post" placement, no
input norms) and RMSNorms over the full query and key projections."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

OLMO2_DEFAULTS = {**LLAMA_DEFAULTS, "vocab_size": 50304}
OLMO2_LAYOUT = DecoderLayout(norm_placement="post", qk_norm="full")

translate = llama_like(OLMO2_DEFAULTS, OLMO2_LAYOUT)
