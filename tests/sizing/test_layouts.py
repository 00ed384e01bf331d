"""Per-layer FFN layouts, latent attention, q/k norms, sinks, MTP: counts and FLOPs by hand."""

import json

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.audit import audit_config
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
from ffnlab.sizing.counting import attention_params, count_params, ffn_breakdown
from ffnlab.sizing.flops import flops_per_token
from ffnlab.sizing.hf import from_hf_dict

D, V = 64, 100
MOE = FFNSpec(
    "swiglu",
    32,
    n_experts=4,
    top_k=2,
    n_shared_experts=1,
    d_shared=48,
    shared_expert_gate=True,
    router_bias=True,
)
DENSE = FFNSpec("swiglu", 96)
# DeepSeek-style MLA: the shapes transformers' DeepseekV3Attention builds for these settings
MLA = AttentionSpec(
    4, q_lora_rank=24, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=12, v_head_dim=10
)


def layered(attn: AttentionSpec = AttentionSpec(4), **kw) -> ModelConfig:
    return validate(
        ModelConfig(
            d_model=D,
            n_layers=3,
            vocab_size=V,
            ffn=MOE,
            dense_layers=(0,),
            dense_ffn=DENSE,
            attn=attn,
            norm="rmsnorm",
            positions="rope",
            **kw,
        )
    )


def test_per_layer_layout_counts_each_layer():
    cfg = layered()
    dense = 3 * D * 96
    expert = 3 * D * 32
    moe = (
        (D * 4 + 4) + 4 * expert + 3 * D * 48 + D
    )  # router + bias, experts, shared expert, its gate
    moe_active = (D * 4 + 4) + 2 * expert + 3 * D * 48 + D
    c = count_params(cfg)
    assert c.ffn == dense + 2 * moe
    assert c.ffn_active == dense + 2 * moe_active
    assert cfg.moe_layers == 2 and [f.is_moe for f in cfg.layer_ffns()] == [False, True, True]
    parts = ffn_breakdown(cfg)
    assert parts == {
        "dense": dense,
        "router": 2 * (D * 4 + 4),
        "routed": 2 * 4 * expert,
        "shared": 2 * (3 * D * 48 + D),
        "routed_active": 2 * 2 * expert,
    }
    f = flops_per_token(cfg, 8)
    # two FLOPs per weight used: router, two routed experts, the shared expert and its gate
    assert f.ffn == 2 * dense + 2 * 2 * (D * 4 + 2 * expert + 3 * D * 48 + D)


def test_latent_attention_matches_transformers_shapes():
    cfg = validate(
        ModelConfig(
            d_model=D,
            n_layers=1,
            vocab_size=V,
            ffn=DENSE,
            attn=MLA,
            norm="rmsnorm",
            positions="rope",
        )
    )
    # q_a (24x64) + q_a_norm (24) + q_b (80x24) + kv_a (24x64) + kv_a_norm (16)
    # + kv_b (88x16) + o (64x40)
    assert attention_params(cfg) == 24 * 64 + 24 + 80 * 24 + 24 * 64 + 16 + 88 * 16 + 64 * 40
    f = flops_per_token(cfg, 8)
    assert f.qkv == 2 * (
        24 * 64 + 80 * 24 + 24 * 64 + 88 * 16
    )  # two FLOPs per weight of each matmul
    assert f.attn_out == 2 * 64 * 40
    assert f.attn_scores == 2 * 8 * 4 * (
        20 + 10
    )  # QK^T over 20-wide q/k heads, AV over 10-wide values
    direct = validate(
        ModelConfig(
            d_model=D,
            n_layers=1,
            vocab_size=V,
            ffn=DENSE,
            norm="rmsnorm",
            attn=AttentionSpec(
                4,
                kv_lora_rank=16,
                qk_rope_head_dim=8,
                qk_nope_head_dim=12,
                v_head_dim=10,
                qkv_bias=True,
                out_bias=True,
            ),
        )
    )
    assert attention_params(direct) == 80 * 64 + (24 * 64 + 24) + 16 + 88 * 16 + 64 * 40 + 64


