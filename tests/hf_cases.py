"""Random small Hugging Face configs, several per supported model_type (shared by tests)."""

from __future__ import annotations

import random
from typing import Any


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
    if model_type in MULTIMODAL_WRAPPERS:  # the text model inside a multimodal config
        c = {"text_config": {"model_type": MULTIMODAL_WRAPPERS[model_type], **c}}
    c = {k: v for k, v in c.items() if v is not None}
    return {"model_type": model_type, **c}


def _experts(rng: random.Random) -> tuple[int, int]:
    n = rng.randint(2, 6)
    return n, rng.randint(1, n)


def modern_case(mt: str, rng: random.Random, d: int, h: int, hd: int, layers: int, vocab: int, ff: int,
                tie: bool) -> dict[str, Any]:
    """A small config for the model types added in issue 9 (read from transformers' config
    classes: the keys each family's translator reads)."""
    b = lambda: rng.random() < 0.5  # noqa: E731
    kv = _kv(rng, h)
    layers = rng.randint(1, 4)
    base: dict[str, Any] = dict(hidden_size=d, num_attention_heads=h, num_key_value_heads=kv,
                                num_hidden_layers=layers, vocab_size=vocab, intermediate_size=ff,
                                tie_word_embeddings=tie)
    n_exp, top = _experts(rng)
    moe_ff = rng.choice([8, 16, 24])
    if mt in ("qwen3", "gemma3_text", "gemma3", "hunyuan_v1_dense", "exaone4", "ministral", "olmo3",
              "smollm3", "granite", "ernie4_5", "glm", "glm4", "olmo2", "mistral3"):
        c = dict(base, head_dim=rng.choice([8, 16, 32]))
        if mt in ("olmo2", "olmo3"):  # their q/k norms span hidden_size-derived widths
            c.pop("head_dim")
        c.update({"qwen3": dict(attention_bias=b()), "granite": dict(attention_bias=b(), mlp_bias=b()),
                  "smollm3": dict(attention_bias=b(), mlp_bias=b()), "ernie4_5": dict(use_bias=b()),
                  "glm": dict(attention_bias=b()), "glm4": dict(attention_bias=b()),
                  "olmo2": dict(attention_bias=b()), "olmo3": dict(attention_bias=b()),
                  "hunyuan_v1_dense": dict(attention_bias=b())}.get(mt, {}))
        return c
    if mt in ("qwen3_moe", "qwen2_moe"):
        c = dict(base, num_experts=n_exp, num_experts_per_tok=top, moe_intermediate_size=moe_ff,
                 decoder_sparse_step=rng.choice([1, 2]), mlp_only_layers=rng.sample(range(layers), rng.randint(0, 1)))
        if mt == "qwen2_moe":
            c.update(shared_expert_intermediate_size=rng.choice([8, 32]), qkv_bias=b())
        else:
            c.update(head_dim=rng.choice([8, 16]))
        return c
    if mt == "qwen2_5_vl":
        return dict(base, head_dim=None)
    if mt == "olmoe":
        return dict(base, num_experts=n_exp, num_experts_per_tok=top, attention_bias=b())
    if mt in ("deepseek_v2", "deepseek_v3"):
        c = dict(base, n_routed_experts=n_exp, num_experts_per_tok=top, moe_intermediate_size=moe_ff,
                 n_shared_experts=rng.choice([0, 1, 2]), first_k_dense_replace=rng.randint(0, layers),
                 kv_lora_rank=rng.choice([8, 16]), q_lora_rank=rng.choice([None, 12]),
                 qk_rope_head_dim=rng.choice([4, 8]), qk_nope_head_dim=rng.choice([4, 12]),
                 v_head_dim=rng.choice([4, 8, 12]), attention_bias=b(), n_group=1, topk_group=1)
        c.pop("num_key_value_heads")
        return c
    if mt == "gpt_oss":
        return dict(base, num_local_experts=n_exp, num_experts_per_tok=top, head_dim=rng.choice([8, 16]),
                    attention_bias=b())
    if mt in ("llama4_text", "llama4"):
        return dict(base, head_dim=rng.choice([8, 16]), num_local_experts=n_exp, num_experts_per_tok=top,
                    intermediate_size_mlp=rng.choice([16, 40]), interleave_moe_layer_step=rng.choice([1, 2]),
                    use_qk_norm=b(), attention_bias=b())
    if mt == "granitemoe":
        return dict(base, num_local_experts=n_exp, num_experts_per_tok=top, attention_bias=b())
    if mt == "starcoder2":
        return dict(base, use_bias=b())
    if mt == "gpt_bigcode":
        return dict(n_embd=d, n_head=h, n_layer=layers, vocab_size=vocab, n_positions=rng.randint(8, 64),
                    n_inner=rng.choice([None, ff]), multi_query=b(), tie_word_embeddings=tie)
    if mt in ("cohere", "cohere2"):
        c = dict(base, attention_bias=b())
        if mt == "cohere":
            c["use_qk_norm"] = b()
        return c
    if mt == "stablelm":
        return dict(base, use_qkv_bias=b(), qk_layernorm=b(), use_parallel_residual=b())
    if mt == "mpt":
        return dict(d_model=d, n_heads=h, n_layers=layers, vocab_size=vocab, tie_word_embeddings=tie)
    if mt == "dbrx":
        return dict(d_model=d, n_heads=h, n_layers=layers, vocab_size=vocab,  # DBRX refuses tying
                    attn_config=dict(kv_n_heads=kv, rope_theta=10000.0),
                    ffn_config=dict(ffn_hidden_size=moe_ff, moe_num_experts=n_exp, moe_top_k=top))
    if mt == "phimoe":
        return dict(base, num_local_experts=n_exp, num_experts_per_tok=top, attention_bias=b(),
                    lm_head_bias=b())
    if mt == "glm4_moe":
        return dict(base, head_dim=rng.choice([8, 16]), n_routed_experts=n_exp, num_experts_per_tok=top,
                    moe_intermediate_size=moe_ff, n_shared_experts=rng.choice([0, 1, 2]),
                    first_k_dense_replace=rng.randint(0, layers), use_qk_norm=b(), attention_bias=b(),
                    n_group=1, topk_group=1)
    if mt == "ernie4_5_moe":
        return dict(base, moe_num_experts=n_exp, moe_k=top, moe_intermediate_size=moe_ff,
                    moe_num_shared_experts=rng.choice([0, 1, 2]), moe_layer_start_index=rng.randint(0, 1),
                    moe_layer_interval=rng.choice([1, 2]))
    if mt == "hunyuan_v1_moe":  # transformers needs an explicit head_dim here
        return dict(base, num_experts=n_exp, moe_topk=rng.choice([top, [top] * layers]),
                    head_dim=rng.choice([8, 16]), attention_bias=b())
    if mt == "gpt_neo":
        return dict(hidden_size=d, num_heads=h, num_layers=2 * layers, vocab_size=vocab,
                    intermediate_size=rng.choice([None, ff]), max_position_embeddings=rng.randint(8, 64),
                    attention_types=[[["global", "local"], layers]], tie_word_embeddings=tie)
    raise KeyError(mt)  # pragma: no cover


MULTIMODAL_WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral",
                       "qwen2_5_vl": "qwen2_5_vl_text"}
MODERN_TYPES = ("qwen3", "qwen3_moe", "qwen2_moe", "gemma3_text", "olmo2", "olmoe", "deepseek_v2",
                "deepseek_v3", "gpt_oss", "llama4_text", "granite", "granitemoe", "starcoder2", "gpt_bigcode",
                "cohere", "cohere2", "stablelm", "mpt", "dbrx", "phimoe", "smollm3", "glm", "glm4", "glm4_moe",
                "ernie4_5", "ernie4_5_moe", "hunyuan_v1_dense", "hunyuan_v1_moe", "exaone4", "ministral",
                "gpt_neo", "olmo3", "gemma3", "llama4", "mistral3", "qwen2_5_vl")

MODEL_TYPES = ("gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "llama", "mistral", "mixtral", "qwen2",
               "gemma", "gemma2", "phi", "phi3", "olmo", "t5", *MODERN_TYPES)
