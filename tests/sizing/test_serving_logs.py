"""Serving engines' published start-up logs (data/serving_logs.json) against ffnlab's profiles of
those engines (data/serving_engines.json, ffnlab.sizing.serving_engines): each logged part and the
KV tokens within max(3%, 0.25 GiB) of the log, or the case listed as not expressible, with its
reason (at most 3). What is checked per case, where the log gives it:

* the engine's cache arithmetic from the logged parts (vLLM: utilization x total - weights -
  activation peak - non-torch) against the logged cache;
* the CUDA total of a listed card (accelerators.json's cuda_reported_bytes) against the logged total;
* ffnlab's serving weights against the logged weights;
* the KV tokens (or blocks) from the logged cache, ffnlab's bytes per token and the engine's block
  rounding against the logged tokens; SGLang's K and V sizes from the logged tokens;
* vLLM's "Maximum concurrency" as tokens / max_model_len;
* vLLM 0.19.0: "Total non KV cache memory" as weights + activation peak + non-torch (CUDA graphs
  not subtracted), the non-torch memory against the profile's figure for the parallel size, and the
  logged blocks as tokens x KV-cache groups / block size (a sliding-window model's two groups).

The activation peak is taken from each log, not predicted (not yet modelled).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.memory.activations import kv_cache
from ffnlab.sizing.memory.hardware import find_accelerator
from ffnlab.sizing.memory.quant import weight_bytes
from ffnlab.sizing.serving_engines import (
    GIB,
    EngineKnobs,
    blocks_and_tokens,
    concurrency,
    engine_estimate,
    engine_profile,
    gqa_bytes_per_token,
    hybrid_concurrency,
    llamacpp_cache,
    read_engine_command,
    sglang_cache_bytes,
    vllm_cache_bytes,
)
from ffnlab.sizing.zoo import find, is_zoo_name

CASES: list[dict[str, Any]] = json.loads(
    resources.files("ffnlab").joinpath("data/serving_logs.json").read_text())["cases"]
EXPRESSIBLE = [c for c in CASES if "not_expressible" not in c]


def within(got: float, want: float, *, bytes_each: float = 1.0) -> bool:
    """``got`` within max(3%, 0.25 GiB) of ``want``; counts of ``bytes_each`` bytes for tokens."""
    return abs(got - want) <= max(0.03 * abs(want), 0.25 * GIB / bytes_each)


def config_of(name: str) -> ModelConfig:
    """The zoo model's config (every zoo entry here has one)."""
    cfg = find(name).config()
    assert cfg is not None, name
    return cfg


def bytes_per_token(case: dict[str, Any]) -> int:
    model, tp = case["model"], case["tp"]
    element = 1 if case["kv_dtype"] == "fp8" else 2
    if isinstance(model, dict):
        return gqa_bytes_per_token(model["layers"], model["kv_heads"], model["head_dim"], tp=tp, element_bytes=element)
    return kv_cache(config_of(model), batch=1, context=1, kv_dtype=case["kv_dtype"], tp=tp).bytes_per_token


def test_the_suite_covers_what_the_issue_asks_so_far():
    """Sources, quoted lines and settings on every case; at most 3 not expressible, each with a reason."""
    for c in CASES:
        assert c["source"].startswith("https://github.com/") and c["lines"] and "settings" in c
        assert c["engine_version"] and engine_profile(f"{c['engine']}@{c['profile']}")
        assert isinstance(c["model"], dict) or is_zoo_name(c["model"]) or "not_expressible" in c
    assert len(CASES) - len(EXPRESSIBLE) <= 3
    assert {c["engine"] for c in CASES} == {"vllm", "sglang", "llama.cpp"}
    assert sum(c["engine"] == "llama.cpp" for c in EXPRESSIBLE) >= 3  # the third engine's own cases
    assert {c["tp"] for c in EXPRESSIBLE} >= {1, 2, 4}
    assert any(c["weights_dtype"] == "fp8" for c in EXPRESSIBLE)  # a quantised model
    assert any(c["kv_dtype"] == "fp8" for c in EXPRESSIBLE)  # a quantised KV cache
    assert len(EXPRESSIBLE) >= 15 and len({c["family"] for c in EXPRESSIBLE}) >= 4
    assert len({c["gpu"] for c in EXPRESSIBLE if c["gpu"] in ("H100", "L40S", "RTX 3090")}) >= 2
    windowed = [c for c in EXPRESSIBLE if not isinstance(c["model"], dict) and c["engine"] != "llama.cpp"
                and config_of(c["model"]).attn.sliding_window]
    assert windowed  # a sliding-window model


def kv_groups(case: dict[str, Any]) -> int:
    """vLLM 0.19.0's KV-cache groups: one per attention kind (sliding, full) the model mixes."""
    if isinstance(case["model"], dict):
        return 1
    return len(set(config_of(case["model"]).attention_layers()))


