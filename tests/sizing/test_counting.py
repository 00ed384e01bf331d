from dataclasses import asdict

import pytest
import torch

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import FFNSpec, ModelConfig, make_config
from ffnlab.sizing.counting import count_params, ffn_params
from ffnlab.sizing.flops import flops_per_token, six_n
from ffnlab.sizing.memory.optimizers import training_memory
from ffnlab.sizing.zoo import find

try:  # imported here, not per test: mutation testing forks its workers after collection
    import transformers
except ImportError:  # pragma: no cover
    transformers = None


def test_gpt2_small_total_matches_published_count():
    # GPT-2 small holds 124,439,808 parameters (transformers' GPT2LMHeadModel, tied head)
    c = count_params(find("gpt2").config())
    assert c.total == 124_439_808
    assert c.non_embedding == 124_439_808 - 50257 * 768 - 1024 * 768


# each part as transformers' own modules hold it: parameters grouped by module name
HF_PARTS = (("embedding", ("embed_tokens", "wte")), ("positions", ("wpe",)), ("attention", ("self_attn.", "attn.")),
            ("ffn", ("mlp.",)), ("lm_head", ("lm_head",)))
HF_BREAKDOWN_CASES = {
    # untied head, GQA, SwiGLU, RMSNorm
    "llama": dict(model_type="llama", hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=100, tie_word_embeddings=False),
    # learned positions, LayerNorm and linear biases, tied head
    "gpt2": dict(model_type="gpt2", n_embd=48, n_layer=2, n_head=4, vocab_size=90, n_positions=32),
    # MoE layer (router, 4 experts, shared expert and its gate) and a dense layer
    "qwen2_moe": dict(model_type="qwen2_moe", hidden_size=32, intermediate_size=96, moe_intermediate_size=24,
                      shared_expert_intermediate_size=48, num_experts=4, num_experts_per_tok=2, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=70, mlp_only_layers=[1],
                      tie_word_embeddings=True),
}


def _hf_parts(config: dict) -> dict[str, int]:
    if transformers is None:
        pytest.skip("transformers is not installed")
    d = dict(config)
    cfg = transformers.AutoConfig.for_model(d.pop("model_type"), pad_token_id=0, bos_token_id=0, eos_token_id=0, **d)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    parts = dict.fromkeys([name for name, _ in HF_PARTS] + ["norms"], 0)
    for name, p in model.named_parameters():  # a tied head is yielded once, as the embedding
        part = next((part for part, keys in HF_PARTS if any(k in name for k in keys)), "norms")
        parts[part] += p.numel()
    return parts


@pytest.mark.parametrize("case", sorted(HF_BREAKDOWN_CASES))
def test_breakdown_and_ffn_share_match_transformers_modules(case):
    from ffnlab.sizing.hf import from_hf_dict

    hf = _hf_parts(HF_BREAKDOWN_CASES[case])
    c = count_params(from_hf_dict(HF_BREAKDOWN_CASES[case]))
    assert {k: getattr(c, k) for k in hf} == hf
    non_embedding = sum(hf.values()) - hf["embedding"] - hf["positions"] - hf["lm_head"]
    assert c.non_embedding == non_embedding
    assert c.ffn_share == pytest.approx(hf["ffn"] / non_embedding)


def test_moe_active_ffn_by_hand():
    # the qwen2_moe case: MoE layer = router 32x4 + 2 of 4 experts (3 x 32 x 24 each) + shared expert
    # (3 x 32 x 48) and its gate (32); dense layer 3 x 32 x 96
    from ffnlab.sizing.hf import from_hf_dict

    c = count_params(from_hf_dict(HF_BREAKDOWN_CASES["qwen2_moe"]))
    assert c.ffn_active == (128 + 2 * 2304 + 4608 + 32) + 9216
    assert c.ffn == (128 + 4 * 2304 + 4608 + 32) + 9216
    assert c.total_active == c.total - 2 * 2304


