"""Gemma (gemma): GeGLU, head_dim 256, tied embeddings."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, llama_like

translate = llama_like(
    {
        **LLAMA_DEFAULTS,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "head_dim": 256,
        "vocab_size": 256000,
        "hidden_act": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
    }
)
