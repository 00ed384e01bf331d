"""Qwen3 dense (qwen3): the LLaMA layout with an RMSNorm over each query and key head
(head_dim 128 by default); the window of use_sliding_window covers layers from max_window_layers."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder

QWEN3_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "intermediate_size": 22016,
    "vocab_size": 151936,
    "num_key_value_heads": 32,
    "head_dim": 128,
}
QWEN3_LAYOUT = DecoderLayout(qk_norm="head")


def qwen_sliding(cfg: ModelConfig, k: ConfigKeys) -> ModelConfig:
    """Qwen's use_sliding_window: a window in layers max_window_layers and above (explicit
    layer_types win, as in the transformers config class)."""
    if cfg.attn.sliding_window is not None or not k.get("use_sliding_window", False, kind=bool):
        return cfg
    window = k.window("sliding_window", 4096)
    if window is None:  # use_sliding_window with a window of 0 or null: transformers builds it windowless
        return cfg
    first = k.count("max_window_layers", 28)
    layers = tuple(i for i in range(cfg.n_layers) if i >= first)
    if not layers:
        return cfg
    return replace(cfg, attn=replace(cfg.attn, sliding_window=window, sliding_layers=layers))


def translate(k: ConfigKeys) -> ModelConfig:
    return qwen_sliding(decoder(k, QWEN3_DEFAULTS, QWEN3_LAYOUT), k)
