import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import FFNSpec, ModelConfig, make_config
from ffnlab.sizing.counting import count_params, ffn_params
from ffnlab.sizing.flops import flops_per_token, six_n, training_memory
from ffnlab.sizing.zoo import find


def test_gpt2_small_total_matches_published_count():
    # GPT-2 small holds 124,439,808 parameters (transformers' GPT2LMHeadModel, tied head)
    c = count_params(find("gpt2").config())
    assert c.total == 124_439_808
    assert c.non_embedding == 124_439_808 - 50257 * 768 - 1024 * 768


def test_breakdown_adds_up_and_ffn_share():
    cfg = make_config(512, 4, 8, 2048, kind="gelu", vocab_size=1000, bias=False)
    c = count_params(cfg)
    assert c.total == c.embedding + c.positions + c.attention + c.ffn + c.norms + c.lm_head
    assert c.ffn == 4 * 2 * 512 * 2048
    assert c.attention == 4 * 4 * 512 * 512
    assert c.ffn_share == pytest.approx(c.ffn / (c.ffn + c.attention + c.norms))


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
