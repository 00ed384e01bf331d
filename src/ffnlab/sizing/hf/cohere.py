"""Cohere Command R (cohere): a parallel block (attention and FFN read one LayerNorm without
bias), tied embeddings, and with use_qk_norm a bias-free LayerNorm over each query and key
head, with its own weights per head."""

from __future__ import annotations

from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like

COHERE_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "vocab_size": 256000,
    "hidden_size": 8192,
    "intermediate_size": 22528,
    "num_hidden_layers": 40,
    "num_attention_heads": 64,
    "tie_word_embeddings": True,
}
COHERE_LAYOUT = DecoderLayout(
    norm="layernorm-nobias",
    norms_per_block=1,
    norm_placement="parallel",
    qk_norm="full",
    qk_norm_kind="layernorm-nobias",
    qk_norm_key="use_qk_norm",
)

translate = llama_like(COHERE_DEFAULTS, COHERE_LAYOUT)
