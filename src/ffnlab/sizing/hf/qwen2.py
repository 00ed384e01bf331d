"""Qwen2 and Qwen2.5 (qwen2): the LLaMA layout with biased q/k/v projections and an unbiased output;
the window of use_sliding_window covers layers from max_window_layers, as Qwen3's."""

from __future__ import annotations

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like
from ffnlab.sizing.hf.qwen3 import qwen_sliding

QWEN2_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "intermediate_size": 22016,
    "vocab_size": 151936,
    "num_key_value_heads": 32,
}

_translate = llama_like(
    QWEN2_DEFAULTS, DecoderLayout(qkv_bias_key=None, qkv_bias=True, out_bias_follows=False)
)


def translate(k: ConfigKeys) -> ModelConfig:
    """Qwen2, and Qwen2.5-VL's text model (qwen2_5_vl_text: max_window_layers 80 by default)."""
    return qwen_sliding(_translate(k), k, max_window_layers=80 if k.model_type == "qwen2_5_vl_text" else 28)