@pytest.mark.parametrize("case", EXPRESSIBLE, ids=[c["id"] for c in EXPRESSIBLE])
def test_logged_parts_and_kv_tokens(case: dict[str, Any]) -> None:
    log, settings = case["logged"], case["settings"]
    if case["engine"] == "llama.cpp":  # its cache from the model, n_ctx, the slots and the cache types alone
        lc = llamacpp_cache(config_of(case["model"]), n_ctx=settings["n_ctx"], n_seq=settings["n_seq"],
                            type_k=settings["type_k"], type_v=settings["type_v"])
        assert (lc.cells, lc.layers, lc.seqs) == (log["cells"], log["layers"], log["seqs"])
        for got, key in ((lc.size_bytes, "size_mib"), (lc.k_bytes, "k_mib"), (lc.v_bytes, "v_mib")):
            assert within(got, log[key] * 2**20), (got / 2**20, log[key], key)
        return
    _, _, profile = engine_profile(f"{case['engine']}@{case['profile']}")
    bpt = bytes_per_token(case)
    if "total_gib" in log:
        util = settings["gpu_memory_utilization"]
        if "requested_gib" in log:
            assert within(log["total_gib"] * util * GIB, log["requested_gib"] * GIB)
        weights = log.get("peak_torch_gib", log.get("weights_gib"))
        activation = 0.0 if "peak_torch_gib" in log else log["activation_gib"]
        cache = vllm_cache_bytes(log["total_gib"] * GIB, util, weights_bytes=weights * GIB,
                                 activation_bytes=activation * GIB, non_torch_bytes=log["non_torch_gib"] * GIB)
        if "cache_gib" in log:
            assert within(cache, log["cache_gib"] * GIB), (cache / GIB, log["cache_gib"])
        if "non_kv_gib" in log:  # 0.19.0: the CUDA graphs' estimate is not part of it
            parts = log["weights_gib"] + log["activation_gib"] + log["non_torch_gib"]
            assert within(parts * GIB, log["non_kv_gib"] * GIB), (parts, log["non_kv_gib"])
        if "non_torch_gib" in profile:  # the version's non-torch memory for the parallel size
            want = profile["non_torch_gib"]["tp1" if case["tp"] == 1 else "tp_gt_1"]
            assert within(want * GIB, log["non_torch_gib"] * GIB), (want, log["non_torch_gib"])
        try:
            acc = find_accelerator(case["gpu"])
        except Exception:  # a card ffnlab does not list: its total is the log's
            acc = None
        if acc is not None:
            assert within(acc.cuda_total_bytes, log["total_gib"] * GIB), (acc.cuda_total_bytes / GIB, log["total_gib"])
    if "weights_gib" in log and not isinstance(case["model"], dict):
        w = weight_bytes(config_of(case["model"]), case["weights_dtype"])
        assert within(w.total / case["tp"], log["weights_gib"] * GIB), (w.total / GIB, log["weights_gib"])
    logged_tokens = log.get("tokens", log.get("blocks", 0) * profile["block_size"])
    if case["engine"] == "vllm" and logged_tokens:
        ours = blocks_and_tokens(log["cache_gib"] * GIB, bpt, profile["block_size"])
        assert within(ours.tokens, logged_tokens, bytes_each=bpt), (ours.tokens, logged_tokens)
        assert abs(ours.tokens - logged_tokens) / logged_tokens <= 0.03
        if "blocks" in log and "tokens" in log:  # blocks shared by the KV-cache groups
            assert log["blocks"] // kv_groups(case) * profile["block_size"] == log["tokens"]
    if "rest_gib" in log:  # SGLang: free after the weights less (1 - fraction) of the total
        total = (log["free_after_weights_gib"] + log["weights_gib"]) * GIB
        rest = sglang_cache_bytes(total, settings["mem_fraction_static"],
                                  free_after_weights_bytes=log["free_after_weights_gib"] * GIB)
        assert within(rest, log["rest_gib"] * GIB), (rest / GIB, log["rest_gib"])
    if case["engine"] == "sglang":  # K and V of the logged tokens, each half a cell
        for key in ("k_gib", "v_gib"):
            assert within(log["tokens"] * bpt / 2, log[key] * GIB), (log["tokens"] * bpt / 2 / GIB, log[key])
    if "concurrency" in log:
        if kv_groups(case) == 2:  # a windowed group needs fewer blocks per request
            window = config_of(case["model"]).attn.sliding_window
            assert window is not None
            ours_c = hybrid_concurrency(log["blocks"], profile["block_size"], settings["max_model_len"],
                                        window=window, max_num_batched_tokens=settings["max_num_batched_tokens"])
        else:
            ours_c = concurrency(logged_tokens, settings["max_model_len"])
        assert ours_c == pytest.approx(log["concurrency"], abs=0.006)


