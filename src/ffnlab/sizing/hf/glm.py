"""GLM-4 0414 predecessors (glm, GLM-4-9B): the LLaMA layout with biased q/k/v (unbiased
output), a fused gate/up projection (same count) and partial RoPE."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

GLM_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "vocab_size": 151552,
    "intermediate_size": 13696,
    "num_hidden_layers": 40,
    "num_key_value_heads": 2,
    "head_dim": 128,
}
GLM_LAYOUT = DecoderLayout(qkv_bias=True, out_bias_follows=False)

translate = llama_like(GLM_DEFAULTS, GLM_LAYOUT)
