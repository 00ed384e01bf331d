"""Gemma 3 text (gemma3_text): Gemma 2's sandwich norms plus an RMSNorm over each query and
key head; five sliding-window layers (4096 tokens) to each global one by default."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

GEMMA3_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "vocab_size": 262208,
    "hidden_activation": "gelu_pytorch_tanh",
    "tie_word_embeddings": True,
    "sliding_window": 4096,
}

translate = llama_like(
    GEMMA3_DEFAULTS,
    DecoderLayout(
        act_key="hidden_activation",
        norms_per_block=4,
        norm_placement="sandwich",
        qk_norm="head",
        sliding_every=6,
        pattern_key=True,
        layer_types_key=True,
    ),
)