def test_weights_field_is_what_the_test_reads():
    """weight_bytes' total is the figure compared above (bytes for the whole model)."""
    w = weight_bytes(config_of("llama-3-8b"), "bf16")
    assert round(w.total / GIB, 2) == 14.96


# MoE models' profile runs also hold a fused-MoE workspace that the activation rule does not count:
# their predicted activation peak is low by 0.38-0.59 GiB (the cache high by as much), known and shown
MOE_ACTIVATION_UNMODELLED = {"vllm019-qwen3-30b-a3b-h100-tp1", "vllm019-mixtral-8x7b-h100-tp2",
                             "vllm019-deepseek-v2-lite-h100-tp1"}
PREDICTED = [c for c in EXPRESSIBLE if c["profile"] == "0.19.0" and not isinstance(c["model"], dict)]


@pytest.mark.parametrize("case", PREDICTED, ids=[c["id"] for c in PREDICTED])
def test_predicted_parts_and_tokens(case: dict[str, Any]) -> None:
    """engine_estimate predicts every part from the model and the card alone (the log's settings
    as knobs): the CUDA total, weights, non-torch memory, activation peak, cache, tokens and
    vLLM's "Maximum concurrency", each within max(3%, 0.25 GiB) of the log."""
    log, settings = case["logged"], case["settings"]
    knobs = EngineKnobs(gpu_memory_utilization=settings["gpu_memory_utilization"],
                        max_model_len=settings["max_model_len"])
    est = engine_estimate(config_of(case["model"]), find_accelerator(case["gpu"]), f"vllm@{case['profile']}",
                          tp=case["tp"], knobs=knobs, weights_dtype=case["weights_dtype"], kv_dtype=case["kv_dtype"])
    assert within(est.total_bytes, log["total_gib"] * GIB)
    assert within(est.weights_bytes, log["weights_gib"] * GIB), (est.weights_bytes / GIB, log["weights_gib"])
    assert within(est.non_torch_bytes, log["non_torch_gib"] * GIB)
    if case["id"] in MOE_ACTIVATION_UNMODELLED:
        short = log["activation_gib"] - est.activation_bytes / GIB
        assert 0.25 < short < 0.7, short  # the known gap; if it closes, move the case back
        return
    assert within(est.activation_bytes, log["activation_gib"] * GIB), (est.activation_bytes / GIB,
                                                                       log["activation_gib"])
    assert within(est.cache_bytes, log["cache_gib"] * GIB), (est.cache_bytes / GIB, log["cache_gib"])
    assert abs(est.tokens - log["tokens"]) / log["tokens"] <= 0.03, (est.tokens, log["tokens"])
    assert est.concurrency == pytest.approx(log["concurrency"], rel=0.03)


def test_engine_command_lines_are_read_and_the_rest_named():
    cmd = read_engine_command("CUDA_VISIBLE_DEVICES=0 vllm serve meta-llama/Llama-3.1-8B \\\n"
                              "  --gpu-memory-utilization 0.95 --max-model-len=8192 --enforce-eager --port 8000 -tp 2")
    assert cmd.engine == "vllm" and cmd.model == "meta-llama/Llama-3.1-8B"
    assert cmd.knobs == EngineKnobs(gpu_memory_utilization=0.95, max_model_len=8192, enforce_eager=True, tp=2)
    assert "--port 8000" in cmd.ignored
    case = next(c for c in CASES if c["id"] == "sglang-qwen3-235b-fp8-h100-tp4")
    cmd = read_engine_command(case["settings"]["command"])  # the published launch line itself
    assert cmd.engine == "sglang" and cmd.knobs == EngineKnobs(mem_fraction_static=0.93, tp=4)
    assert any(w.startswith("--model ") for w in cmd.ignored)
    with pytest.raises(FfnlabError):
        read_engine_command("python serve.py --port 1")


def test_llamacpp_sliding_window_layers_get_the_window_plus_a_ubatch():
    """Gemma 2 (21 of 42 layers sliding over 4,096 tokens) at -c 8192: the SWA layers' cache is
    PAD(4,096 + 512, 256) = 4,608 cells (llama-kv-cache-iswa.cpp), the full layers' 8,192; with
    --swa-full both are 8,192; with -np 2 (separate slots) each slot's window is its own."""
    cfg = config_of("gemma-2-9b")
    c = llamacpp_cache(cfg, n_ctx=8192)
    assert (c.cells, c.swa_cells, c.layers, c.swa_layers) == (8192, 4608, 21, 21)
    full = llamacpp_cache(cfg, n_ctx=8192, swa_full=True)
    assert full.swa_cells == 8192 and full.swa_bytes == full.size_bytes
    two = llamacpp_cache(cfg, n_ctx=16384, n_seq=2)
    assert two.cells == 8192 and two.swa_cells == 4608 and two.swa_bytes == 2 * c.swa_bytes
    with pytest.raises(FfnlabError):
        llamacpp_cache(cfg, n_ctx=8192, type_k="fp8")
