"""Published decode speeds (data/serving_speed.json) against ffnlab's roofline bound: each is a
fraction of the bound in (0, 1] (a measured speed above the bound would prove the bound wrong),
a fraction is offered only for the same engine, GPU and batch, and a target throughput is sized
with the lowest matching fraction."""

from __future__ import annotations

import math

import pytest
from cli_run import assert_usage_error, run, run_json

from ffnlab.sizing.serving_speed import (
    gpus_for_target,
    implied_fraction,
    matching_fractions,
    speed_cases,
)


@pytest.mark.parametrize("case", speed_cases(), ids=[c["id"] for c in speed_cases()])
def test_every_published_speed_is_below_its_bound(case):
    f = implied_fraction(case)
    assert 0.0 < f.fraction <= 1.0, (f.fraction, f.bound_tokens_per_s)
    assert case["source"].startswith("https://github.com/") and case["engine_version"]


def test_the_suite_has_three_engine_gpu_model_cases():
    assert len({(c["engine"], c["gpu"], c["model"]) for c in speed_cases()}) >= 3


def test_a_fraction_matches_only_its_tensor_parallel_size():
    """vLLM's two cases are on two GPUs: a one-GPU layout gets neither, a two-GPU one its own."""
    assert matching_fractions("vllm", "RTX4090", 1) == []
    assert [f.case_id for f in matching_fractions("vllm", "RTX4090", 1, tp=2)] == ["vllm-llama2-70b-awq-2xrtx4090"]
    assert [f.case_id for f in matching_fractions("vllm@0.9.0", "B200", 1, tp=2)] == ["vllm-llama3.3-70b-fp8-2xb200"]
    assert matching_fractions("mlc-llm", "RTX4090", 1, tp=2) == []


def test_the_fractions_are_the_published_speeds_over_the_bound():
    """By hand for the B200 case: Llama-3.3-70B's weights in FP8 read once per token, half per GPU,
    at 8 TB/s; the published 35.04 tokens/s is that bound times the fraction."""
    from ffnlab.sizing.memory.hardware import find_accelerator
    from ffnlab.sizing.serving import decode_speed
    from ffnlab.sizing.zoo import find

    f = next(implied_fraction(c) for c in speed_cases() if c["id"] == "vllm-llama3.3-70b-fp8-2xb200")
    speed = decode_speed(find("llama-3.3-70b").config(), find_accelerator("B200"), batch=1, context=768, tp=2,
                         weights_dtype="fp8")
    assert speed is not None and f.bound_tokens_per_s == speed.tokens_per_s_per_sequence
    assert 200 < f.bound_tokens_per_s < 240  # ~70.6 GB / 2 / 8e12 B/s: about 4.4 ms a token
    assert f.fraction * f.bound_tokens_per_s == pytest.approx(35.04)


def test_a_fraction_matches_only_its_engine_gpu_and_batch():
    assert {f.engine for f in matching_fractions("mlc-llm", "RTX4090", 1)} == {"mlc-llm"}
    assert matching_fractions("mlc-llm", "RTX4090", 8) == []
    assert matching_fractions("mlc-llm", "H100", 1) == []
    assert matching_fractions(None, "RTX4090", 1) == []


def test_target_is_sized_with_the_lowest_matching_fraction():
    fr = matching_fractions("exllama", "RTX4090", 1)
    low = min(f.fraction for f in fr)
    t = gpus_for_target(1000, 200.0, 2, fr)
    assert t.fraction == low and t.replicas == math.ceil(1000 / (200.0 * low)) and t.gpus == 2 * t.replicas
    bare = gpus_for_target(1000, 200.0, 1, [])
    assert bare.fraction == 1.0 and bare.gpus == 5


def test_fit_prints_the_fraction_and_the_gpus_for_a_target():
    args = ("fit", "llama-2-7b", "--gpu", "RTX4090", "--gpus", "1", "--mode", "serve", "--weights-dtype", "int4",
            "--seq-len", "1024", "--engine", "mlc-llm", "--target-tokens-per-s", "1000")
    p = run(*args)
    assert p.returncode == 0, p.stderr
    assert "decode roofline, batch 1:" in p.stdout and "prefill roofline, 1,024 tokens:" in p.stdout
    assert "mlc-llm reached 204.8 tokens/s for llama-2-7b on RTX4090 at batch 1" in p.stdout
    res = run_json(*args)
    t = res["target"]
    assert t["gpus"] == t["replicas"] and t["fraction"] == min(f["fraction"] for f in res["measured_fractions"])
    assert t["replicas"] * t["tokens_per_s_per_replica"] >= 1000 > (t["replicas"] - 1) * t["tokens_per_s_per_replica"]


def test_target_flag_needs_serve_and_a_gpu():
    assert_usage_error(run("fit", "llama-2-7b", "--gpu", "H100", "--target-tokens-per-s", "100"), "--mode serve")
    assert_usage_error(run("fit", "llama-2-7b", "--mode", "serve", "--target-tokens-per-s", "100"), "--gpu")
    assert_usage_error(run("fit", "llama-2-7b", "--gpu", "H100", "--mode", "serve", "--target-tokens-per-s", "0"))


def test_fit_prints_a_two_gpu_fraction_for_a_two_gpu_layout():
    """Llama-2-70B in AWQ needs two RTX 4090s (tensor parallel): the two-GPU vLLM case applies."""
    args = ("fit", "llama-2-70b", "--gpu", "RTX4090", "--gpus", "2", "--mode", "serve", "--weights-dtype", "awq",
            "--seq-len", "1024", "--engine", "vllm")
    p = run(*args)
    assert p.returncode == 0, p.stderr
    said = " ".join(p.stdout.split())  # the terminal wraps long lines
    assert "vllm reached 23.8 tokens/s for llama-2-70b on 2 x RTX4090 (tensor parallel) at batch 1" in said
    res = run_json(*args)
    assert [(f["case_id"], f["tp"]) for f in res["measured_fractions"]] == [("vllm-llama2-70b-awq-2xrtx4090", 2)]
