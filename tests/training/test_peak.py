"""The MFU denominator (training/peak.py) with oracles that cannot depend on a clock: shapes
listed by hand from the model's layers, injected timings, datasheet figures typed in here, and a
run whose MFU would exceed 100%."""

from __future__ import annotations

import json
import re

import pytest
import torch
from cli_run import run

from ffnlab.sizing.config import make_config
from ffnlab.training import peak
from ffnlab.training.peak import Gemm, best_over_rounds, cut_rows, model_gemms

# -- the shapes the peak must bound ----------------------------------------------------------------


def _linear(rows: int, d_in: int, d_out: int) -> set[Gemm]:
    # y = x W^T, dx = g W, dW = g^T x (autograd's products, written out by hand)
    return {Gemm(rows, d_in, d_out, False, True), Gemm(rows, d_out, d_in, False, False),
            Gemm(d_out, rows, d_in, True, False)}


def test_model_gemms_are_every_linear_layer_forward_and_backward() -> None:
    # d 64, 4 heads: qkv 64 -> 192, out 64 -> 64; SwiGLU d_ff 96: w_in 64 -> 192 (gate and up), w_out 96 -> 64;
    # lm head 64 -> 100
    cfg = make_config(64, 2, 4, 96, kind="swiglu", vocab_size=100)
    expected = _linear(128, 64, 192) | _linear(128, 64, 64) | _linear(128, 96, 64) | _linear(128, 64, 100)
    got = model_gemms(cfg, 128)
    assert set(got) == expected and len(got) == len(expected)


def test_model_gemms_of_a_moe_give_each_expert_its_share_of_tokens() -> None:
    # 8 experts, top 2 of 256 tokens: 64 rows per expert; router 32 -> 8; one shared expert of d_ff 48
    cfg = make_config(32, 1, 2, 48, kind="gelu", vocab_size=50, n_experts=8, top_k=2, n_shared_experts=1)
    expected = (_linear(256, 32, 96) | _linear(256, 32, 32) | _linear(256, 32, 50) | _linear(256, 32, 8)
                | _linear(64, 32, 48) | _linear(64, 48, 32) | _linear(256, 32, 48) | _linear(256, 48, 32))
    assert set(model_gemms(cfg, 256)) == expected


def test_cut_rows_keeps_a_product_under_the_cap() -> None:
    # 2 * rows * 1024 * 1024 <= 2^29  <=>  rows <= 256
    assert cut_rows(4096, 1024, 1024, 2**29) == 256
    assert cut_rows(200, 1024, 1024, 2**29) == 200  # already under
    assert cut_rows(4096, 1024, 1000, 2**29) == 256  # 262 fit, down to a multiple of 64
    assert cut_rows(4096, 8192, 8192, 2**29) == 64  # at least 64 rows
    cfg = make_config(1024, 1, 8, 4096, vocab_size=32000)
    assert all(g.flops <= 2**29 for g in model_gemms(cfg, 8192, 2**29) if 32000 not in (g.m, g.k, g.n))


# -- the measurement: injected timings ---------------------------------------------------------------

SQUARE = Gemm(100, 100, 100)  # 2e6 FLOPs
MODEL = Gemm(200, 50, 100, b_t=True)  # 2e6 FLOPs


def test_peak_is_the_best_shape_and_the_model_shape_can_be_it() -> None:
    # the model's own product runs at 2e6 / 1e-3 = 2e9 FLOP/s, the square at 1e9: the peak bounds the model's
    m = best_over_rounds([SQUARE, MODEL], {SQUARE: 2e-3, MODEL: 1e-3}.__getitem__)
    assert m.flops == pytest.approx(2e9) and m.best == MODEL
    assert m.per_gemm == {SQUARE: pytest.approx(1e9), MODEL: pytest.approx(2e9)}


def test_each_shape_keeps_its_fastest_round() -> None:
    # a slow first round (cold caches, clocks rising, other work) does not lower the peak
    times = {SQUARE: iter([9e-3, 1e-3, 4e-3, 4e-3, 4e-3, 4e-3]), MODEL: iter([9e-3, 5e-3, 5e-3, 5e-3, 5e-3, 5e-3])}
    m = best_over_rounds([SQUARE, MODEL], lambda g: next(times[g]))
    assert m.flops == pytest.approx(2e9) and m.best == SQUARE  # 2e6 / 1e-3 from round 2


def test_rounds_continue_while_a_round_raises_the_best() -> None:
    # each of rounds 1-3 is 10% faster than the one before, then flat: round 4 gains 0% and stops it
    calls: list[int] = []

    def seconds(g: Gemm) -> float:
        calls.append(1)
        r = (len(calls) - 1) // 2  # round index (two shapes per round)
        return 1e-3 / 1.1 ** min(r, 2)

    m = best_over_rounds([SQUARE, MODEL], seconds)
    assert m.rounds == 4 and m.flops == pytest.approx(2e9 * 1.21)
    # always 10% faster: stops at the cap
    faster = iter([1e-3 / 1.1**i for i in range(99)])
    assert best_over_rounds([SQUARE], lambda g: next(faster), max_rounds=5).rounds == 5
    # flat from the start: the minimum of two rounds
    assert best_over_rounds([SQUARE], lambda g: 1e-3).rounds == 2