def test_moe_active_counts_top_k_experts():
    spec = FFNSpec(kind="swiglu", d_ff=100, n_experts=8, top_k=2)
    total, active = ffn_params(64, spec), ffn_params(64, spec, active=True)
    expert = 3 * 64 * 100
    assert total == 64 * 8 + 8 * expert
    assert active == 64 * 8 + 2 * expert


def test_gqa_reduces_kv_projections():
    mha = count_params(make_config(256, 1, 8, 512, kind="swiglu", vocab_size=10))
    gqa = count_params(make_config(256, 1, 8, 512, kind="swiglu", vocab_size=10, n_kv_heads=2))
    assert mha.attention - gqa.attention == 2 * 256 * (256 - 64)


def test_flops_convention():
    cfg = make_config(768, 12, 12, 3072, kind="gelu", vocab_size=50257)
    f = flops_per_token(cfg, seq_len=1024)
    assert f.ffn == 12 * 2 * 2 * 768 * 3072
    assert f.attn_scores == 12 * 4 * 1024 * 768
    assert f.training == 3 * f.forward
    # forward matmul FLOPs = 2 x weights used per token, plus the attention scores
    c = count_params(cfg)
    assert f.forward - f.attn_scores == 2 * (c.total - c.embedding - c.positions - c.norms) + 2 * 768 * 50257
    assert six_n(cfg) == 6 * c.non_embedding


def test_training_memory():
    cfg = make_config(64, 2, 2, 256, vocab_size=100)
    n = count_params(cfg).total
    m = training_memory(cfg, "bf16")
    assert m.weights == 2 * n and m.grads == 2 * n and m.optimizer == 8 * n and m.master_weights == 4 * n
    assert training_memory(cfg, "fp32").master_weights == 0
    with pytest.raises(FfnlabError):
        training_memory(cfg, "fp7")


@pytest.mark.parametrize("kwargs, message", [
    (dict(d_model=100, attn={"n_heads": 3}), "does not divide"),
    (dict(d_model=-4), "positive integer"),
    (dict(ffn={"d_ff": 0}), "positive integer"),
    (dict(ffn={"kind": "tanh"}), "unknown FFN kind"),
    (dict(attn={"n_heads": 12, "n_kv_heads": 5}), "must divide"),
    (dict(ffn={"n_experts": 4, "top_k": 5}), "top_k"),
])
def test_invalid_configs(kwargs, message):
    with pytest.raises(FfnlabError, match=message):
        ModelConfig.from_dict(kwargs)


def test_config_round_trip():
    cfg = make_config(128, 2, 4, 344, kind="swiglu", vocab_size=99, n_kv_heads=2)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg


def test_ffn_breakdown_matches_transformers_modules_and_hand_active():
    from ffnlab.sizing.counting import ffn_breakdown
    from ffnlab.sizing.hf import from_hf_dict

    config = HF_BREAKDOWN_CASES["qwen2_moe"]
    if transformers is None:
        pytest.skip("transformers is not installed")
    d = dict(config)
    cfg = transformers.AutoConfig.for_model(d.pop("model_type"), pad_token_id=0, bos_token_id=0, eos_token_id=0, **d)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    parts = {"dense": 0, "router": 0, "routed": 0, "shared": 0}
    for name, p in model.named_parameters():
        if ".mlp." not in name:
            continue
        part = ("router" if ".mlp.gate." in name else "routed" if ".mlp.experts." in name
                else "shared" if ".mlp.shared_expert" in name else "dense")
        parts[part] += p.numel()
    # the token's 2 of 4 routed experts, 3 x 32 x 24 each, in the one MoE layer
    assert ffn_breakdown(from_hf_dict(config)) == {**parts, "routed_active": 2 * 3 * 32 * 24}


def test_as_dict_carries_every_figure():
    from ffnlab.sizing.hf import from_hf_dict

    # the llama case, as transformers' modules hold it: embedding 100 x 64, untied head 100 x 64,
    # attention 2 x (64 x (64 + 2 x 32) + 64 x 64), SwiGLU 2 x 3 x 64 x 160, norms 2 x 2 x 64 + 64
    got = count_params(from_hf_dict(HF_BREAKDOWN_CASES["llama"])).as_dict()
    assert got == {"embedding": 6400, "positions": 0, "attention": 24576, "ffn": 61440, "norms": 320,
                   "lm_head": 6400, "ffn_active": 61440, "mtp": 0, "total": 99136, "non_embedding": 86336,
                   "total_active": 99136, "ffn_share": pytest.approx(61440 / 86336)}


