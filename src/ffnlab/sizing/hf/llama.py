"""LLaMA (llama) and the decoders that share its layout: RMSNorm, RoPE, a gated FFN, GQA.

``decoder`` reads the keys every LLaMA-family config.json shares, with the defaults of the
corresponding ``transformers`` config class; ``llama_like`` turns that into a translator. The
family modules beside this one call them and change what their family changes (q/k norms,
norm placement, MoE layers, sliding windows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.rules import HEADS_DIVIDE_HIDDEN
from ffnlab.validation import show


@dataclass(frozen=True)
class DecoderLayout:
    """How a family lays out its decoder layer (everything not read from config.json)."""

    qkv_bias_key: str | None = "attention_bias"  # the key that switches the q/k/v biases on
    qkv_bias: bool = False  # the default (or fixed value, without a key) of those biases
    out_bias_follows: bool = True  # the output projection has a bias when q/k/v have one
    norm: str = "rmsnorm"
    norms_per_block: int = 2
    norm_placement: str = "pre"
    act_key: str = "hidden_act"
    mlp_bias_key: str | None = None
    qk_norm: str | None = None  # None, or a q/k norm "head" or "full" wide (RMSNorm by default)
    qk_norm_kind: str = "rmsnorm"
    qk_norm_key: str | None = None  # a boolean key that switches the q/k norm on (Cohere)
    lm_head_bias: bool = False
    sliding_every: int | None = None  # a sliding window in all layers but every n-th (1 = all)
    pattern_key: bool = False  # the family's config class reads ``sliding_window_pattern`` (Gemma 3, ...)
    # the family's model (transformers 5.25) reads ``layer_types``: a layer slides where it says
    # "sliding_attention". Without it or ``sliding_every``, sliding_window and layer_types are not
    # read at all: LLaMA, Gemma, OLMo, GLM, Granite, ... build full attention in every layer whatever
    # the config.json says (tests/sizing/hf/test_hf_sliding.py reads each built model's attention)
    layer_types_key: bool = False


def head_dim(k: ConfigKeys, defaults: dict[str, Any], d: int, n_heads: int) -> int:
    """``head_dim`` from config.json or the class default, else hidden_size // heads rounded down,
    as transformers' config classes compute it; the types whose config refuses heads that do not
    divide hidden_size (:data:`HEADS_DIVIDE_HIDDEN`) are refused the same way."""
    require(k.model_type not in HEADS_DIVIDE_HIDDEN or d % n_heads == 0,
            f"config.json: num_attention_heads={n_heads} does not divide hidden_size={d} "
            f"(transformers' {k.model_type} config requires it)")
    explicit = k.get("head_dim", defaults.get("head_dim"), null=None)
    if explicit is not None:
        return int(explicit)
    require(d >= n_heads, f"config.json: num_attention_heads={n_heads} exceeds hidden_size={d} "
                          "(and no head_dim is given)")
    return d // n_heads


def layer_types(k: ConfigKeys) -> list[Any] | None:
    """config.json's ``layer_types``, for a family whose model reads it: a list, or None."""
    types = k.data.get("layer_types")
    require(types is None or isinstance(types, list),
            f"config.json key 'layer_types' must be a list, got {show(types)}")
    return types


def sliding(
    k: ConfigKeys, n_layers: int, every: int | None, window_default: int | None = None,
    pattern_key: bool = False, types_key: bool = True,
) -> dict[str, Any]:
    """``sliding_window`` and ``sliding_layers`` of AttentionSpec: from ``layer_types`` when the
    config lists them and the family reads them (``types_key``), else the family pattern (every
    n-th layer full, the others sliding)."""
    window = k.window("sliding_window", window_default)
    types = layer_types(k) if types_key else None
    if window is None or (types is None and every is None):
        return {}
    # Gemma 3, Cohere 2, EXAONE 4: every n-th layer global, n from the config when it says
    pattern = k.data.get("sliding_window_pattern") if pattern_key else None
    if isinstance(types, list):
        chosen = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    elif pattern is not None:
        pattern = k.get("sliding_window_pattern", every)
        require(pattern >= 1, f"config.json key 'sliding_window_pattern' must be >= 1, got {pattern}")
        chosen = tuple(i for i in range(n_layers) if (i + 1) % pattern)  # as transformers reads it
    else:
        assert every is not None
        chosen = tuple(i for i in range(n_layers) if every == 1 or (i + 1) % every)
    return {"sliding_window": window, "sliding_layers": chosen} if chosen else {}


def decoder(k: ConfigKeys, defaults: dict[str, Any], lay: DecoderLayout = DecoderLayout()) -> ModelConfig:
    """A LLaMA-family decoder with a dense gated FFN of width ``intermediate_size``."""
    d = k.get("hidden_size", defaults["hidden_size"])
    n_heads = k.get("num_attention_heads", defaults["num_attention_heads"])
    n_layers = k.get("num_hidden_layers", defaults["num_hidden_layers"])
    qb = k.get(lay.qkv_bias_key, lay.qkv_bias, kind=bool) if lay.qkv_bias_key else lay.qkv_bias
    qk_on = lay.qk_norm is not None and (
        lay.qk_norm_key is None or k.get(lay.qk_norm_key, False, kind=bool)
    )
    ffn = FFNSpec(
        k.act(lay.act_key, defaults[lay.act_key], gated=True),
        k.get("intermediate_size", defaults["intermediate_size"]),
        bias=k.get(lay.mlp_bias_key, False, kind=bool) if lay.mlp_bias_key else False,
    )
    attn = AttentionSpec(
        n_heads,
        n_kv_heads=k.get("num_key_value_heads", defaults.get("num_key_value_heads") or n_heads, null=n_heads),
        head_dim=head_dim(k, defaults, d, n_heads),
        qkv_bias=qb,
        out_bias=qb and lay.out_bias_follows,
        qk_norm=qk_on,
        qk_norm_kind=lay.qk_norm_kind,
        qk_norm_width=lay.qk_norm or "head",
        **(sliding(k, n_layers, lay.sliding_every, defaults.get("sliding_window"), lay.pattern_key,
                   lay.layer_types_key) if lay.sliding_every is not None or lay.layer_types_key else {}),
    )
    return ModelConfig(
        d_model=d,
        n_layers=n_layers,
        vocab_size=k.get("vocab_size", defaults["vocab_size"]),
        ffn=ffn,
        attn=attn,
        norm=lay.norm,
        norms_per_block=lay.norms_per_block,
        norm_placement=lay.norm_placement,
        positions="rope",
        lm_head_bias=lay.lm_head_bias,
        tied_embeddings=k.get("tie_word_embeddings", defaults["tie_word_embeddings"], kind=bool),
    )


def llama_like(
    defaults: dict[str, Any], layout: DecoderLayout = DecoderLayout()
) -> Callable[[ConfigKeys], ModelConfig]:
    """A translator for a LLaMA-family decoder with a dense FFN."""

    def translate(k: ConfigKeys) -> ModelConfig:
        return decoder(k, defaults, layout)

    return translate


LLAMA_DEFAULTS = dict(
    hidden_size=4096,
    num_attention_heads=32,
    num_hidden_layers=32,
    intermediate_size=11008,
    vocab_size=32000,
    hidden_act="silu",
    tie_word_embeddings=False,
)


translate = llama_like(LLAMA_DEFAULTS, DecoderLayout(mlp_bias_key="mlp_bias"))
