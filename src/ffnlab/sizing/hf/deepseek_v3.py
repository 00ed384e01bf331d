"""DeepSeek-V3 and Kimi K2 (deepseek_v3): DeepSeek-V2's latent attention and layout with 256
routed experts of width 2048 against d_model 7168 (top-8) and one shared expert by default.
Its multi-token-prediction module (num_nextn_predict_layers) is not built by transformers;
ffnlab counts it apart (ParamCounts.mtp), outside the total."""

from __future__ import annotations

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.deepseek_v2 import DEEPSEEK_V2_DEFAULTS, deepseek
from ffnlab.sizing.hf.keys import ConfigKeys

DEEPSEEK_V3_DEFAULTS = {
    **DEEPSEEK_V2_DEFAULTS,
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "mtp": 0,
}


def translate(k: ConfigKeys) -> ModelConfig:
    return deepseek(k, DEEPSEEK_V3_DEFAULTS)
