"""Random small configs for the model types added after the first translators (used by hf_cases.case)."""

from __future__ import annotations

import random
from typing import Any


def _kv(rng: random.Random, n_heads: int) -> int:
    return rng.choice([k for k in range(1, n_heads + 1) if n_heads % k == 0])


def _experts(rng: random.Random) -> tuple[int, int]:
    n = rng.randint(2, 6)
    return n, rng.randint(1, n)


def modern_case(
    mt: str,
    rng: random.Random,
    d: int,
    h: int,
    hd: int,
    layers: int,
    vocab: int,
    ff: int,
    tie: bool,
) -> dict[str, Any]:
    """A small config for the model types added after the first translators (read from transformers' config
    classes: the keys each family's translator reads)."""
    b = lambda: rng.random() < 0.5  # noqa: E731
    kv = _kv(rng, h)
    layers = rng.randint(1, 4)
    base: dict[str, Any] = dict(
        hidden_size=d,
        num_attention_heads=h,
        num_key_value_heads=kv,
        num_hidden_layers=layers,
        vocab_size=vocab,
        intermediate_size=ff,
        tie_word_embeddings=tie,
    )
    n_exp, top = _experts(rng)
    moe_ff = rng.choice([8, 16, 24])
    if mt in (
        "qwen3",
        "gemma3_text",
        "gemma3",
        "hunyuan_v1_dense",
        "exaone4",
        "ministral",
        "olmo3",
        "smollm3",
        "granite",
        "ernie4_5",
        "glm",
        "glm4",
        "olmo2",
        "mistral3",
    ):
        c = dict(base, head_dim=rng.choice([8, 16, 32]))
        if mt in ("olmo2", "olmo3"):  # their q/k norms span hidden_size-derived widths
            c.pop("head_dim")
        c.update(
            {
                "qwen3": dict(attention_bias=b()),
                "granite": dict(attention_bias=b(), mlp_bias=b()),
                "smollm3": dict(attention_bias=b(), mlp_bias=b()),
                "ernie4_5": dict(use_bias=b()),
                "glm": dict(attention_bias=b()),
                "glm4": dict(attention_bias=b()),
                "olmo2": dict(attention_bias=b()),
                "olmo3": dict(attention_bias=b()),
                "hunyuan_v1_dense": dict(attention_bias=b()),
            }.get(mt, {})
        )
        return c
    if mt in ("qwen3_moe", "qwen2_moe"):
        c = dict(
            base,
            num_experts=n_exp,
            num_experts_per_tok=top,
            moe_intermediate_size=moe_ff,
            decoder_sparse_step=rng.choice([1, 2]),
            mlp_only_layers=rng.sample(range(layers), rng.randint(0, 1)),
        )
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
        c = dict(
            base,
            n_routed_experts=n_exp,
            num_experts_per_tok=top,
            moe_intermediate_size=moe_ff,
            n_shared_experts=rng.choice([0, 1, 2]),
            first_k_dense_replace=rng.randint(0, layers),
            kv_lora_rank=rng.choice([8, 16]),
            q_lora_rank=rng.choice([None, 12]),
            qk_rope_head_dim=rng.choice([4, 8]),
            qk_nope_head_dim=rng.choice([4, 12]),
            v_head_dim=rng.choice([4, 8, 12]),
            attention_bias=b(),
            n_group=1,
            topk_group=1,
        )
        c.pop("num_key_value_heads")
        return c
    if mt == "gpt_oss":
        return dict(
            base,
            num_local_experts=n_exp,
            num_experts_per_tok=top,
            head_dim=rng.choice([8, 16]),
            attention_bias=b(),
        )
    if mt in ("llama4_text", "llama4"):
        return dict(
            base,
            head_dim=rng.choice([8, 16]),
            num_local_experts=n_exp,
            num_experts_per_tok=top,
            intermediate_size_mlp=rng.choice([16, 40]),
            interleave_moe_layer_step=rng.choice([1, 2]),
            use_qk_norm=b(),
            attention_bias=b(),
        )
    if mt == "granitemoe":
        return dict(base, num_local_experts=n_exp, num_experts_per_tok=top, attention_bias=b())
    if mt == "starcoder2":
        return dict(base, use_bias=b())
    if mt == "gpt_bigcode":
        return dict(
            n_embd=d,
            n_head=h,
            n_layer=layers,
            vocab_size=vocab,
            n_positions=rng.randint(8, 64),
            n_inner=rng.choice([None, ff]),
            multi_query=b(),
            tie_word_embeddings=tie,
        )
    if mt in ("cohere", "cohere2"):
        c = dict(base, attention_bias=b())
        if mt == "cohere":
            c["use_qk_norm"] = b()
        return c
    if mt == "stablelm":
        return dict(base, use_qkv_bias=b(), qk_layernorm=b(), use_parallel_residual=b())
    if mt == "mpt":
        return dict(
            d_model=d, n_heads=h, n_layers=layers, vocab_size=vocab, tie_word_embeddings=tie
        )
    if mt == "dbrx":
        return dict(
            d_model=d,
            n_heads=h,
            n_layers=layers,
            vocab_size=vocab,  # DBRX refuses tying
            attn_config=dict(kv_n_heads=kv, rope_theta=10000.0),
            ffn_config=dict(ffn_hidden_size=moe_ff, moe_num_experts=n_exp, moe_top_k=top),
        )
    if mt == "phimoe":
        return dict(
            base,
            num_local_experts=n_exp,
            num_experts_per_tok=top,
            attention_bias=b(),
            lm_head_bias=b(),
        )
    if mt == "glm4_moe":
        return dict(
            base,
            head_dim=rng.choice([8, 16]),
            n_routed_experts=n_exp,
            num_experts_per_tok=top,
            moe_intermediate_size=moe_ff,
            n_shared_experts=rng.choice([0, 1, 2]),
            first_k_dense_replace=rng.randint(0, layers),
            use_qk_norm=b(),
            attention_bias=b(),
            n_group=1,
            topk_group=1,
        )
    if mt == "ernie4_5_moe":
        return dict(
            base,
            moe_num_experts=n_exp,
            moe_k=top,
            moe_intermediate_size=moe_ff,
            moe_num_shared_experts=rng.choice([0, 1, 2]),
            moe_layer_start_index=rng.randint(0, 1),
            moe_layer_interval=rng.choice([1, 2]),
        )
    if mt == "hunyuan_v1_moe":  # transformers needs an explicit head_dim here
        return dict(
            base,
            num_experts=n_exp,
            moe_topk=rng.choice([top, [top] * layers]),
            head_dim=rng.choice([8, 16]),
            attention_bias=b(),
        )
    if mt == "gpt_neo":
        return dict(
            hidden_size=d,
            num_heads=h,
            num_layers=2 * layers,
            vocab_size=vocab,
            intermediate_size=rng.choice([None, ff]),
            max_position_embeddings=rng.randint(8, 64),
            attention_types=[[["global", "local"], layers]],
            tie_word_embeddings=tie,
        )
    raise KeyError(mt)  # pragma: no cover


MULTIMODAL_WRAPPERS = {
    "gemma3": "gemma3_text",
    "llama4": "llama4_text",
    "mistral3": "mistral",
    "qwen2_5_vl": "qwen2_5_vl_text",
}
MODERN_TYPES = (
    "qwen3",
    "qwen3_moe",
    "qwen2_moe",
    "gemma3_text",
    "olmo2",
    "olmoe",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
    "llama4_text",
    "granite",
    "granitemoe",
    "starcoder2",
    "gpt_bigcode",
    "cohere",
    "cohere2",
    "stablelm",
    "mpt",
    "dbrx",
    "phimoe",
    "smollm3",
    "glm",
    "glm4",
    "glm4_moe",
    "ernie4_5",
    "ernie4_5_moe",
    "hunyuan_v1_dense",
    "hunyuan_v1_moe",
    "exaone4",
    "ministral",
    "gpt_neo",
    "olmo3",
    "gemma3",
    "llama4",
    "mistral3",
    "qwen2_5_vl",
)
