"""ERNIE 4.5 dense (ernie4_5): the LLaMA layout; use_bias puts biases on every projection."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

translate = llama_like(
    {
        **LLAMA_DEFAULTS,
        "vocab_size": 103424,
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "num_hidden_layers": 18,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "tie_word_embeddings": True,
    },
    DecoderLayout(qkv_bias_key="use_bias", mlp_bias_key="use_bias"),
)
