"""GPT-Neo (gpt_neo): GPT-2's layer with unbiased q/k/v (biased output) and alternating global
and local (window_size) attention layers."""

from __future__ import annotations

from ffnlab.errors import require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.hf.init_buffers import check_init_buffers
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.validation import show


def translate(k: ConfigKeys) -> ModelConfig:
    d = k.get("hidden_size", 2048)
    n_layers = k.get("num_layers", 24)
    # transformers 5.25 (models/gpt_neo/configuration_gpt_neo.py): GPTNeoConfig expands
    # attention_types (null: its default) into attention_layers in __post_init__; attention_layers is
    # no field, so one written in config.json is set after that and replaces the expansion, and
    # validate_architecture requires len(attention_layers) == num_layers. GPTNeoAttention
    # (modeling_gpt_neo.py) indexes it by layer and builds only "global" and "local" layers.
    types = k.data.get("attention_types")
    if types is None:
        types = [[["global", "local"], 12]]  # GPTNeoConfig's default
    ok = isinstance(types, list) and all(
        isinstance(t, list) and len(t) == 2 and isinstance(t[0], list) and isinstance(t[1], int)
        for t in types
    )
    require(ok, f"config.json key 'attention_types' must be [[kinds, repeats], ...], got {show(types)}")
    if "attention_layers" in k.data:
        expanded, source = k.data["attention_layers"], "attention_layers"
        require(isinstance(expanded, list), f"config.json key 'attention_layers' must be a list of "
                                            f"'global' / 'local', got {show(expanded)}")
    else:
        expanded, source = [t for kinds, times in types for _ in range(times) for t in kinds], "attention_types"
    require(len(expanded) == n_layers, f"config.json: {source} lists {len(expanded)} layers for "
                                       f"num_layers={n_layers} (transformers requires them equal)")
    odd = sorted({show(t) for t in expanded if t not in ("global", "local")})
    require(not odd, f"config.json: {source} names {', '.join(odd)}: transformers' gpt_neo model builds only "
                     "'global' and 'local' layers")
    local = tuple(i for i, t in enumerate(expanded[:n_layers]) if t == "local")
    positions = k.get("max_position_embeddings", 2048)
    check_init_buffers("gpt_neo", {"positions": positions}, n_layers, k.written_name("max_position_embeddings"))
    window = {"sliding_window": k.get("window_size", 256), "sliding_layers": local} if local else {}
    return ModelConfig(
        d_model=d,
        n_layers=n_layers,
        vocab_size=k.get("vocab_size", 50257),
        ffn=FFNSpec(
            k.act("activation_function", "gelu_new", gated=False),
            k.get("intermediate_size", 4 * d),
            bias=True,
        ),
        attn=AttentionSpec(k.get("num_heads", 16), out_bias=True, **window),
        norm="layernorm",
        positions="learned",
        max_positions=positions,
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool),
    )
