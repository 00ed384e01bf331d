"""EXAONE 4.0 (exaone4): RMSNorm after each sub-layer ("post" placement), an RMSNorm over each
query and key head, unbiased projections; three sliding-window layers to each global one."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

translate = llama_like(
    {**LLAMA_DEFAULTS, "vocab_size": 102400, "intermediate_size": 16384, "sliding_window": 4096},
    DecoderLayout(qkv_bias_key=None, norm_placement="post", qk_norm="head", sliding_every=4, pattern_key=True,
                  layer_types_key=True),
)
