"""CPU offload (``--offload``) and bitsandbytes' paged 8-bit AdamW (``--optimizer paged-adam8bit``).

Oracles: the facts of ``data/offload.json`` against the installed torch's own ``CPUOffloadPolicy``
docstring; the paged tensors against a transformers Llama's real parameters (bitsandbytes pages
the states of every tensor of at least 1e5 values, ``get_state_buffer``); ZeRO's own rule for
what each stage and offload leaves on the GPU (the per-GPU rows move to the host figure, byte for
byte, and nothing else changes). No GPU: the host/device split itself is not measured here.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import make_config
from ffnlab.sizing.memory.optimizers import PAGED_MIN_SIZE, paged_state
from ffnlab.sizing.memory.parallel import Layout, memory_summary, offload_modes, training_table
from ffnlab.sizing.memory.workload import Workload


def small():
    return make_config(256, 2, 4, 688, kind="swiglu", n_kv_heads=2, vocab_size=1000, tied_embeddings=False)


def test_every_offload_fact_has_a_source_and_the_fsdp2_one_matches_torch() -> None:
    from torch.distributed.fsdp import CPUOffloadPolicy

    doc = " ".join((inspect.getdoc(CPUOffloadPolicy) or "").split())
    checked = 0
    for mode in offload_modes()["modes"].values():
        for fact in mode["facts"]:
            src = fact["source"]
            assert ("repo" in src and "path" in src and "ref" in src) or "url" in src
            for phrase in fact.get("docstring_check", []):
                assert phrase in doc, phrase
                checked += 1
    assert checked >= 2


@pytest.mark.parametrize(("mode", "zero"), [("optimizer", 1), ("optimizer", 2), ("optimizer", 3), ("params", 3)])
def test_offloaded_rows_move_to_the_host(mode: str, zero: int) -> None:
    cfg, lay = small(), Layout(dp=4, zero=zero)
    base = {r.term: r for r in training_table(cfg, Workload(seq_len=64), lay)}
    off = memory_summary(cfg, Workload(seq_len=64, offload=mode), lay)
    moved = offload_modes()["modes"][mode]["moves"]
    rows = {r.term: r for r in off.training_terms or ()}
    for term, r in base.items():
        assert rows[term].per_gpu_bytes == (0 if term in moved else r.per_gpu_bytes), term
    host = {r.term.removeprefix("host: "): r.per_gpu_bytes for r in off.host_terms or ()}
    assert set(host) == set(moved)
    assert host["optimizer"] == base["optimizer"].per_gpu_bytes
    if mode == "optimizer":  # ZeRO-Offload keeps the gradients in fp32 on the host (bf16 on the GPU)
        assert host["gradients"] == 2 * base["gradients"].per_gpu_bytes
    else:
        assert host["gradients"] == base["gradients"].per_gpu_bytes and host["weights"] == base["weights"].per_gpu_bytes
    assert off.host_bytes == sum(host.values())
    plain = memory_summary(cfg, Workload(seq_len=64), lay)
    assert off.peak_bytes is not None and plain.peak_bytes is not None and off.peak_bytes < plain.peak_bytes
    assert "host_bytes" not in plain.as_dict() and off.as_dict()["offload"] == mode


@pytest.mark.parametrize(("mode", "zero"), [("optimizer", 0), ("params", 2)])
def test_offload_needs_its_zero_stage(mode: str, zero: int) -> None:
    with pytest.raises(FfnlabError, match=f"--offload {mode} needs --zero"):
        memory_summary(small(), Workload(seq_len=64, offload=mode), Layout(dp=2, zero=zero))


def test_the_command_line_shows_the_host_memory_and_refuses_in_one_line() -> None:
    run = [sys.executable, "-m", "ffnlab", "size", "--from", "llama-3-8b"]
    ok = subprocess.run([*run, "--dp", "8", "--zero", "3", "--offload", "params", "--json"], capture_output=True,
                        text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    mem = json.loads(ok.stdout)["model"]["memory"]
    assert mem["offload"] == "params" and mem["host_bytes"] > 0 and mem["weights_bytes"] == 0
    bad = subprocess.run([*run, "--offload", "params"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--zero 3" in bad.stderr
    table = subprocess.run([*run, "--optimizer", "paged-adam8bit"], capture_output=True, text=True, check=False)
    assert table.returncode == 0 and "host memory (paged optimizer states)" in table.stdout


def test_paged_tensors_are_those_of_at_least_1e5_values() -> None:
    """Against a transformers Llama of the same shape (on the meta device): bitsandbytes pages
    the two uint8 states of each parameter of at least 1e5 values."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    hf = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=1000, tie_word_embeddings=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(hf)
    sizes = [p.numel() for p in model.parameters()]
    assert any(n < PAGED_MIN_SIZE for n in sizes if n > 4096)  # q and o stay unpaged at this width
    paged, largest = paged_state(small())
    assert paged == sum(2 * n for n in sizes if n >= PAGED_MIN_SIZE)
    assert largest == 2 * max(sizes)


def test_paged_states_leave_the_gpu_but_for_one_tensor_at_the_step() -> None:
    cfg = small()
    plain = memory_summary(cfg, Workload(seq_len=64, optimizer="adam8bit"))
    paged = memory_summary(cfg, Workload(seq_len=64, optimizer="paged-adam8bit"))
    total, largest = paged_state(cfg)
    assert plain.optimizer_bytes - paged.optimizer_bytes == total == paged.host_bytes
    assert paged.peak_bytes is not None and plain.peak_bytes is not None
    assert paged.peak_bytes <= plain.peak_bytes - total + largest
