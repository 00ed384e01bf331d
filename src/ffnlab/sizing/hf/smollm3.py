"""SmolLM3 (smollm3): the LLaMA layout with GQA and tied embeddings; the layers without RoPE
(no_rope_layers) hold no extra parameters."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

translate = llama_like(
    {
        **LLAMA_DEFAULTS,
        "vocab_size": 128256,
        "hidden_size": 2048,
        "num_hidden_layers": 36,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "tie_word_embeddings": True,
    },
    DecoderLayout(mlp_bias_key="mlp_bias"),
)
