"""OLMoE (olmoe): 64 fine-grained SwiGLU experts of width intermediate_size (1024 in
OLMoE-1B-7B), top-8, in every layer, no shared expert; RMSNorms over the full q and k, whose
widths transformers takes from hidden_size // heads whatever head_dim says, the q norm
hidden_size wide (a config.json whose head_dim differs, or whose heads do not divide
hidden_size, is not translated: audit counts it through transformers)."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.sizing.hf.llama import LLAMA_DEFAULTS, DecoderLayout, decoder
from ffnlab.sizing.hf.moe import with_moe

OLMOE_DEFAULTS = {
    **LLAMA_DEFAULTS,
    "hidden_size": 2048,
    "intermediate_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "vocab_size": 50304,
}


def translate(k: ConfigKeys) -> ModelConfig:
    cfg = decoder(k, OLMOE_DEFAULTS, DecoderLayout(qk_norm="full"))
    d, n_heads = cfg.d_model, cfg.attn.n_heads
    require(cfg.attn.head_dim in (None, d // n_heads),
            f"config.json: head_dim {cfg.attn.head_dim} != hidden_size // heads {d // n_heads}: OlmoeAttention's "
            "q/k norms keep the latter width; ffnlab does not model that")
    require(d % n_heads == 0, f"config.json: {n_heads} attention heads do not divide hidden_size {d}: "
                              "OlmoeAttention's q norm is hidden_size wide, wider than its queries; ffnlab "
                              "does not model that")
    moe = replace(
        cfg.ffn, n_experts=k.get("num_experts", 64), top_k=k.get("num_experts_per_tok", 8)
    )
    return with_moe(cfg, moe)
