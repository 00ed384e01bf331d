"""SmolLM3 (smollm3): the LLaMA layout with GQA and tied embeddings; the layers without RoPE
(no_rope_layers) hold no extra parameters. Without layer_types, its config makes the layers
without RoPE sliding when use_sliding_window and a sliding_window are set (transformers 5.25,
models/smollm3/configuration_smollm3.py, __post_init__)."""

from __future__ import annotations

import dataclasses

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys, check_no_rope_layers, json_kind
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = _translate(k)
    check_no_rope_layers(k.data, k.model_type, cfg.n_layers, empty_is_default=False)
    chosen = _sliding_layers(k, cfg.n_layers)
    if chosen is not None:
        window = k.window("sliding_window")
        attn = dataclasses.replace(cfg.attn, sliding_window=window if chosen else None, sliding_layers=chosen or None)
        cfg = dataclasses.replace(cfg, attn=attn)
    return cfg


def _sliding_layers(k: ConfigKeys, n_layers: int) -> tuple[int, ...] | None:
    """The layers the built model slides, where the config.json leaves that to the config class
    (no layer_types, use_sliding_window true): None where the family's
    reading of layer_types stands (the model's masks follow layer_types whatever use_sliding_window
    says; its config class requires a bool there)."""
    data = k.data
    if data.get("use_sliding_window") is not True or data.get("layer_types") is not None:
        return None
    if k.window("sliding_window") is None:
        return None
    flags = data.get("no_rope_layers")
    if flags is None:  # one NoPE layer every no_rope_layer_interval layers, as the config computes it
        interval = data.get("no_rope_layer_interval", 4)
        if json_kind(interval) not in ("int", "float") or interval == 0:
            return None
        flags = [int((i + 1) % interval != 0) for i in range(n_layers)]
    if not isinstance(flags, list) or len(flags) < n_layers:
        return None
    return tuple(i for i in range(n_layers) if not flags[i])


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
