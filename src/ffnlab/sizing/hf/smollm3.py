"""SmolLM3 (smollm3): the LLaMA layout with GQA and tied embeddings; the layers without RoPE
(no_rope_layers) hold no extra parameters."""

from __future__ import annotations

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys, check_no_rope_layers
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = _translate(k)
    check_no_rope_layers(k.data, k.model_type, cfg.n_layers, empty_is_default=False)
    return cfg


_translate = llama_like(
    {
        **LLAMA_DEFAULTS,
        "vocab_size": 128256,
        "hidden_size": 2048,
        "num_hidden_layers": 36,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "tie_word_embeddings": True,
    },
    DecoderLayout(mlp_bias_key="mlp_bias", layer_types_key=True),
)
