"""T5, T5 v1.1 and Flan-T5 (t5): encoder-decoder, relative position buckets, plain or gated FFN."""

from __future__ import annotations

from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ACT_PLAIN, GATED_FROM_ACT, ConfigKeys
from ffnlab.validation import show


def _ffn_kind(k: ConfigKeys) -> str:
    """The FFN kind T5's model builds (transformers 5.25, models/t5/configuration_t5.py and
    modeling_t5.py). T5Config checks that feed_forward_proj is ``ACT`` or ``gated-ACT``
    (validate_architecture) and derives ``dense_act_fn`` (ACT; ``gelu_new`` for "gated-gelu") and
    ``is_gated_act`` from it in ``__post_init__``; neither is a field, so config.json's own
    ``dense_act_fn`` / ``is_gated_act``, set after ``__post_init__``, override the derived ones.
    T5LayerFF builds the gated FFN when ``is_gated_act`` is truthy (a null or 0 is not, any
    non-empty string is), and both FFNs call ``ACT2FN[dense_act_fn]`` (a null is refused)."""
    proj = k.get("feed_forward_proj", "relu", kind=str)
    parts = proj.split("-")
    require(len(parts) <= 2 and (len(parts) == 1 or parts[0] == "gated"),
            f"config.json key 'feed_forward_proj': {show(proj)} is not ACT or gated-ACT (transformers' t5 "
            "config refuses it)")
    gated: Any = parts[0] == "gated"
    act: Any = "gelu_new" if proj == "gated-gelu" else parts[-1]
    if "is_gated_act" in k.data:
        gated = k.data["is_gated_act"]
    if "dense_act_fn" in k.data:
        act = k.data["dense_act_fn"]
        require(isinstance(act, str), f"config.json key 'dense_act_fn' must be an activation name, got {show(act)}: "
                                      "transformers' t5 model looks it up in ACT2FN")
    table = GATED_FROM_ACT if gated else ACT_PLAIN
    source = "dense_act_fn" if "dense_act_fn" in k.data else "feed_forward_proj"
    require(act in table, f"config.json key {source!r}: activation {show(act)} is not supported for a "
                          f"{'gated' if gated else 'plain'} FFN (known: {', '.join(sorted(table))})")
    return table[act]


def translate(k: ConfigKeys) -> ModelConfig:
    kind = _ffn_kind(k)
    n_enc = k.get("num_layers", 6)
    n_heads = k.get("num_heads", 8)
    return ModelConfig(
        d_model=k.get("d_model", 512), n_layers=k.get("num_decoder_layers", n_enc), encoder_layers=n_enc,
        vocab_size=k.get("vocab_size", 32128), ffn=FFNSpec(kind, k.get("d_ff", 2048)),
        attn=AttentionSpec(n_heads, head_dim=k.get("d_kv", 64)), norm="rmsnorm",
        positions="relative", relative_buckets=k.get("relative_attention_num_buckets", 32),
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool, null=True))  # null: tied