@pytest.mark.parametrize(
    "width, kind, extra",
    [
        ("head", "rmsnorm", 2 * 8),
        ("head", "layernorm", 2 * 2 * 8),
        ("full", "rmsnorm", 32 + 16),
        ("full", "none", 0),
    ],
)
def test_qk_norm_widths(width, kind, extra):
    base = AttentionSpec(4, n_kv_heads=2, head_dim=8)
    plain = validate(ModelConfig(d_model=D, attn=base))
    normed = validate(
        ModelConfig(
            d_model=D,
            attn=AttentionSpec(
                4, n_kv_heads=2, head_dim=8, qk_norm=True, qk_norm_kind=kind, qk_norm_width=width
            ),
        )
    )
    assert attention_params(normed) - attention_params(plain) == extra


def test_sinks_and_mtp():
    sinks = layered(attn=AttentionSpec(4, sinks=True))
    assert count_params(sinks).attention - count_params(layered()).attention == 3 * 4
    mtp = layered(mtp_layers=2)
    c = count_params(mtp)
    assert c.total == count_params(layered()).total  # transformers builds no MTP module
    layer = c.attention // 3 + (D * 4 + 4 + 4 * 3 * D * 32 + 3 * D * 48 + D) + 2 * D
    assert c.mtp == 2 * (layer + 3 * D + 2 * D * D)
    assert c.total_with_mtp == c.total + c.mtp


def test_sliding_window_flops_and_layers():
    cfg = validate(
        ModelConfig(
            d_model=D,
            n_layers=4,
            vocab_size=V,
            attn=AttentionSpec(4, sliding_window=3, sliding_layers=(0, 2)),
        )
    )
    assert cfg.attention_layers() == ["sliding", "full", "sliding", "full"]
    assert flops_per_token(cfg, 8).attn_scores == 4 * D * (3 + 8 + 3 + 8)
    every = validate(ModelConfig(d_model=D, n_layers=2, attn=AttentionSpec(4, sliding_window=3)))
    assert every.attention_layers() == ["sliding", "sliding"]


def test_round_trip_through_json():
    cfg = layered(attn=MLA, mtp_layers=1, norm_placement="sandwich", norms_per_block=4)
    cfg = validate(cfg)
    back = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg
    assert isinstance(back.dense_ffn, FFNSpec) and back.dense_layers == (0,)
    slide = validate(ModelConfig(attn=AttentionSpec(12, sliding_window=8, sliding_layers=(1,))))
    assert ModelConfig.from_dict(json.loads(json.dumps(slide.to_dict()))) == slide


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(dense_layers=[0]), "dense_ffn"),
        (dict(n_layers=2, dense_layers=[5], dense_ffn={"d_ff": 8}), "outside"),
        (dict(n_layers=2, dense_layers=[1, 1], dense_ffn={"d_ff": 8}), "repeats"),
        (dict(norm_placement="sandwich"), "sandwich block has 3 or 4"),
        (dict(norm_placement="middle"), "norm_placement"),
        (dict(attn={"kv_lora_rank": 8}), "qk_rope_head_dim"),
        (dict(attn={"q_lora_rank": 8}), "kv_lora_rank"),
        (dict(attn={"sliding_layers": [0]}), "sliding_window"),
        (dict(attn={"qk_norm_width": "half"}), "qk_norm_width"),
        (dict(ffn={"router_bias": True}), "n_experts > 0"),
        (dict(mtp_layers=-1), "mtp_layers"),
        (dict(dense_layers="0"), "list of layer indices"),
    ],
)
def test_invalid_layouts(kwargs, message):
    with pytest.raises(FfnlabError, match=message):
        ModelConfig.from_dict(kwargs)


