"""T5, T5 v1.1 and Flan-T5 (t5): encoder-decoder, relative position buckets, plain or gated FFN."""

from __future__ import annotations

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ACT_PLAIN, ConfigKeys
from ffnlab.validation import show


def translate(k: ConfigKeys) -> ModelConfig:
    proj = k.get("feed_forward_proj", "relu", kind=str)
    gated = proj.startswith("gated-")
    act = proj.split("-", 1)[1] if gated else proj
    if gated:
        kind = {"gelu": "geglu", "silu": "swiglu", "relu": "reglu", "gelu_new": "geglu"}.get(act)
    else:
        kind = ACT_PLAIN.get(act)
    require(kind is not None, f"config.json key 'feed_forward_proj': {show(proj)} is not supported")
    assert kind is not None  # the require above
    n_enc = k.get("num_layers", 6)
    n_heads = k.get("num_heads", 8)
    return ModelConfig(
        d_model=k.get("d_model", 512), n_layers=k.get("num_decoder_layers", n_enc), encoder_layers=n_enc,
        vocab_size=k.get("vocab_size", 32128), ffn=FFNSpec(kind, k.get("d_ff", 2048)),
        attn=AttentionSpec(n_heads, head_dim=k.get("d_kv", 64)), norm="rmsnorm",
        positions="relative", relative_buckets=k.get("relative_attention_num_buckets", 32),
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool, null=True))  # null: tied
