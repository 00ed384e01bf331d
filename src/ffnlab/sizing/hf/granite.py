"""IBM Granite 3 dense (granite): the LLaMA layout; its embedding, residual, attention and
logit multipliers scale activations and hold no parameters."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

translate = llama_like(LLAMA_DEFAULTS, DecoderLayout(mlp_bias_key="mlp_bias"))