def test_measure_peak_times_the_squares_and_every_model_shape_at_the_run_threads(monkeypatch) -> None:
    timed: list[tuple[Gemm, int]] = []

    def fake_timer(device: str, dtype: str, burst_s: float):
        def seconds(g: Gemm) -> float:
            timed.append((g, torch.get_num_threads()))
            return g.flops / (3e9 if g == MODEL else 1e9)  # the model's shape is the fastest

        return seconds

    monkeypatch.setattr(peak, "_torch_timer", fake_timer)
    before = torch.get_num_threads()
    p = peak.measure_peak.__wrapped__("cpu", "fp32", (MODEL,), 1)
    assert {g for g, _ in timed} == {*peak.square_gemms(peak.SQUARES["cpu"]), MODEL}
    assert {n for _, n in timed} == {1} and torch.get_num_threads() == before
    assert p.flops == pytest.approx(3e9) and p.source == "measured" and "1 threads" in p.detail


# -- published peaks --------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "precision", "tflops"), [
    # datasheet dense figures (half the "with sparsity" ones), typed in from NVIDIA's and AMD's data sheets
    ("NVIDIA H100 80GB HBM3", "bf16", 989), ("NVIDIA H200", "bf16", 989), ("NVIDIA A100-SXM4-80GB", "bf16", 312),
    ("NVIDIA A100-SXM4-40GB", "fp32", 19.5), ("NVIDIA A100-SXM4-80GB", "tf32", 156),
    ("NVIDIA H100 80GB HBM3", "fp32", 67),
    ("NVIDIA H200", "tf32", 494.5), ("NVIDIA B200", "bf16", 2250), ("AMD Instinct MI300X", "bf16", 1307.4),
    ("AMD Instinct MI300X", "fp32", 163.4), ("NVIDIA H100 80GB HBM3", "fp16", 989),
])
def test_published_peak_of_listed_accelerators(name: str, precision: str, tflops: float) -> None:
    p = peak.published_peak(name, precision)
    assert p is not None and p.flops == pytest.approx(tflops * 1e12) and p.source == "published"


@pytest.mark.parametrize("name", ["NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA GH200 480GB", "NVIDIA A10",
                                  "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-16GB", "cpu"])
def test_unlisted_or_variant_devices_have_no_published_peak(name: str) -> None:
    assert peak.published_peak(name, "bf16") is None


def test_fp32_matmuls_use_the_tf32_peak_only_where_torch_allows_tf32() -> None:
    assert peak.matmul_precision("fp32", tf32_allowed=False) == "fp32"
    assert peak.matmul_precision("fp32", tf32_allowed=True) == "tf32"
    assert peak.matmul_precision("bf16", tf32_allowed=True) == "bf16"


def test_device_peak_on_a_gpu_is_published_and_falls_back_to_measuring(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    assert peak.device_peak("cuda", "bf16").flops == pytest.approx(989e12)
    measured = peak.Peak(1e12, "measured", "fake")
    monkeypatch.setattr(peak, "measure_peak", lambda *a, **k: measured)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 PCIe")
    assert peak.device_peak("cuda", "bf16") is measured
    assert peak.device_peak("cpu", "fp32") is measured


# -- MFU is never shown above 100% ----------------------------------------------------------------

def test_mfu_above_one_is_no_figure() -> None:
    assert peak.model_flops_utilisation(5e8, 1e9) == pytest.approx(0.5)
    assert peak.model_flops_utilisation(1e9, 1e9) == pytest.approx(1.0)
    assert peak.model_flops_utilisation(1.3e9, 1e9) is None
    assert peak.mfu_text(0.5) == "50.0%"
    assert "underestimated" in peak.mfu_text(None) and "%" not in peak.mfu_text(None).replace("100%", "")


def test_a_run_beyond_its_peak_says_underestimated_not_a_figure(tmp_path) -> None:
    # train.peak_flops=1 FLOP/s: any real run exceeds it
    out = tmp_path / "run"
    p = run("train", "--out", str(out), *[a for s in (
        "model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=16", "train.batch_size=2",
        "train.max_steps=2", "train.log_every=1", "train.eval_every=2", "train.eval_tokens=64",
        "train.progress=lines", "train.tensorboard=false", "train.threads=1", "train.peak_flops=1",
        f"data.cache_dir={tmp_path / 'cache'}") for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    shown = [float(x) for x in re.findall(r"mfu ([0-9.]+)%", p.stderr)]
    assert "underestimated" in p.stderr and shown == []
    trains = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()
              if json.loads(line)["kind"] == "train"]
    assert trains and all(r["mfu"] is None for r in trains)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["peak_flops"] == 1 and summary["peak_source"].startswith("1e-12 TFLOP/s (given")


def test_a_run_without_a_given_peak_measures_its_own_shapes(tmp_path) -> None:
    out = tmp_path / "run"
    p = run("train", "--out", str(out), *[a for s in (
        "model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=16", "train.batch_size=2",
        "train.max_steps=1", "train.eval_tokens=64", "train.progress=off", "train.tensorboard=false",
        "train.threads=1", f"data.cache_dir={tmp_path / 'cache'}") for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    # qkv, attention out, FFN in and out, LM head: 3 products each, 32 rows (2 x 16 tokens)
    assert "(measured: best fp32 matmul of 18 shapes (15 the model's)" in summary["peak_source"]
    assert "at 1 threads" in summary["peak_source"] and summary["peak_flops"] > 0
