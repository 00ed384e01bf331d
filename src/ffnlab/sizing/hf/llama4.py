"""Llama 4 text (llama4_text): routed SwiGLU experts of width intermediate_size plus one shared
expert of the same width in the MoE layers (moe_layers, or every interleave_moe_layer_step-th),
a dense SwiGLU of intermediate_size_mlp in the others; q/k L2 norms hold no weights."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys, check_no_rope_layers
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import every_nth, layer_list, with_moe

LLAMA4_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "vocab_size": 202048,
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
}


def translate(k: ConfigKeys) -> ModelConfig:
    layout = DecoderLayout(qk_norm="head", qk_norm_kind="none", qk_norm_key="use_qk_norm")
    if "use_qk_norm" not in k.data:
        layout = replace(layout, qk_norm_key=None)  # on by default
    cfg = decoder(k, LLAMA4_DEFAULTS, layout)
    check_no_rope_layers(k.data, k.model_type, cfg.n_layers, empty_is_default=True)
    expert = cfg.ffn.d_ff
    dense = replace(cfg.ffn, d_ff=k.get("intermediate_size_mlp", 16384))
    moe = replace(
        cfg.ffn,
        n_experts=k.get("num_local_experts", 16),
        top_k=k.get("num_experts_per_tok", 1),
        n_shared_experts=1,
        d_shared=expert,
    )
    layers = layer_list(k, "moe_layers")
    if layers is None:
        layers = every_nth(cfg.n_layers, k.get("interleave_moe_layer_step", 1))
    return with_moe(replace(cfg, ffn=dense), moe, layers)
