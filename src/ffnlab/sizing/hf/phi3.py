"""Phi-3 (phi3): the LLaMA layout with fused projections (same parameter count) and a 32064 vocabulary.

Its config class validates its own RoPE (transformers 5.25, ``configuration_phi3.py``,
``Phi3Config.validate_rope``): longrope's ``short_factor`` and ``long_factor``, where given, are
lists of numbers, one per pair of rotary dimensions."""

from __future__ import annotations

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys, json_kind, rope_groups, rotary_width, top_partial_rotary
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, llama_like
from ffnlab.validation import show

_llama_like = llama_like(
    {**LLAMA_DEFAULTS, "hidden_size": 3072, "intermediate_size": 8192, "vocab_size": 32064},
    DecoderLayout(qkv_bias_key=None, sliding_every=1),  # sliding_window (default none) in every layer
)


def check_longrope_lists(k: ConfigKeys, pairs: int) -> None:
    """Refuse longrope factor lists that are not ``pairs`` numbers each."""
    for label, group in rope_groups(k.data, k.model_type):
        for key in ("short_factor", "long_factor"):
            value = group.get(key)
            if value is None:
                continue
            numbers = isinstance(value, list) and all(json_kind(x) in ("int", "float") for x in value)
            require(numbers and len(value) == pairs,
                    f"config.json key '{label}.{key}' must list {pairs} numbers (one per pair of rotary "
                    f"dimensions), got {show(value)}: transformers' {k.model_type} config refuses it")


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = _llama_like(k)
    label, group = rope_groups(k.data, k.model_type)[0]
    written = "partial_rotary_factor" in group
    partial = group.get("partial_rotary_factor", top_partial_rotary(k.data, k.model_type))
    if json_kind(partial) in ("int", "float"):  # Phi3Config.validate_rope: int(head width x factor) // 2
        where = f"{label}.partial_rotary_factor" if written else "partial_rotary_factor"
        check_longrope_lists(k, rotary_width(cfg.d_model // cfg.attn.n_heads, partial, where, k.model_type) // 2)
    return cfg
