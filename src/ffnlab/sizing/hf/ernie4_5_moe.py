"""ERNIE 4.5 MoE (ernie4_5_moe): routed SwiGLU experts (moe_intermediate_size, moe_k of
moe_num_experts) with moe_num_shared_experts fused into one shared MLP, in every
moe_layer_interval-th layer from moe_layer_start_index to moe_layer_end_index; the router keeps
its score-correction bias as a parameter (n_experts values)."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import with_moe
from ffnlab.validation import show

ERNIE_MOE_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "vocab_size": 103424,
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "num_hidden_layers": 28,
    "num_attention_heads": 20,
    "num_key_value_heads": 4,
    "tie_word_embeddings": True,
}


def translate(k: ConfigKeys) -> ModelConfig:
    # the class's validate_architecture allows one MTP layer (5.25), under either name; none is built
    # (validate_architecture compares it with 1: a value that is not a number fails the comparison)
    mtp = k.data.get("num_mtp_layers")
    require(mtp is None or (isinstance(mtp, (int, float)) and not mtp > 1),
            f"config.json: num_mtp_layers / num_nextn_predict_layers is {show(mtp)}: transformers' Ernie 4.5 MoE "
            "config compares it with 1 and supports a single MTP layer")
    cfg = decoder(k, ERNIE_MOE_DEFAULTS, DecoderLayout(qkv_bias_key="use_bias", mlp_bias_key="use_bias"))
    n = cfg.n_layers
    start = k.count("moe_layer_start_index", 1)
    end = k.count("moe_layer_end_index", -1, lo=-1)
    end = n - 1 if end == -1 else end
    step = k.get("moe_layer_interval", 1)
    layers = [i for i in range(n) if (i + 1) % step == 0 and start <= i <= end]
    require(
        not (layers and cfg.ffn.bias),
        "config.json: use_bias=true puts biases on the dense and shared FFNs but not on the routed "
        "experts, which ffnlab cannot express",
    )
    width = k.get("moe_intermediate_size", 1536)
    n_shared = k.count("moe_num_shared_experts", 2)
    moe = replace(
        cfg.ffn,
        d_ff=width,
        n_experts=k.get("moe_num_experts", 64),
        top_k=k.get("moe_k", 6),
        router_bias=True,
        n_shared_experts=1 if n_shared else 0,
        d_shared=n_shared * width if n_shared else None,
    )
    return replace(with_moe(cfg, moe, layers), lm_head_bias=cfg.ffn.bias)
