"""The PyTorch modules agree with the sizing model: parameters and matmul FLOPs exactly."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.flops import flops_per_token
from ffnlab.sizing.kinds import FFN_KINDS
from ffnlab.training.nn import MoEFFN, build_model


@st.composite
def ffn_specs(draw, moe: bool):
    n_experts = draw(st.integers(2, 4)) if moe else 0
    return FFNSpec(kind=draw(st.sampled_from(sorted(FFN_KINDS))), d_ff=draw(st.integers(1, 64)),
                   bias=draw(st.booleans()), n_experts=n_experts,
                   top_k=draw(st.integers(1, n_experts)) if moe else 0,
                   n_shared_experts=draw(st.integers(0, 1)) if moe else 0,
                   d_shared=draw(st.one_of(st.none(), st.integers(1, 32))) if moe else None,
                   shared_expert_gate=draw(st.booleans()) if moe else False,
                   router_bias=draw(st.booleans()) if moe else False)


@st.composite
def trainable_configs(draw):
    head_dim = draw(st.sampled_from([4, 8, 12, 16]))
    n_heads = draw(st.integers(1, 4))
    n_kv = draw(st.sampled_from([k for k in range(1, n_heads + 1) if n_heads % k == 0]))
    explicit_hd = draw(st.booleans())
    d_model = n_heads * head_dim if not explicit_hd else draw(st.integers(8, 48))
    moe = draw(st.booleans())
    ffn = draw(ffn_specs(moe))
    n_layers = draw(st.integers(1, 3))
    # a per-layer layout: some layers (DeepSeek's first k, Llama 4's every other) use dense_ffn
    indices = st.lists(st.integers(0, n_layers - 1), unique=True, max_size=n_layers)
    dense_layers = tuple(draw(indices))
    dense_ffn = draw(ffn_specs(False)) if dense_layers or draw(st.booleans()) else None
    qk_norm = draw(st.booleans())
    return validate(ModelConfig(
        d_model=d_model, n_layers=n_layers, vocab_size=draw(st.integers(2, 80)), ffn=ffn,
        dense_layers=dense_layers, dense_ffn=dense_ffn,
        attn=AttentionSpec(n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim if explicit_hd else None,
                           qkv_bias=draw(st.booleans()), out_bias=draw(st.booleans()),
                           qk_norm=qk_norm,
                           qk_norm_kind=draw(st.sampled_from(["layernorm", "rmsnorm"])),
                           qk_norm_width=draw(st.sampled_from(["head", "full"]))),
        norm=draw(st.sampled_from(["layernorm", "rmsnorm", "layernorm-nobias", "none"])),
        positions=draw(st.sampled_from(["rope", "learned", "none"])), max_positions=draw(st.integers(4, 32)),
        tied_embeddings=draw(st.booleans()), lm_head_bias=draw(st.booleans()),
        final_norm=draw(st.booleans())))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trainable_configs())
def test_built_module_has_exactly_the_counted_parameters(cfg):
    model = build_model(cfg, seed=0, max_seq_len=16)
    assert sum(p.numel() for p in model.parameters()) == count_params(cfg).total


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trainable_configs(), st.integers(2, 4))
def test_matmul_flops_agree_with_torch_flop_counter(cfg, seq_len):
    model = build_model(cfg, seed=0, max_seq_len=16)
    idx = torch.randint(0, cfg.vocab_size, (2, seq_len))
    # the MATH backend makes SDPA's two matmuls visible to the counter (full, no causal discount)
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(idx)
    # every matmul of the model is in the FLOP model (router, shared experts and their gate)
    assert counter.get_total_flops() == flops_per_token(cfg, seq_len).forward * idx.numel()


def test_gpt2_small_shape_builds_with_exact_count():
    cfg = validate(ModelConfig(d_model=768, n_layers=12, vocab_size=50257,
                               ffn=FFNSpec("gelu_tanh", 3072, bias=True),
                               attn=AttentionSpec(12, qkv_bias=True, out_bias=True), max_positions=1024))
    with torch.device("meta"):
        model = build_model(cfg)
    assert sum(p.numel() for p in model.parameters()) == 124_439_808


def test_unbuildable_configs_are_refused():
    with pytest.raises(FfnlabError, match="counting only"):
        build_model(ModelConfig(encoder_layers=2))
    with pytest.raises(FfnlabError, match="alibi"):
        build_model(ModelConfig(positions="alibi"))
    refused = {
        "latent attention": ModelConfig(attn=AttentionSpec(12, kv_lora_rank=16, qk_rope_head_dim=8,
                                                           qk_nope_head_dim=8, v_head_dim=8)),
        "sliding-window": ModelConfig(attn=AttentionSpec(12, sliding_window=4)),
        "sinks": ModelConfig(attn=AttentionSpec(12, sinks=True)),
        "sandwich": ModelConfig(norm_placement="sandwich", norms_per_block=4),
        "multi-token": ModelConfig(mtp_layers=1),
    }
    for reason, cfg in refused.items():
        with pytest.raises(FfnlabError, match=reason):
            build_model(cfg)


def test_shared_expert_gate_flops_are_counted():
    # the gate is a d_model x 1 matmul per token: 2 * d_model FLOPs (once left out of the count)
    cfg = validate(ModelConfig(d_model=16, n_layers=1, vocab_size=10, attn=AttentionSpec(2),
                               ffn=FFNSpec("swiglu", 8, n_experts=2, top_k=1, n_shared_experts=1,
                                           shared_expert_gate=True)))
    ungated = validate(ModelConfig(d_model=16, n_layers=1, vocab_size=10, attn=AttentionSpec(2),
                                   ffn=FFNSpec("swiglu", 8, n_experts=2, top_k=1,
                                               n_shared_experts=1)))
    assert flops_per_token(cfg, 4).ffn - flops_per_token(ungated, 4).ffn == 2 * 16


def test_moe_routing_and_aux_loss():
    torch.manual_seed(0)
    moe = MoEFFN(16, FFNSpec(kind="swiglu", d_ff=8, n_experts=4, top_k=2))
    x = torch.randn(3, 5, 16)
    y, aux = moe(x)
    assert y.shape == x.shape
    probs, experts, weights = moe.route(x.reshape(-1, 16))
    assert torch.allclose(weights.sum(-1), torch.ones(15))
    assert experts.shape == (15, 2) and (experts[:, 0] != experts[:, 1]).all()
    # the vectorised dispatch equals a direct per-token computation
    ref = torch.zeros(15, 16)
    xf = x.reshape(-1, 16)
    for t in range(15):
        for j in range(2):
            e = experts[t, j]
            gate, up = (xf[t] @ moe.w_in[e].t()).chunk(2)
            ref[t] += weights[t, j] * (torch.nn.functional.silu(gate) * up) @ moe.w_out[e].t()
    assert torch.allclose(y.reshape(-1, 16), ref, atol=1e-6)
    # aux loss: E * sum(f_e * P_e); equals 1 exactly for perfectly uniform routing
    load = torch.bincount(experts.reshape(-1), minlength=4).float() / 30
    assert aux.item() == pytest.approx(4 * (load * probs.mean(0)).sum().item())
    with torch.no_grad():
        moe.router.weight.zero_()
    _, aux_uniform = moe(x)
    assert aux_uniform.item() == pytest.approx(1.0)  # uniform router probabilities: E * sum(f_e / E) = 1
    y.sum().backward()
    assert moe.w_in.grad is not None and moe.router.weight.grad is not None


def test_moe_balanced_routing_gives_aux_one():
    moe = MoEFFN(4, FFNSpec(kind="gelu", d_ff=4, n_experts=2, top_k=1))
    with torch.no_grad():
        moe.router.weight.copy_(torch.tensor([[10.0, 0, 0, 0], [-10.0, 0, 0, 0]]))
    x = torch.tensor([[1.0, 0, 0, 0], [-1.0, 0, 0, 0]])  # one token per expert, near-certain routing
    _, aux = moe(x)
    assert aux.item() == pytest.approx(1.0, abs=1e-3)


def test_deterministic_by_seed():
    cfg = validate(ModelConfig(d_model=32, n_layers=2, vocab_size=50, ffn=FFNSpec("swiglu", 64),
                               attn=AttentionSpec(4), norm="rmsnorm", positions="rope"))
    a, b = build_model(cfg, seed=3), build_model(cfg, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_export_refuses_what_the_hf_layouts_lack():
    from ffnlab.training.export import layout_for

    base = dict(d_model=16, n_layers=2, vocab_size=10, ffn=FFNSpec("swiglu", 8), norm="rmsnorm",
                positions="rope", attn=AttentionSpec(2))
    assert layout_for(validate(ModelConfig(**base))) == "llama"
    layered = validate(ModelConfig(**base, dense_layers=(0,), dense_ffn=FFNSpec("swiglu", 16)))
    with pytest.raises(FfnlabError, match="per-layer FFN layouts"):
        layout_for(layered)
    normed = validate(ModelConfig(**{**base, "attn": AttentionSpec(2, qk_norm=True)}))
    with pytest.raises(FfnlabError, match="q/k norms"):
        layout_for(normed)
