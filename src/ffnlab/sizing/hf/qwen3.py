"""Qwen3 dense (qwen3): the LLaMA layout with an RMSNorm over each query and key head
(head_dim 128 by default); the window of use_sliding_window covers layers from max_window_layers."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder, layer_types

QWEN3_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "intermediate_size": 22016,
    "vocab_size": 151936,
    "num_key_value_heads": 32,
    "head_dim": 128,
}
QWEN3_LAYOUT = DecoderLayout(qk_norm="head")


def qwen_sliding(cfg: ModelConfig, k: ConfigKeys, pattern: str = "from", max_window_layers: int = 28) -> ModelConfig:
    """Qwen's use_sliding_window, as transformers 5.25's config classes read it: without it the
    config sets sliding_window to none (Qwen2-MoE: 0) and no layer slides, whatever layer_types
    says; with it, the layers layer_types names "sliding_attention", else the family's ``pattern``:
    "from" the layers from max_window_layers on (Qwen2, Qwen3), "odd-below" the 1st, 3rd, ...
    layers below max_window_layers (Qwen2-MoE), "all" every layer (Qwen3-MoE, whose model reads
    no layer_types: its mask and attention take config.sliding_window alone); ``max_window_layers``:
    the class default of that key (Qwen2.5-VL's text model: 80)."""
    if not k.get("use_sliding_window", False, kind=bool):
        return cfg
    window = k.window("sliding_window", 4096)
    if window is None:  # use_sliding_window with a window of 0 or null: transformers builds it windowless
        return cfg
    n = cfg.n_layers
    types = None if pattern == "all" else layer_types(k)
    if types is not None:
        layers = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    elif pattern == "all":
        layers = tuple(range(n))
    else:
        # a threshold the config compares each layer index with (transformers builds any integer)
        edge = k.count("max_window_layers", max_window_layers, lo=None, hi=None)
        layers = tuple(i for i in range(n) if (i >= edge if pattern == "from" else (i + 1) % 2 and i < edge))
    if not layers:
        return cfg
    return replace(cfg, attn=replace(cfg.attn, sliding_window=window, sliding_layers=layers))


def translate(k: ConfigKeys) -> ModelConfig:
    return qwen_sliding(decoder(k, QWEN3_DEFAULTS, QWEN3_LAYOUT), k)