def test_deepseek_v3_mtp_module_by_hand():
    # DeepSeek-V3 (§2.2; config.json: hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512,
    # qk_rope 64, qk_nope 128, v_head 128, 256 experts of 2048 and one shared, 1 MTP module). The
    # module is one MoE decoder layer, enorm, hnorm, eh_proj (2d -> d) and the head's norm; the
    # embedding and head are the main model's. transformers holds the router's correction bias
    # as a buffer, not a parameter.
    mla = (7168 * 1536 + 1536 + 1536 * 128 * (128 + 64) + 7168 * (512 + 64) + 512
           + 512 * 128 * (128 + 128) + 128 * 128 * 7168)
    assert mla == 187_107_328
    moe = 256 * 7168 + 256 * 3 * 7168 * 2048 + 3 * 7168 * 2048
    layer = mla + moe + 2 * 7168
    mtp = layer + 3 * 7168 + 7168 * 2 * 7168
    c = count_params(find("deepseek-v3").config())
    assert c.mtp == mtp == 11_610_067_968
    assert c.total == 671_026_404_352  # transformers' count of the main model (test_hf_parity)
    assert c.total_with_mtp == c.total + mtp


@pytest.mark.parametrize("kind", ["gelu", "swiglu"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shared", [0, 2])
def test_moe_ffn_params_equal_the_module_ffnlab_trains(kind, bias, shared):
    # ffnlab's MoEFFN (training/nn/ffn.py) holds its parameters in its own layout: stacked expert
    # tensors, per-expert biases, shared experts as dense modules, a scalar shared-expert gate
    from ffnlab.training.nn.ffn import build_ffn

    spec = FFNSpec(kind=kind, d_ff=24, bias=bias, n_experts=4, top_k=2, n_shared_experts=shared,
                   d_shared=40 if shared else None, shared_expert_gate=bool(shared))
    module = build_ffn(16, spec)
    assert ffn_params(16, spec) == sum(p.numel() for p in module.parameters())
    active = ffn_params(16, spec, active=True)
    per_expert = (module.w_in.numel() + module.w_out.numel()
                  + (module.b_in.numel() + module.b_out.numel() if bias else 0)) // 4
    assert type(active) is int and active == ffn_params(16, spec) - 2 * per_expert  # 2 of 4 experts idle


def test_ffn_breakdown_of_a_moe_with_biases_by_hand():
    from ffnlab.sizing.counting import ffn_breakdown

    # gpt-oss style: biases on every expert; 3 layers of 8 experts of 32 at d 16, top 2
    cfg = make_config(16, 3, 2, 32, kind="swiglu", vocab_size=10, bias=True, n_experts=8, top_k=2)
    expert = 3 * 16 * 32 + (2 * 32 + 16)  # gate|up and down weights, their biases
    got = ffn_breakdown(cfg)
    assert got["routed"] == 3 * 8 * expert and got["routed_active"] == 3 * 2 * expert
    assert got["router"] == 3 * 16 * 8 and got["dense"] == got["shared"] == 0


def test_whole_float_sizes_count_as_the_ints_they_stand_for():
    """make_config(768.0, 12, 12, 3072.0) (JSON numbers often arrive so) is the int config: same
    counts, and ints, not 1.2e8 as a float."""
    as_floats = count_params(make_config(768.0, 12.0, 12.0, 3072.0, n_kv_heads=4.0))  # type: ignore[arg-type]
    as_ints = count_params(make_config(768, 12, 12, 3072, n_kv_heads=4))
    assert as_floats == as_ints
    assert all(type(v) is int for v in asdict(as_floats).values()) and type(as_floats.total) is int
    with pytest.raises(FfnlabError, match="^d_ff must be a positive integer, got 3072.5$"):
        make_config(768, 12, 12, 3072.5)  # type: ignore[arg-type]
