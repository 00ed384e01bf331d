"""LoRA / QLoRA adapters (their counts and states). Oracle: peft's own count of the
peft model built on the meta device from the same config.json, for the same rank and targets."""

from __future__ import annotations

import pytest
from finetune_oracle import peft_count

from ffnlab.errors import FfnlabError
from ffnlab.sizing.finetune import finetune_states, lora_params, parse_targets
from ffnlab.sizing.hf import from_hf_dict
from ffnlab.sizing.memory.quant import weight_bytes

PEFT_TARGETS = {"attention": {"llama": ["q_proj", "k_proj", "v_proj", "o_proj"],
                              "qwen2": ["q_proj", "k_proj", "v_proj", "o_proj"],
                              "gpt_neox": ["query_key_value", "dense"],
                              "gpt2": ["c_attn", "attn.c_proj"],
                              "deepseek_v2": ["q_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj",
                                              "o_proj"]},
                "ffn": {"llama": ["gate_proj", "up_proj", "down_proj"], "qwen2": ["gate_proj", "up_proj", "down_proj"],
                        "gpt_neox": ["dense_h_to_4h", "dense_4h_to_h"], "gpt2": ["c_fc", "mlp.c_proj"]},
                # the LoRA paper's query and value; a fused q|k|v is one layer to peft
                "qv": {"llama": ["q_proj", "v_proj"], "qwen2": ["q_proj", "v_proj"], "gpt_neox": ["query_key_value"],
                       "gpt2": ["c_attn"]}}


def small(model_type: str) -> dict:
    from hf_cases import case

    return case(model_type, 1)


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "gpt_neox", "gpt2"])
@pytest.mark.parametrize("group", ["attention", "ffn", "all-linear", "qv"])
def test_trainable_parameters_are_peft_s(model_type, group):
    pytest.importorskip("transformers")
    config = small(model_type)
    targets = "all-linear" if group == "all-linear" else PEFT_TARGETS[group][model_type]
    trainable, total = peft_count(config, 8, targets)
    ours = lora_params(from_hf_dict(config), 8, parse_targets(group))
    assert (ours.trainable, ours.total) == (trainable, total)


def test_mla_attention_adapters_are_peft_s():
    pytest.importorskip("transformers")
    config = small("deepseek_v2")
    cfg = from_hf_dict(config)
    assert cfg.is_mla
    trainable, total = peft_count(config, 4, PEFT_TARGETS["attention"]["deepseek_v2"])
    ours = lora_params(cfg, 4, ("attention",))
    assert (ours.trainable, ours.total) == (trainable, total)
    with pytest.raises(FfnlabError, match="routed MoE experts"):
        lora_params(cfg, 4, ("attention", "ffn"))


def test_rank_scales_the_adapters_linearly_and_bad_input_is_one_line():
    cfg = from_hf_dict(small("llama"))
    assert lora_params(cfg, 16).trainable == 2 * lora_params(cfg, 8).trainable
    for bad in ("", "mlp", "attention,head", "attention,,ffn", "attention,", ",ffn", " , "):
        with pytest.raises(FfnlabError) as e:
            parse_targets(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(FfnlabError):
        lora_params(cfg, 0)


def test_states_keep_the_base_frozen_and_the_adapters_in_fp32():
    cfg = from_hf_dict(small("llama"))
    lora = lora_params(cfg, 8)
    s = finetune_states(cfg, lora, mode="lora", dtype="bf16", optimizer="adamw")
    assert s.base_weights == 2 * lora.base
    # fp32 adapter weights and gradients, AdamW's two fp32 moments, no master copy (already fp32)
    assert (s.adapter_weights, s.adapter_gradients, s.adapter_optimizer) == (4 * lora.trainable,) * 2 + (
        8 * lora.trainable,)
    q = finetune_states(cfg, lora, mode="qlora")
    assert q.base_weights == weight_bytes(cfg, "nf4").total < s.base_weights
    assert q.total - q.base_weights == s.total - s.base_weights


def test_size_finetune_prints_peft_s_figures_for_llama3_8b():
    """peft prints "trainable params: 41,943,040 || all params: 8,072,204,288" for Llama-3-8B with
    r=16 on all linear layers (built here too when peft is installed)."""
    import json
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "ffnlab", "size", "--from", "llama-3-8b", "--finetune", "qlora",
                        "--lora-rank", "16", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    ft = json.loads(p.stdout)["finetune"]
    assert (ft["lora"]["trainable"], ft["lora"]["total"]) == (41_943_040, 8_072_204_288)
    assert ft["states"]["adapter_optimizer"] == 8 * 41_943_040
    # the step's peak: the states, the activations and the loss's tensors
    # (tests/sizing/memory/test_memory_finetune.py measures it)
    pk = ft["peak"]
    assert pk["peak_bytes"] > ft["states"]["total"] + pk["activations_bytes"] and pk["peak_moment"] == "loss backward"
    assert sum(a["bytes"] for a in pk["peak_alive"]) == pk["peak_bytes"]
    bad = subprocess.run([sys.executable, "-m", "ffnlab", "size", "--d-model", "512", "--finetune", "lora"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--from" in bad.stderr
