"""DeepSeek-V2 (deepseek_v2): multi-head latent attention (q and kv LoRA ranks, split rope/nope
head widths, v_head_dim), first_k_dense_replace dense layers, then fine-grained routed SwiGLU
experts (moe_intermediate_size) with n_shared_experts shared ones fused into one MLP of
n_shared_experts x moe_intermediate_size (transformers' DeepseekV2Moe)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.moe import with_moe

DEEPSEEK_V2_DEFAULTS: dict[str, Any] = dict(
    vocab_size=102400,
    hidden_size=4096,
    intermediate_size=11008,
    moe_intermediate_size=1407,
    num_hidden_layers=32,
    num_attention_heads=32,
    n_shared_experts=2,
    n_routed_experts=64,
    num_experts_per_tok=None,
    first_k_dense_replace=0,
    kv_lora_rank=512,
    q_lora_rank=1536,
    qk_rope_head_dim=64,
    qk_nope_head_dim=128,
    v_head_dim=128,
    hidden_act="silu",
    mtp=0,
)


def deepseek(k: ConfigKeys, defaults: dict[str, Any]) -> ModelConfig:
    """A DeepSeek-V2/V3-style decoder from config.json with the given class defaults."""
    def g(key: str) -> Any:
        return k.get(key, defaults[key])
    require(
        not k.get("mlp_bias", False, kind=bool),
        "config.json: mlp_bias=true puts biases on the dense and shared FFNs but not on the "
        "routed experts, which ffnlab cannot express",
    )
    bias = k.get("attention_bias", False, kind=bool)
    # an explicit null q_lora_rank (DeepSeek-V2-Lite) projects queries directly
    q_rank = k.data["q_lora_rank"] if "q_lora_rank" in k.data else defaults["q_lora_rank"]
    if q_rank is not None:
        q_rank = k.get("q_lora_rank", q_rank)
    rope = g("qk_rope_head_dim")
    # unused by latent attention, but the attention module divides the heads by it
    require(k.data.get("num_key_value_heads") != 0,
            "config.json key 'num_key_value_heads' is 0: transformers' DeepSeek attention divides the heads by it")
    attn = AttentionSpec(
        g("num_attention_heads"),
        head_dim=rope,
        qkv_bias=bias,
        out_bias=bias,
        q_lora_rank=q_rank,
        kv_lora_rank=g("kv_lora_rank"),
        qk_rope_head_dim=rope,
        qk_nope_head_dim=g("qk_nope_head_dim"),
        v_head_dim=g("v_head_dim"),
    )
    kind = k.act("hidden_act", defaults["hidden_act"], gated=True)
    cfg = ModelConfig(
        d_model=g("hidden_size"),
        n_layers=g("num_hidden_layers"),
        vocab_size=g("vocab_size"),
        ffn=FFNSpec(kind, g("intermediate_size")),
        attn=attn,
        norm="rmsnorm",
        positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool),
        mtp_layers=k.count("num_nextn_predict_layers", defaults["mtp"]),
    )
    n_experts = g("n_routed_experts")
    # DeepSeek-V2's class leaves top-k unset: the parameters do not depend on it, so the count
    # goes on with every expert active (an upper bound) and audit marks what needs it unknown
    top_k = k.get("num_experts_per_tok", defaults["num_experts_per_tok"]) or n_experts
    width = g("moe_intermediate_size")
    n_shared = k.count("n_shared_experts", defaults["n_shared_experts"])
    moe = replace(
        cfg.ffn,
        d_ff=width,
        n_experts=n_experts,
        top_k=top_k,
        n_shared_experts=1 if n_shared else 0,
        d_shared=n_shared * width if n_shared else None,
    )
    first = k.count("first_k_dense_replace", defaults["first_k_dense_replace"])
    return with_moe(cfg, moe, range(first, cfg.n_layers))


def translate(k: ConfigKeys) -> ModelConfig:
    return deepseek(k, DEEPSEEK_V2_DEFAULTS)
