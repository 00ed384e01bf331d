"""Gemma 2 (gemma2): Gemma with sandwich norms (four per block), the activation under
hidden_activation, and a 4096-token window in every other layer."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

GEMMA2_LAYOUT = DecoderLayout(
    act_key="hidden_activation", norms_per_block=4, norm_placement="sandwich", sliding_every=2, layer_types_key=True
)

translate = llama_like(
    {
        **LLAMA_DEFAULTS,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "vocab_size": 256000,
        "hidden_activation": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
        "sliding_window": 4096,
    },
    GEMMA2_LAYOUT,
)