def test_audit_moe_figures_by_hand():
    row = audit_config(layered(), name="toy", model_type=None).as_dict()
    expert, shared = 3 * D * 32, 3 * D * 48 + D
    assert row["expert_granularity"] == 32 / D and row["expert_design"] == "fine-grained"
    assert row["moe_layers"] == 2 and row["n_shared_experts"] == 1 and row["d_shared"] == 48
    assert row["params_ffn_active"] == 3 * D * 96 + 2 * (D * 4 + 4 + 2 * expert + shared)
    assert row["ratio_active_param_matched"] == row["params_ffn_active"] / 3 / (2 * D * D)
    assert row["shared_share"] == shared / (2 * expert + shared)
    assert row["routed_share"] == pytest.approx(1 - row["shared_share"])
    assert (
        row["flops_seq_len"] == 4096
        and row["flops_per_token"] > 0
        and row["training_memory_bytes"] > 0
    )
    dense = audit_config(
        validate(ModelConfig(d_model=D, vocab_size=V, attn=AttentionSpec(4))),
        name="dense",
        model_type=None,
    ).as_dict()
    assert dense["expert_granularity"] is None and dense["params_ffn_active"] == dense["params_ffn"]


def test_translator_refusals_name_the_key():
    with pytest.raises(FfnlabError, match="mlp_bias"):
        from_hf_dict({"model_type": "deepseek_v2", "mlp_bias": True, "num_experts_per_tok": 2})
    with pytest.raises(FfnlabError, match="per-layer values"):
        from_hf_dict({"model_type": "hunyuan_v1_moe", "moe_topk": [2, 4], "head_dim": 128})
    with pytest.raises(FfnlabError, match="'num_experts'"):  # an int in transformers 5.25's config
        from_hf_dict({"model_type": "hunyuan_v1_moe", "num_experts": [2, 2], "head_dim": 128})
    with pytest.raises(FfnlabError, match="moe_layers"):
        from_hf_dict({"model_type": "llama4_text", "moe_layers": "all"})
    with pytest.raises(FfnlabError, match="attention_types"):
        from_hf_dict({"model_type": "gpt_neo", "attention_types": ["global"]})
    with pytest.raises(FfnlabError, match="layer_types"):
        from_hf_dict({"model_type": "gemma3_text", "layer_types": "sliding"})
    with pytest.raises(FfnlabError, match="text model_type"):
        from_hf_dict({"model_type": "mistral3", "text_config": {"model_type": "pixtral"}})


def test_multimodal_config_audits_its_text_config(tmp_path):
    from ffnlab.sizing.audit import audit
    from ffnlab.sizing.hf import MULTIMODAL_NOTE

    text = {
        "model_type": "gemma3_text",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "vocab_size": 50,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": text, "vision_config": {}}))
    row = audit(str(path)).as_dict()
    assert row["note"] == MULTIMODAL_NOTE and "text_config" in row["note"]
    assert (
        row["params_total"]
        == count_params(from_hf_dict({**text, "tie_word_embeddings": True})).total
    )


def test_translators_set_the_sliding_layers_transformers_uses():
    # transformers' config classes: Gemma 3 makes every 6th layer global, gpt-oss alternates
    # starting with a sliding layer, explicit layer_types win, Mistral v0.1 slides everywhere
    gemma = from_hf_dict(
        {"model_type": "gemma3_text", "num_hidden_layers": 12, "sliding_window": 512}
    )
    assert gemma.attn.sliding_window == 512
    assert [i for i, t in enumerate(gemma.attention_layers()) if t == "full"] == [5, 11]
    oss = from_hf_dict({"model_type": "gpt_oss", "num_hidden_layers": 4})
    assert (
        oss.attention_layers() == ["sliding", "full", "sliding", "full"]
        and oss.attn.sliding_window == 128
    )
    explicit = from_hf_dict(
        {
            "model_type": "olmo3",
            "num_hidden_layers": 3,
            "layer_types": ["full_attention", "sliding_attention", "full_attention"],
        }
    )
    assert explicit.attention_layers() == ["full", "sliding", "full"]
    assert from_hf_dict({"model_type": "mistral"}).attention_layers() == ["sliding"] * 32
    assert (
        from_hf_dict({"model_type": "mistral", "sliding_window": None}).attn.sliding_window is None
    )
    qwen = from_hf_dict(
        {
            "model_type": "qwen3",
            "num_hidden_layers": 4,
            "use_sliding_window": True,
            "max_window_layers": 2,
            "sliding_window": 64,
        }
    )
    assert qwen.attention_layers() == ["full", "full", "sliding", "sliding"]
