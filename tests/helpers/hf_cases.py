"""Random small Hugging Face configs, several per supported model_type (shared by tests)."""

from __future__ import annotations

import random
from typing import Any

from hf_cases_modern import MODERN_TYPES, MULTIMODAL_WRAPPERS, modern_case


def _heads(rng: random.Random) -> tuple[int, int, int]:
    head_dim = rng.choice([8, 16, 24, 32])
    n_heads = rng.choice([1, 2, 3, 4, 6])
    return n_heads * head_dim, n_heads, head_dim


def _kv(rng: random.Random, n_heads: int) -> int:
    return rng.choice([k for k in range(1, n_heads + 1) if n_heads % k == 0])


def case(model_type: str, seed: int) -> dict[str, Any]:
    """A config.json dict for ``model_type``; seed 0 keeps only the required keys."""
    rng = random.Random(f"{model_type}-{seed}")
    d, h, hd = _heads(rng)
    layers = rng.randint(1, 3)
    vocab = rng.randint(50, 300)
    ff = rng.randint(1, 5) * rng.choice([16, 24, 40])
    b = lambda: rng.random() < 0.5  # noqa: E731
    tie = b()
    c: dict[str, Any]
    if model_type == "gpt2":
        c = dict(n_embd=d, n_head=h, n_layer=layers, vocab_size=vocab, n_positions=rng.randint(8, 64),
                 n_inner=rng.choice([None, ff]), activation_function=rng.choice(["gelu_new", "relu", "gelu"]),
                 tie_word_embeddings=tie)
    elif model_type == "gptj":
        c = dict(n_embd=d, n_head=h, n_layer=layers, vocab_size=vocab, n_inner=rng.choice([None, ff]),
                 rotary_dim=min(hd, 8), tie_word_embeddings=tie)
    elif model_type == "gpt_neox":
        c = dict(hidden_size=d, num_attention_heads=h, num_hidden_layers=layers, vocab_size=vocab,
                 intermediate_size=ff, attention_bias=b(), tie_word_embeddings=tie)
    elif model_type == "opt":
        c = dict(hidden_size=d, num_attention_heads=h, num_hidden_layers=layers, vocab_size=vocab, ffn_dim=ff,
                 max_position_embeddings=rng.randint(8, 64), enable_bias=b(), do_layer_norm_before=b(),
                 layer_norm_elementwise_affine=b(), word_embed_proj_dim=rng.choice([d, d // 2 or d]),
                 tie_word_embeddings=tie)
    elif model_type == "bloom":
        c = dict(hidden_size=d, n_head=h, n_layer=layers, vocab_size=vocab, tie_word_embeddings=tie)
    elif model_type == "falcon":
        new = b()
        c = dict(hidden_size=d, num_attention_heads=h, num_hidden_layers=layers, vocab_size=vocab,
                 new_decoder_architecture=new, multi_query=b(), parallel_attn=True if new else b(),
                 num_kv_heads=_kv(rng, h) if new else None, bias=b(), ffn_hidden_size=rng.choice([None, ff]),
                 alibi=b(), tie_word_embeddings=tie)
        if new and b():
            c["num_ln_in_parallel_attn"] = rng.choice([1, 2])
    elif model_type in ("llama", "mistral", "mixtral", "qwen2", "phi3", "olmo", "gemma", "gemma2"):
        c = dict(hidden_size=d, num_attention_heads=h, num_key_value_heads=_kv(rng, h), num_hidden_layers=layers,
                 vocab_size=vocab, intermediate_size=ff, tie_word_embeddings=tie)
        if model_type in ("llama", "olmo", "gemma", "gemma2"):
            c["attention_bias"] = b()
        if model_type == "llama":
            c["mlp_bias"] = b()
            c["hidden_act"] = rng.choice(["silu", "gelu", "relu"])
        if model_type in ("llama", "mistral", "mixtral", "gemma", "gemma2") and b():
            c["head_dim"] = rng.choice([8, 16, 32])
        if model_type == "mixtral":
            c["num_local_experts"] = rng.randint(2, 6)
            c["num_experts_per_tok"] = rng.randint(1, 2)
    elif model_type == "phi":
        c = dict(hidden_size=d, num_attention_heads=h, num_key_value_heads=_kv(rng, h), num_hidden_layers=layers,
                 vocab_size=vocab, intermediate_size=ff, qk_layernorm=b(), tie_word_embeddings=tie)
    elif model_type == "t5":
        c = dict(d_model=d, d_kv=rng.choice([8, 16]), num_heads=h, num_layers=layers,
                 num_decoder_layers=rng.choice([None, rng.randint(1, 3)]), d_ff=ff, vocab_size=vocab,
                 relative_attention_num_buckets=rng.choice([8, 32]),
                 feed_forward_proj=rng.choice(["relu", "gated-gelu", "gated-silu"]), tie_word_embeddings=tie)
    elif model_type in MODERN_TYPES:
        c = modern_case(model_type, rng, d, h, hd, layers, vocab, ff, tie)
    else:  # pragma: no cover
        raise KeyError(model_type)
    if seed == 0 and model_type in MODERN_TYPES:  # lean on the class default for tying
        c.pop("tie_word_embeddings", None)
    elif seed == 0:  # lean on the classes' defaults: tying and the MoE shape are left out
        c = {k: v for k, v in c.items()
             if v is not None and k not in ("tie_word_embeddings", "num_local_experts", "num_experts_per_tok")}
    c = {**c, **_pad_inside(MULTIMODAL_WRAPPERS.get(model_type, model_type), c)}
    if model_type in MULTIMODAL_WRAPPERS:  # the text model inside a multimodal config
        c = {"text_config": {"model_type": MULTIMODAL_WRAPPERS[model_type], **c}}
    c = {k: v for k, v in c.items() if v is not None}
    return {"model_type": model_type, **c}


def _pad_inside(model_type: str, c: dict[str, Any]) -> dict[str, Any]:
    """``pad_token_id: 0`` where the type's class default (GLM's 151,329, Phi-3's 32,000) lies
    outside this tiny vocabulary, as a tiny checkpoint of such a type writes it: transformers'
    embedding refuses a padding index outside its table."""
    from transformers import CONFIG_MAPPING

    pad = CONFIG_MAPPING[model_type]().pad_token_id
    vocab = c.get("vocab_size")
    return {"pad_token_id": 0} if isinstance(pad, int) and isinstance(vocab, int) and pad >= vocab else {}


MODEL_TYPES = ("gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "llama", "mistral", "mixtral", "qwen2",
               "gemma", "gemma2", "phi", "phi3", "olmo", "t5", *MODERN_TYPES)
