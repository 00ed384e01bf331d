"""GPTBigCode, StarCoder 1 and SantaCoder (gpt_bigcode): GPT-2's layer with multi-query
attention (one key/value head) by default."""

from __future__ import annotations

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.init_buffers import check_init_buffers
from ffnlab.sizing.hf.keys import ConfigKeys


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("n_embd", 768)
    n_heads = k.get("n_head", 12)
    positions = k.get("n_positions", 1024)
    check_init_buffers("gpt_bigcode", {"positions": positions}, None, k.written_name("n_positions"))
    return ModelConfig(
        d_model=d,
        n_layers=k.get("n_layer", 12),
        vocab_size=k.get("vocab_size", 50257),
        ffn=FFNSpec(
            k.act("activation_function", "gelu_pytorch_tanh", gated=False),
            k.get("n_inner", 4 * d),
            bias=True,
        ),
        attn=AttentionSpec(
            n_heads,
            n_kv_heads=1 if k.get("multi_query", True, kind=bool) else n_heads,
            qkv_bias=True,
            out_bias=True,
        ),
        norm="layernorm",
        positions="learned",
        max_positions=positions,
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool),
    )
