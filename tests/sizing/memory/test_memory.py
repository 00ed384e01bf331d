"""Every memory term against hand arithmetic (pure Python, no torch)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, make_config
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.flops import ffn_flops, flops_per_token
from ffnlab.sizing.memory.activations import activation_memory, kv_cache, weight_bytes
from ffnlab.sizing.memory.fit import fit
from ffnlab.sizing.memory.hardware import find_accelerator, load_accelerators, training_time
from ffnlab.sizing.memory.parallel import Layout, memory_summary, serving_table, training_table
from ffnlab.sizing.memory.sharding import Sharding
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.zoo import find as find_zoo

GiB = 2**30


def llama3_8b() -> ModelConfig:
    # meta-llama/Meta-Llama-3-8B config.json: 4096 wide, 32 layers, 32 heads, 8 KV heads, 14336, 128256
    return make_config(4096, 32, 32, 14336, kind="swiglu", n_kv_heads=8, vocab_size=128256, tied_embeddings=False)


def deepseek_v3() -> ModelConfig:
    # deepseek-ai/DeepSeek-V3 config.json: 7168 wide, 61 layers (first 3 dense), 128 heads, MLA with
    # q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128;
    # 256 routed experts of 2048, top 8, 1 shared; dense FFN 18432; vocab 129280
    return ModelConfig(
        d_model=7168, n_layers=61, vocab_size=129280, norm="rmsnorm", positions="rope", tied_embeddings=False,
        attn=AttentionSpec(n_heads=128, q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64,
                           qk_nope_head_dim=128, v_head_dim=128),
        ffn=FFNSpec(kind="swiglu", d_ff=2048, n_experts=256, top_k=8, n_shared_experts=1),
        dense_layers=(0, 1, 2), dense_ffn=FFNSpec(kind="swiglu", d_ff=18432))


# -- KV cache ---------------------------------------------------------------------------------------

def test_kv_llama3_8b_8192_tokens_is_one_gib() -> None:
    kv = kv_cache(llama3_8b(), batch=1, context=8192, kv_dtype="bf16")
    assert kv.total == 2 * 8 * 128 * 32 * 2 * 8192 == GiB
    assert kv.bytes_per_token == 131072


def test_kv_deepseek_v3_latent_and_expanded() -> None:
    cfg = deepseek_v3()
    latent = kv_cache(cfg, batch=1, context=1, kv_dtype="bf16", mla="latent")
    assert latent.bytes_per_token == (512 + 64) * 61 * 2 == 70272
    expanded = kv_cache(cfg, batch=1, context=1, kv_dtype="bf16", mla="expanded")
    assert expanded.bytes_per_token == 128 * (128 + 64 + 128) * 61 * 2  # 4,997,120
    # tensor parallelism replicates the latent, splits the expanded heads
    assert kv_cache(cfg, batch=1, context=1, mla="latent", tp=8).bytes_per_token == 70272
    assert kv_cache(cfg, batch=1, context=1, mla="expanded", tp=8).bytes_per_token == 128 * 320 * 61 * 2 // 8


def test_kv_mha_mqa_dtypes_batch() -> None:
    mha = make_config(768, 12, 12, 3072)
    assert kv_cache(mha, batch=3, context=100, kv_dtype="fp32").total == 2 * 768 * 12 * 4 * 100 * 3
    mqa = make_config(1024, 4, 16, 4096, kind="swiglu", n_kv_heads=1)
    assert kv_cache(mqa, batch=2, context=10, kv_dtype="int4").total == 2 * 64 * 4 * 10 * 2 // 2
    assert kv_cache(mqa, batch=1, context=10, kv_dtype="fp8", tp=4).total == 2 * 64 * 4 * 10  # replicated
    gqa = llama3_8b()
    assert kv_cache(gqa, batch=1, context=10, tp=4).total == 2 * 2 * 128 * 32 * 2 * 10


def test_kv_sliding_window_layers() -> None:
    # Gemma-2 style: a 4096-token window on alternate layers, full attention on the others
    base = make_config(2304, 26, 8, 9216, kind="geglu", n_kv_heads=4, head_dim=256)
    cfg = ModelConfig(**{**base.__dict__, "attn": AttentionSpec(
        n_heads=8, n_kv_heads=4, head_dim=256, sliding_window=4096, sliding_layers=tuple(range(0, 26, 2)))})
    per_tok = 2 * 4 * 256 * 2
    kv = kv_cache(cfg, batch=1, context=8192)
    assert kv.total == 13 * per_tok * 8192 + 13 * per_tok * 4096
    assert kv_cache(cfg, batch=1, context=1000).total == 26 * per_tok * 1000  # window not reached
    every = ModelConfig(**{**base.__dict__, "attn": AttentionSpec(n_heads=8, n_kv_heads=4, head_dim=256,
                                                                 sliding_window=128)})
    assert kv_cache(every, batch=2, context=8192).total == 26 * per_tok * 128 * 2


# -- weights for serving ----------------------------------------------------------------------------

def test_quantised_weight_bytes_with_group_scales() -> None:
    cfg = make_config(256, 2, 4, 1024, kind="swiglu", vocab_size=1000)
    c = count_params(cfg)
    q = c.attention + c.ffn  # 2 x (4 x 256^2 + 3 x 256 x 1024) = 2,097,152
    assert q == 2 * (4 * 256 * 256 + 3 * 256 * 1024)
    rest = c.total - q
    w4 = weight_bytes(cfg, "int4", group_size=128)
    assert (w4.data, w4.scales, w4.kept) == (q // 2, q // 128 * 2, 2 * rest)
    w8 = weight_bytes(cfg, "int8", group_size=64, zero_point=True)
    assert w8.total == q + q // 64 * 4 + 2 * rest
    # per-tensor fp8: one fp32 scale for each of the 2 x 7 matrices (q, k, v, o, gate, up, down)
    assert weight_bytes(cfg, "fp8").total == q + 2 * 7 * 4 + 2 * rest
    assert weight_bytes(cfg, "bf16").total == 2 * c.total
    assert weight_bytes(cfg, "fp32").total == 4 * c.total
    with pytest.raises(FfnlabError):
        weight_bytes(cfg, "int3")


# -- activations ------------------------------------------------------------------------------------

def small_gelu() -> ModelConfig:
    return make_config(64, 2, 4, 256, kind="gelu", vocab_size=97, max_positions=32)  # LayerNorm, learned


# per token, bf16: norm 128 + 8, qkv input 128, qkv 384, lse 16, out 128, norm 128 + 8, ffn input 128,
# gelu hidden 2 x 256 x 2 = 1024
GELU_LAYER = 128 + 8 + 128 + 384 + 16 + 128 + 128 + 8 + 128 + 1024  # 2080
# token ids 8, final norm 128 + 8, head input 128, fp32 log-softmax 97 x 4, targets 8; positions 32 x 8
GELU_HEAD = 64 * (8 + 136 + 128 + 388 + 8) + 256  # 43,008


def test_activations_dense_by_policy() -> None:
    cfg = small_gelu()
    a = activation_memory(cfg, seq_len=32, batch=2, dtype="bf16")
    assert a.per_layer == [64 * GELU_LAYER] * 2 and a.head == GELU_HEAD
    assert a.total == 2 * 64 * 2080 + 43008 == 309248
    assert activation_memory(cfg, seq_len=32, batch=2, recompute="selective").total == a.total  # fused
    full = activation_memory(cfg, seq_len=32, batch=2, recompute="full")
    assert full.per_layer == [64 * 64 * 2] * 2 and full.recompute_peak == 64 * GELU_LAYER
    assert full.total == 2 * 8192 + 133120 + 43008
    fp32 = activation_memory(cfg, seq_len=32, batch=2, dtype="fp32")
    assert fp32.per_layer[0] == 64 * (2 * (GELU_LAYER - 8 - 8 - 16) + 8 + 8 + 16)  # stats stay 4 B


def test_activations_eager_and_selective() -> None:
    cfg = small_gelu()
    eager = activation_memory(cfg, seq_len=32, batch=2, attention="eager")
    # q, k, v copies 3 x 64 x 2 = 384 (= the fused q|k|v for MHA); probabilities 4 heads x 32 x 2 B
    assert eager.per_layer[0] == 64 * (GELU_LAYER - 16 + 4 * 32 * 2)
    sel = activation_memory(cfg, seq_len=32, batch=2, attention="eager", recompute="selective")
    assert sel.per_layer[0] == 64 * (GELU_LAYER - 16)


def test_activations_tensor_and_sequence_parallel() -> None:
    cfg = small_gelu()
    tp = activation_memory(cfg, seq_len=32, batch=2, tp=2)
    split = 64 * (384 + 16 + 128 + 1024)
    assert tp.per_layer[0] == split // 2 + 64 * GELU_LAYER - split
    assert tp.head == GELU_HEAD - 64 * 388 // 2  # vocab-parallel logits
    sp = activation_memory(cfg, seq_len=32, batch=2, tp=2, sp=True)
    assert sp.per_layer[0] == 64 * GELU_LAYER // 2
    assert sp.head == 64 * 8 * 2 + 256 + 64 * (136 + 128 + 388) // 2


def test_activations_gated_rope_and_moe_capacity() -> None:
    cfg = make_config(64, 1, 4, 256, kind="swiglu", vocab_size=97, n_experts=4, top_k=2)  # RMSNorm, RoPE
    attn = (256 + 4) + 128 + 384 + 256 + 16 + 128  # norm (x, x_hat, rstd), input, qkv, rotated q k, lse, out
    ffn_norm = (256 + 4) + 128
    router = 4 * 4 + 2 * 8 + 3 * 4
    routed = 2 * (128 + 8) + 2 * 4 * 256 * 2 + 2 * (2 * 128 + 4 + 8)  # dispatch, hidden, combine
    a = activation_memory(cfg, seq_len=16, batch=1)
    assert a.per_layer == [16 * (attn + ffn_norm + router + routed)]
    cap = activation_memory(cfg, seq_len=16, batch=1, capacity_factor=1.25)
    assert cap.per_layer == [16 * (attn + ffn_norm + router) + math.ceil(16 * routed * 1.25)]
    dense = make_config(64, 1, 4, 256, kind="swiglu", vocab_size=97)
    assert activation_memory(dense, seq_len=16).per_layer == [16 * (attn + ffn_norm + 4 * 256 * 2)]


def test_activations_norm_layouts() -> None:
    base = small_gelu()
    parallel = ModelConfig(**{**base.__dict__, "norms_per_block": 1})  # GPT-J: one norm feeds both
    assert activation_memory(parallel, seq_len=32, batch=2).per_layer[0] == 64 * (GELU_LAYER - 128 - 8 - 128)
    sandwich = ModelConfig(**{**base.__dict__, "norms_per_block": 4})  # Gemma-2: two post-norms
    assert activation_memory(sandwich, seq_len=32, batch=2).per_layer[0] == 64 * (GELU_LAYER + 2 * (128 + 8))


def test_activations_mla_and_per_layer_ffns() -> None:
    a = activation_memory(deepseek_v3(), seq_len=1, batch=1)
    attn = ((2 * 7168 * 2 + 4) + 7168 * 2  # RMSNorm, attention input
            + 2 * 1536 * 2 + 2 * (512 + 64) * 2  # q latent and its norm, kv latent and its norm
            + (2 * 128 * 192 + 128 * 128) * 2 + 128 * 4 + 128 * 128 * 2)  # q, k, v; lse; output
    ffn_in = (2 * 7168 * 2 + 4) + 7168 * 2
    dense = 4 * 18432 * 2
    moe = (256 * 4 + (8 * 8 + 9 * 4) + 8 * (7168 * 2 + 8) + 8 * 4 * 2048 * 2 + 8 * (2 * 7168 * 2 + 12)
           + 4 * 2048 * 2)  # router, top-k, dispatch, experts, combine, shared expert
    assert a.per_layer[:3] == [attn + ffn_in + dense] * 3
    assert a.per_layer[3:] == [attn + ffn_in + moe] * 58


# -- sharding ---------------------------------------------------------------------------------------

def terms(rows) -> dict[str, int]:
    return {r.term: r.per_gpu_bytes for r in rows}


def test_zero_stages_and_model_parallel_rules() -> None:
    cfg = llama3_8b()
    p = count_params(cfg).total
    work = Workload(seq_len=2048, batch=1)
    base = terms(training_table(cfg, work, Layout(dp=8)))
    assert (base["weights"], base["gradients"], base["optimizer"]) == (2 * p, 2 * p, 12 * p)
    z1 = terms(training_table(cfg, work, Layout(dp=8, zero=1)))
    assert (z1["gradients"], z1["optimizer"]) == (2 * p, math.ceil(12 * p / 8))
    z2 = terms(training_table(cfg, work, Layout(dp=8, zero=2)))
    assert (z2["weights"], z2["gradients"]) == (2 * p, math.ceil(2 * p / 8))
    z3 = terms(training_table(cfg, work, Layout(dp=8, zero=3)))
    assert z3["weights"] == math.ceil(2 * p / 8)
    mp = terms(training_table(cfg, work, Layout(dp=2, tp=2, pp=2, zero=3)))
    assert (mp["weights"], mp["optimizer"]) == (math.ceil(2 * p / 8), math.ceil(12 * p / 8))
    fp32 = terms(training_table(cfg, replace(work, dtype="fp32"), Layout()))
    assert fp32["optimizer"] == 8 * p  # no master copy in fp32
    acts = activation_memory(cfg, seq_len=2048, tp=2, sp=True).total
    assert terms(training_table(cfg, work, Layout(tp=2, pp=4, sp=True)))["activations"] == acts


def test_expert_parallel_rules() -> None:
    cfg = make_config(512, 4, 8, 1024, kind="swiglu", n_experts=8, top_k=2, vocab_size=1000)
    p = count_params(cfg).total
    experts = 4 * 8 * 3 * 512 * 1024
    dense = p - experts
    t = terms(training_table(cfg, Workload(seq_len=128), Layout(dp=4, ep=4)))
    assert t["weights"] == math.ceil(2 * dense + 2 * experts / 4)
    z1 = terms(training_table(cfg, Workload(seq_len=128), Layout(dp=4, ep=2, zero=1)))
    assert z1["optimizer"] == math.ceil(12 * dense / 4 + 12 * experts / 4)
    with pytest.raises(FfnlabError, match="divide"):
        training_table(cfg, Workload(seq_len=128), Layout(dp=2, ep=4))
    with pytest.raises(FfnlabError, match="mixture"):
        training_table(llama3_8b(), Workload(seq_len=128), Layout(dp=2, ep=2))
    with pytest.raises(FfnlabError, match="n_heads"):
        training_table(cfg, Workload(seq_len=128), Layout(tp=3))


def test_serving_table_splits_weights_and_cache() -> None:
    cfg = llama3_8b()
    p = count_params(cfg).total
    rows = terms(serving_table(cfg, Layout(tp=2, pp=2), batch=4, context=8192))
    assert rows["weights"] == math.ceil(2 * p / 4)
    assert rows["kv_cache"] == 4 * GiB // 4


def test_memory_summary_contract() -> None:
    m = memory_summary(llama3_8b(), Workload(seq_len=8192)).as_dict()
    for key in ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "kv_cache_bytes"):
        assert isinstance(m[key], int)
    assert m["kv_cache_bytes"] == GiB
    assert m["training_total_bytes"] == m["peak_bytes"] <= m["terms_sum_bytes"]
    assert m["terms_sum_bytes"] == sum(m[k] for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes",
                                                           "activations_bytes"))


# -- time and fit -----------------------------------------------------------------------------------

def test_every_field_of_the_accelerators_file_reaches_its_accelerator() -> None:
    """Each record's keys are Accelerator fields, each read as the file gives it (aliases as a tuple);
    a field the record leaves out keeps the dataclass default. Oracle: the file parsed here."""
    import dataclasses
    import json

    from paths import ROOT

    records = json.loads((ROOT / "src" / "ffnlab" / "data" / "accelerators.json").read_text())["accelerators"]
    accs = {a.name: a for a in load_accelerators()}
    fields = {f.name: f for f in dataclasses.fields(next(iter(accs.values())))}
    assert len(records) == len(accs)
    for r in records:
        assert set(r) <= set(fields), set(r) - set(fields)
        got = accs[r["name"]]
        for name, f in fields.items():
            want = (tuple(r[name]) if name == "aliases" else r[name]) if name in r else f.default
            assert getattr(got, name) == want, (r["name"], name)


def test_accelerators_have_sources_and_peaks() -> None:
    accs = {a.name: a for a in load_accelerators()}
    assert set(accs) == {"A100-40GB", "A100", "H100", "H200", "B200", "MI300X", "L4", "L40S", "A40", "RTX4090",
                         "RTX-A6000", "RTX-6000-Ada", "RTX3090", "RTX5090"}
    for a in accs.values():
        assert a.source.startswith(("NVIDIA", "AMD")) and "http" in a.source and a.usable_source
        assert a.bf16_tflops and (a.fp8_tflops is None or a.fp8_tflops == pytest.approx(2 * a.bf16_tflops, 0.02))
        # the device reports less than the datasheet's GB read as GiB (the A100s report exactly that)
        assert 0.9 * a.memory_gb * 2**30 < a.memory_bytes <= a.memory_gb * 2**30
    assert accs["A100"].fp8_tflops is None
    with pytest.raises(FfnlabError, match="no fp8"):
        accs["A100"].peak_flops("fp8")
    assert find_accelerator("h100") is accs["H100"] and find_accelerator("a100-80gb") is accs["A100"]
    # the workstation and GeForce cards answer to their usual spellings
    for alias, name in (("rtx-a6000", "RTX-A6000"), ("a6000", "RTX-A6000"), ("rtx-6000-ada", "RTX-6000-Ada"),
                        ("rtx-3090", "RTX3090"), ("3090", "RTX3090"), ("rtx-5090", "RTX5090"), ("5090", "RTX5090")):
        assert find_accelerator(alias) is accs[name]
    # nvidia-smi shows 49140MiB on an RTX A6000 and an RTX 6000 Ada, 24576MiB on an RTX 3090 and 32607MiB on
    # an RTX 5090 (public nvidia-smi dumps); CUDA's deviceQuery gives 51160023040, 51002867712, 25447170048 and
    # 33677180928 bytes on an A6000, a 6000 Ada, a 3090 (those three with ECC off) and a 5090, each below
    # nvidia-smi's total
    assert [accs[n].usable_mib for n in ("RTX-A6000", "RTX-6000-Ada", "RTX3090", "RTX5090")] == [49140, 49140,
                                                                                                  24576, 32607]
    for name, total in (("RTX-A6000", 51160023040), ("RTX-6000-Ada", 51002867712), ("RTX3090", 25447170048),
                        ("RTX5090", 33677180928)):
        assert accs[name].cuda_total_bytes == total < accs[name].memory_bytes
    # nvidia-smi on an H100 80GB HBM3 shows 81559MiB (the H100's reported memory; modal-labs/modal-client PR 2797)
    assert accs["H100"].memory_bytes == 81559 * 2**20


def test_training_time_hand_arithmetic() -> None:
    cfg = llama3_8b()
    t = training_time(cfg, tokens=10**12, gpus=64, accelerator="H100", seq_len=8192, mfu=0.5)
    # by hand, per token and layer: q/k/v 2*4096*(4096 + 2*1024), out 2*4096*4096, SwiGLU 2*3*4096*14336,
    # scores and values 4*8192*4096; x 32 layers, + LM head 2*4096*128256; x 3 for training
    per_layer = 2 * 4096 * 6144 + 2 * 4096 * 4096 + 2 * 3 * 4096 * 14336 + 4 * 8192 * 4096
    flops = 3 * (32 * per_layer + 2 * 4096 * 128256) * 10**12
    assert flops == 57_912_852_480 * 10**12
    assert t.flops == flops
    assert t.seconds == pytest.approx(flops / (64 * 989e12 * 0.5))
    assert t.gpu_hours == pytest.approx(t.seconds * 64 / 3600)


def test_fit_picks_the_smallest_layout_that_fits() -> None:
    cfg = llama3_8b()
    res = fit(cfg, Workload(seq_len=2048), gpus=8, accelerator="H100").as_dict()
    best = res["best"]
    reserve = math.ceil(81559 * 2**20 * 0.1)  # the default reserve: 10% of what the device reports
    assert best["per_gpu_bytes"] <= res["usable_bytes"] == 81559 * 2**20 - reserve
    # plain data parallelism (16 B/param + activations) does not fit in 80 GiB; ZeRO-1 does
    assert 16 * count_params(cfg).total > res["usable_bytes"]
    assert best["layout"] == {"dp": 8, "tp": 1, "pp": 1, "ep": 1, "zero": 1, "sp": False, "gpus": 8}
    serve = fit(cfg, Workload(batch=1, seq_len=8192), gpus=8, accelerator="A100", mode="serve").as_dict()
    assert serve["best"]["layout"]["tp"] * serve["best"]["layout"]["pp"] == 1
    none = fit(deepseek_v3(), gpus=1, accelerator="H100", mode="serve").as_dict()
    assert none["best"] is None and none["smallest_need_bytes"] > none["usable_bytes"]


# -- published figures ------------------------------------------------------------------------------

def test_zero_paper_figure_1_per_device_memory() -> None:
    # Rajbhandari et al. 2020 (ZeRO), Figure 1: 7.5B parameters, K = 12 (mixed-precision Adam),
    # Nd = 64 GPUs: baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB per device
    cfg = llama3_8b()
    p = count_params(cfg).total
    published = {0: 120, 1: 31.4, 2: 16.6, 3: 1.9}
    for zero, gb in published.items():
        rows = training_table(cfg, Workload(seq_len=16), Layout(dp=64, zero=zero))
        states = sum(r.per_gpu_bytes for r in rows if r.group == "states")
        assert round(states / p * 7.5e9 / 1e9, 1) == gb, zero


def test_korthikanti_activations_with_dropout() -> None:
    # Korthikanti et al. 2022, eq. 1: a GPT layer keeps s b h (34 + 5 a s / h) bytes with 16-bit
    # activations, eager attention and dropout (masks of 1 byte), no recomputation. ffnlab also
    # counts the LayerNorms' fp32 statistics (2 x 2 x 4 B per token), which the paper leaves out.
    s, b, h, a = 2048, 1, 12288, 96  # GPT-3 175B
    cfg = make_config(h, 1, a, 4 * h, kind="gelu", vocab_size=50257, max_positions=s)
    layer = activation_memory(cfg, seq_len=s, batch=b, attention="eager", dropout=True).per_layer[0]
    paper = s * b * h * (34 + 5 * a * s / h)
    assert layer == paper + s * b * 16
    sel = activation_memory(cfg, seq_len=s, batch=b, attention="eager", dropout=True, recompute="selective")
    assert sel.per_layer[0] == 34 * s * b * h + s * b * 16  # selective: the 5as^2b term goes
    tsp = activation_memory(cfg, seq_len=s, batch=b, attention="eager", dropout=True, tp=8, sp=True)
    assert tsp.per_layer[0] == pytest.approx(paper / 8, rel=1e-4)  # eq. 5: everything / t with SP


# -- gradients, optimizers, working memory ----------------------------------------------------------

def llama3_70b() -> ModelConfig:
    # meta-llama/Meta-Llama-3-70B config.json: 8192 wide, 80 layers, 64 heads, 8 KV heads, 28672, 128256
    return make_config(8192, 80, 64, 28672, kind="swiglu", n_kv_heads=8, vocab_size=128256, tied_embeddings=False)


def test_gradient_dtype() -> None:
    cfg = llama3_70b()
    p = count_params(cfg).total
    bf16 = terms(training_table(cfg, Workload(seq_len=16), Layout(dp=8, tp=8, zero=1, sp=True)))
    fp32 = terms(training_table(cfg, Workload(seq_len=16, grad_dtype="fp32"),
                                Layout(dp=8, tp=8, zero=1, sp=True)))
    assert bf16["gradients"] == math.ceil(2 * p / 8) and fp32["gradients"] == math.ceil(4 * p / 8)
    # Llama-3-70B at tp 8: 16.4 GiB of bf16 gradients per GPU, twice that with fp32 accumulation
    assert round(bf16["gradients"] / GiB, 1) == 16.4 and fp32["gradients"] == 2 * bf16["gradients"]


def test_optimizer_states_hand_arithmetic() -> None:
    cfg = make_config(256, 2, 4, 1024, kind="swiglu", vocab_size=1000, tied_embeddings=False)
    p = count_params(cfg).total
    opt = {o: terms(training_table(cfg, Workload(seq_len=8, optimizer=o), Layout()))["optimizer"]
           for o in ("adamw", "sgd", "sgd-momentum", "adam8bit", "adafactor")}
    assert opt["adamw"] == 12 * p and opt["sgd"] == 4 * p and opt["sgd-momentum"] == 8 * p
    # 8-bit Adam: 1 B per state x 2 for the 14 matrices and the embedding and head (all >= 4096 values),
    # an fp32 absmax per 256 values for each state; the 5 norms (256 each) keep 32-bit states
    mats = 2 * (4 * 256 * 256 + 3 * 256 * 1024) + 2 * 1000 * 256
    blocks = 2 * (4 * 256 + 3 * 1024) + 2 * 1000
    assert opt["adam8bit"] == 4 * p + 2 * mats + 8 * blocks + 8 * 5 * 256
    # Adafactor: rows + columns of each matrix, the full second moment of each norm, fp32
    factored = 2 * (4 * 512 + 3 * 1280) + 2 * 1256
    assert opt["adafactor"] == 4 * p + 4 * (factored + 5 * 256)
    assert terms(training_table(cfg, Workload(seq_len=8, dtype="fp32", optimizer="sgd"), Layout()))["optimizer"] == 0


def test_working_memory_by_stage() -> None:
    cfg = llama3_8b()
    p = count_params(cfg).total
    ddp = terms(training_table(cfg, Workload(seq_len=16), Layout(dp=8)))
    assert ddp["DDP gradient buckets"] == ddp["gradients"] == 2 * p
    assert "DDP gradient buckets" not in terms(training_table(cfg, Workload(seq_len=16), Layout()))  # one process
    z2 = terms(training_table(cfg, Workload(seq_len=16), Layout(dp=8, zero=2)))
    assert z2["ZeRO-2: gradient reduce bucket"] == 5 * 10**8 * 2
    # FSDP: one Llama-3-8B layer = attention 4096 x (4096 + 2 x 1024) + 4096 x 4096, FFN 3 x 4096 x 14336,
    # two RMSNorms of 4096
    layer = 4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    z3 = terms(training_table(cfg, Workload(seq_len=16), Layout(dp=8, zero=3)))
    assert z3["FSDP: gathered layer"] == z3["FSDP: prefetched layers"] == 2 * layer
    assert z3["FSDP: unsharded layer gradients"] == z3["FSDP: reduce-scatter buffer"] == 2 * layer
    assert z3["FSDP: root unit gathered (embeddings, norm, head)"] == 2 * (2 * 128256 * 4096 + 4096)
    assert z3["FSDP: head gradients before reduce-scatter"] == 2 * (128256 * 4096 + 4096)
    fp32_reduce = terms(training_table(cfg, Workload(seq_len=16, grad_dtype="fp32"), Layout(dp=8, zero=3)))
    assert fp32_reduce["FSDP: reduce-scatter buffer"] == 4 * layer
    tp = terms(training_table(cfg, Workload(seq_len=16), Layout(dp=4, tp=2, zero=3, sp=True)))
    assert tp["FSDP: gathered layer"] == layer  # / tp 2, in bf16
    keep = terms(training_table(cfg, Workload(seq_len=16),
                                Layout(dp=8, zero=3, sharding=Sharding(reshard_after_forward=False, prefetch=2))))
    assert keep["FSDP: layers kept gathered after forward"] == 2 * 32 * layer
    assert "FSDP: gathered layer" not in keep and "FSDP: reduce-scatter buffer" not in keep
    ds = terms(training_table(cfg, Workload(seq_len=16), Layout(dp=8, zero=3, sharding=Sharding(zero3="deepspeed"))))
    assert ds["ZeRO-3: live gathered parameters"] == 2 * 10**9
    assert ds["ZeRO-3: gradient reduce buckets"] == 2 * 5 * 10**8 * 2  # overlap_comm on at stage 3
    with pytest.raises(FfnlabError, match="prefetch"):
        training_table(cfg, Workload(seq_len=16), Layout(dp=8, zero=3, sharding=Sharding(prefetch=-1)))


def test_fit_405b_on_256_h100_counts_the_fsdp_working_memory() -> None:
    # Llama-3.1-405B: dp 256 at ZeRO-3 held 65.3 GiB of states and activations, but gathering a 3.19B
    # layer, prefetching the next, its gradients and the buckets do not fit beside them
    cfg = find_zoo("llama-3.1-405b").config()
    res = fit(cfg, Workload(seq_len=8192, recompute="full"), gpus=256, accelerator="H100").as_dict()
    layouts = {(r["layout"]["dp"], r["layout"]["tp"], r["layout"]["pp"],
                r["layout"]["zero"]) for r in res["candidates"]}
    assert (256, 1, 1, 3) not in layouts
    best = res["best"]
    assert best["layout"]["tp"] * best["layout"]["pp"] >= 2
    names = set(best["terms"])
    assert {"FSDP: gathered layer", "FSDP: prefetched layers", "FSDP: reduce-scatter buffer"} <= names
    assert best["per_gpu_bytes"] + res["reserve_bytes"] <= res["memory_bytes"]


def test_fit_search_is_bounded_and_validated() -> None:
    cfg = llama3_8b()
    res = fit(cfg, Workload(seq_len=16), gpus=10**9, accelerator="H100")  # divisors only: ~100 layouts
    assert res.best is not None and res.layouts_tried < 5000
    with pytest.raises(FfnlabError, match="--max-tp"):
        fit(cfg, gpus=8, accelerator="H100", max_tp=0)
    with pytest.raises(FfnlabError, match="--gpus"):
        fit(cfg, gpus=0, accelerator="H100")
    assert fit(cfg, Workload(seq_len=10**6), gpus=8, accelerator="H100", context_limit=8192).as_dict()["warnings"]


def test_fp8_time_splits_the_flops_and_mtp_is_counted() -> None:
    cfg = llama3_8b()
    fl = flops_per_token(cfg, 8192)
    bf = training_time(cfg, tokens=10**12, gpus=64, accelerator="H100", seq_len=8192, mfu=0.5)
    f8 = training_time(cfg, tokens=10**12, gpus=64, accelerator="H100", seq_len=8192, mfu=0.5, precision="fp8")
    linear = 3 * fl.linear * 10**12
    assert f8.fp8_flops == linear
    assert f8.seconds == pytest.approx((linear / 1979e12 + (bf.flops - linear) / 989e12) / (64 * 0.5))
    assert bf.mfu_assumed is False and training_time(cfg, tokens=1, gpus=1, accelerator="H100").mfu_assumed
    ds = deepseek_v3()
    with_mtp = ModelConfig(**{**ds.__dict__, "mtp_layers": 1})
    a, b = flops_per_token(ds, 4096), flops_per_token(with_mtp, 4096)
    assert a.mtp == 0 and b.forward == a.forward
    # one MTP module: a 2d -> d projection, one MoE layer over the context, and the shared head
    assert b.mtp == 2 * 2 * 7168 * 7168 + (b.qkv + b.attn_out) // 61 + b.attn_scores // 61 \
        + ffn_flops(7168, ds.ffn) + b.lm_head
    assert b.training == 3 * (b.forward + b.mtp)


@pytest.mark.parametrize("optimizer", ["adamw", "adafactor", "adam8bit", "sgd-momentum", "sgd"])
def test_size_reports_one_optimizer_figure_whichever_optimizer(optimizer):
    """``size``'s model states and its memory section count the same optimizer (they once gave
    AdamW's 49 GiB beside Adafactor's 25 GiB in one object); the oracle is optimizer_state."""
    from ffnlab.sizing.memory.optimizers import optimizer_state
    from ffnlab.sizing.size import size_summary
    from ffnlab.sizing.widths import make_rule

    out = size_summary(4096, "swiglu", make_rule("llama"), n_layers=32,
                       workload=Workload(optimizer=optimizer)).as_dict()["model"]
    states, mem = out["training_memory_bytes"], out["memory"]
    cfg = make_config(4096, 32, 64, 11008, kind="swiglu", vocab_size=50257, max_positions=2048, norm="rmsnorm",
                      positions="rope")
    assert count_params(cfg).as_dict() == out["params"]  # the model size_summary built
    want = optimizer_state(cfg, optimizer, dtype_bytes=2)
    assert states["optimizer"] + states["master_weights"] == want.total
    assert abs(mem["optimizer_bytes"] - want.total) <= 1  # per-GPU bytes are rounded up


def test_fit_suggests_what_would_fit_each_figure_as_fit_itself_gives_it():
    """Nothing fits a 70B model's serving on 2 L4s: each suggestion is fit() rerun with that one
    setting changed (the oracle), and the GPU count is the first doubling that fits."""
    from ffnlab.sizing.memory.fit import suggestions

    cfg = find_zoo("llama-3-70b").config()
    assert fit(cfg, gpus=2, accelerator="L4", mode="serve").as_dict()["best"] is None
    got = {x.change: x.as_dict() for x in suggestions(cfg, gpus=2, accelerator="L4", mode="serve")}
    assert set(got) == {"--weights-dtype int4", "--kv-dtype fp8", "--gpus 8"}
    int4 = fit(cfg, Workload(weights_dtype="int4"), gpus=2, accelerator="L4", mode="serve").as_dict()
    assert got["--weights-dtype int4"]["fits"] and got["--weights-dtype int4"]["per_gpu_bytes"] == \
        int4["best"]["per_gpu_bytes"]
    fp8 = fit(cfg, Workload(kv_dtype="fp8"), gpus=2, accelerator="L4", mode="serve").as_dict()
    assert not got["--kv-dtype fp8"]["fits"] and got["--kv-dtype fp8"]["per_gpu_bytes"] == fp8["smallest_need_bytes"]
    assert fit(cfg, gpus=4, accelerator="L4", mode="serve").as_dict()["best"] is None
    assert got["--gpus 8"]["per_gpu_bytes"] == fit(cfg, gpus=8, accelerator="L4", mode="serve").best.per_gpu_bytes
    # a change already in effect is not suggested
    assert "--weights-dtype int4" not in {x.change for x in suggestions(
        cfg, Workload(weights_dtype="int4"), gpus=1, accelerator="L4", mode="serve")}
