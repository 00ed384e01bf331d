"""GLM-4.5 (glm4_moe): the DeepSeek-V3 MoE layout (first_k_dense_replace dense layers, routed
experts of moe_intermediate_size, n_shared_experts fused into one MLP) on GQA attention with
biased q/k/v and optional per-head q/k RMSNorms. Its multi-token-prediction layer
(num_nextn_predict_layers) is not built by transformers and is counted apart."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import with_moe

GLM4_MOE_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "vocab_size": 151552,
    "intermediate_size": 10944,
    "num_hidden_layers": 46,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
}


def translate(k: ConfigKeys) -> ModelConfig:
    layout = DecoderLayout(out_bias_follows=False, qk_norm="head", qk_norm_key="use_qk_norm")
    cfg = decoder(k, GLM4_MOE_DEFAULTS, layout)
    cfg = replace(cfg, mtp_layers=k.count("num_nextn_predict_layers", 0))
    width = k.get("moe_intermediate_size", 1408)
    n_shared = k.count("n_shared_experts", 1)
    moe = replace(
        cfg.ffn,
        d_ff=width,
        n_experts=k.get("n_routed_experts", 128),
        top_k=k.get("num_experts_per_tok", 8),
        n_shared_experts=1 if n_shared else 0,
        d_shared=n_shared * width if n_shared else None,
    )
    first = k.count("first_k_dense_replace", 1)
    return with_moe(cfg, moe, range(first, cfg.n_layers))
