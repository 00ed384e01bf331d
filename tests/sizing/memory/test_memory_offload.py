"""Activation offload (``--offload-acts``) and the compiled loss (``--compile-loss``) of the step timeline.

Oracles: whole training steps of transformers' Llama measured on CPU (``LiveBytes``, as the
measured-step suite measures them) with the model's forward run under a ``saved_tensors_hooks``
that does what torchtune's ``OffloadActivations`` does: every saved tensor of at least 1024 bytes
that is not a parameter leaves torch's memory in forward (it is copied into a NumPy array, which
the counter does not see) and comes back as a fresh tensor when backward asks for it; the LM head
runs outside it (torchtune opts its output layer out) and so does the loss. Without a GPU there is
no second stream, so the forward stash (tensors waiting for their copy) is not measured: the
prediction is made with none. The compiled loss: the tensors ``torch.compile``'s cross-entropy
saves for backward, caught by a ``saved_tensors_hooks`` on CPU, against the eager one's. The
facts of ``data/offload.json`` each name their source.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest
from memory_step_cases import HF_COMMON, Case, measure, step_options

from ffnlab.sizing.memory.activations import STAT_BYTES
from ffnlab.sizing.memory.parallel import (
    Layout,
    Workload,
    memory_summary,
    offload_modes,
    training_peak,
    training_table,
)
from ffnlab.sizing.memory.step import COMPILED_LOSS_STATS

TOLERANCE = 0.05
MIN_OFFLOAD_BYTES = offload_modes()["activations"]["engines"]["torchtune"]["min_offload_size"]

OFFLOAD_CASES = [
    Case("transformers Llama 8 layers, gradient checkpointing, activations offloaded", "LlamaConfig",
         dict(HF_COMMON, vocab_size=512, num_hidden_layers=8), recompute="full", held=False),
    Case("transformers Llama 4 layers, vocab 4000, gradient checkpointing, activations offloaded", "LlamaConfig",
         dict(HF_COMMON, vocab_size=4000, num_hidden_layers=4), 4, 128, recompute="full", held=False),
    Case("transformers Llama 6 layers, batch 8 x 256, gradient checkpointing, activations offloaded", "LlamaConfig",
         dict(HF_COMMON, vocab_size=256, num_hidden_layers=6), 8, 256, recompute="full", held=False),
]


def offload_pack(t: Any) -> Any:
    """What OffloadActivations does with a saved tensor: a parameter or a tensor under 1024 bytes
    stays; any other leaves torch's memory (a NumPy copy, which the counter does not see)."""
    import numpy as np
    import torch

    if isinstance(t, torch.nn.Parameter) or t.element_size() * t.nelement() < MIN_OFFLOAD_BYTES:
        return t
    return np.array(t.detach().numpy(), copy=True)


def offload_unpack(packed: Any) -> Any:
    """Brought back for backward: a new tensor, counted again."""
    import torch

    return packed if isinstance(packed, torch.Tensor) else torch.from_numpy(packed).clone()


def offloading_hooks() -> Any:
    import torch

    return torch.autograd.graph.saved_tensors_hooks(offload_pack, offload_unpack)


def built_offloaded(case: Case) -> tuple[Any, Any, Any]:
    """transformers' Llama stepped as torchtune steps it with activation offloading: the decoder
    (its layers and final norm) under the offload hooks, the LM head and the loss outside them."""
    import transformers

    from ffnlab.sizing.hf import from_hf_dict

    hf_cfg = transformers.LlamaConfig(**case.model, attn_implementation="sdpa")
    model = transformers.AutoModelForCausalLM.from_config(hf_cfg)
    if case.recompute == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False

    def loss_fn(x: Any) -> tuple[Any, Any]:
        with offloading_hooks():
            hidden = model.model(input_ids=x, use_cache=False).last_hidden_state
        logits = model.lm_head(hidden)
        loss = model.loss_function(logits=logits, labels=x, vocab_size=hf_cfg.vocab_size)
        return loss, None  # the logits are not kept by the caller (torchtune deletes them)

    return model, from_hf_dict(hf_cfg.to_dict()), loss_fn


def predicted(case: Case, cfg: Any, *, offload: bool) -> Any:
    work = Workload(seq_len=case.seq_len, batch=case.batch, dtype="fp32", recompute=case.recompute,
                    step=replace(step_options(case), offload_activations=offload))
    return training_peak(cfg, work, Layout(), training_table(cfg, work, Layout()))


@pytest.mark.parametrize("case", OFFLOAD_CASES, ids=[c.name for c in OFFLOAD_CASES])
def test_offloaded_step_is_within_5_percent_of_the_measured_one(case: Case) -> None:
    pytest.importorskip("transformers")
    measured, op, cfg = measure(case, built_offloaded(case))
    timeline = predicted(case, cfg, offload=True)
    gap = timeline.peak_bytes / measured - 1
    assert abs(gap) < TOLERANCE, (case.name, measured, op, timeline.peak_bytes, timeline.peak.name)
    kept = predicted(case, cfg, offload=False)
    assert kept.moments[0].total > timeline.moments[0].total  # forward ends with the activations on the host
    assert timeline.host_bytes > 0 and kept.host_bytes == 0
    print(f"{case.name}: measured {measured:,}, predicted {timeline.peak_bytes:,} at {timeline.peak.name} "
          f"({gap:+.2%}); without the offload {kept.peak_bytes:,}")


def test_the_offload_hooks_move_what_torchtune_moves() -> None:
    """The simulation's rule is torchtune's: parameters and tensors under 1024 bytes stay."""
    import torch

    assert MIN_OFFLOAD_BYTES == 1024
    weight, small, big = torch.nn.Parameter(torch.randn(64, 64)), torch.randn(255), torch.randn(256)
    assert offload_pack(weight) is weight and offload_pack(small) is small
    moved = offload_pack(big)
    assert not isinstance(moved, torch.Tensor) and torch.equal(offload_unpack(moved), big)


def test_the_forward_stash_and_host_memory_are_reported() -> None:
    from ffnlab.sizing.zoo import find

    cfg = find("llama-3.2-1b").config()
    assert cfg is not None
    base = Workload(seq_len=2048, batch=2, recompute="full")

    def timeline(**step: Any) -> Any:
        work = replace(base, step=replace(base.step, **step))
        return training_peak(cfg, work, Layout(), training_table(cfg, work, Layout()))

    plain, off, stash = timeline(), timeline(offload_activations=True), timeline(offload_activations=True,
                                                                                 offload_stash=5)
    assert off.moments[0].total < stash.moments[0].total < plain.moments[0].total  # forward end
    assert plain.host_bytes == 0 < off.host_bytes == stash.host_bytes
    assert all(w != "kept activations, all layers" for m in off.moments for w, _ in m.alive)
    summary = memory_summary(cfg, replace(base, step=replace(base.step, offload_activations=True)))
    assert summary.offload == "activations" and summary.host_bytes == off.host_bytes


@pytest.mark.slow
def test_compiled_cross_entropy_keeps_the_logits_and_two_statistics_per_token() -> None:
    """torch.compile's cross-entropy saves its bf16 input and two fp32 values per token where the
    eager one saves two fp32 copies of the logits (its upcast and its log-softmax)."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    def ce(logits: Any, labels: Any) -> Any:
        return F.cross_entropy(logits.float(), labels, reduction="sum")

    n, v = 256, 4096
    x = torch.randn(n, v, dtype=torch.bfloat16, requires_grad=True)
    y = torch.randint(0, v, (n,))

    def saved_by(fn: Any) -> list[Any]:
        got: list[Any] = []

        def pack(t: Any) -> Any:
            got.append(t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = fn(x, y)
        loss.backward()
        return got

    eager = saved_by(ce)
    assert sum(t.nelement() for t in eager if t.dtype == torch.float32) >= 2 * n * v
    compiled = saved_by(torch.compile(ce))
    fp32 = [t for t in compiled if t.dtype == torch.float32]
    assert sum(t.nelement() * t.element_size() for t in fp32) == n * COMPILED_LOSS_STATS * STAT_BYTES
    assert any(t.dtype == torch.bfloat16 and t.shape == (n, v) for t in compiled)  # the logits themselves


def test_the_compiled_loss_drops_the_fp32_log_softmax_from_the_timeline() -> None:
    from ffnlab.sizing.zoo import find

    cfg = find("llama-3.2-1b").config()
    assert cfg is not None
    base = Workload(seq_len=2048, batch=2, recompute="full")

    def timeline(**step: Any) -> Any:
        work = replace(base, step=replace(base.step, logits_held=False, **step))
        return training_peak(cfg, work, Layout(), training_table(cfg, work, Layout()))

    for loss in ("full", "chunked"):
        eager, compiled = timeline(loss=loss), timeline(loss=loss, loss_compiled=True)
        for before, after in zip(eager.moments[:2], compiled.moments[:2], strict=True):  # forward end, loss backward
            assert after.total < before.total
            assert all(not w.startswith("loss: log-softmax") and w != "loss: fp32 upcast" for w, _ in after.alive)


def test_the_offload_needs_checkpointing() -> None:
    """torchtune refuses offloading without activation checkpointing; without it a layer's saved
    tensors come back one autograd node at a time, which the timeline does not model."""
    from ffnlab.errors import FfnlabError

    with pytest.raises(FfnlabError, match="--offload-acts needs --recompute full or op-selective"):
        Workload(recompute="none", step=replace(Workload().step, offload_activations=True))


def test_every_activation_offload_fact_names_its_source() -> None:
    act = offload_modes()["activations"]
    assert set(act["engines"]) == {"torchtune", "unsloth"}
    for fact in act["facts"]:
        src = fact["source"]
        assert fact["fact"] and src["path"] and src["ref"] and src["repo"].count("/") == 1


def test_the_command_line_offloads_and_refuses_in_one_line() -> None:
    run = [sys.executable, "-m", "ffnlab", "size", "--from", "llama-3.2-1b", "--seq-len", "4096", "--batch", "2",
           "--recompute", "full"]
    ok = subprocess.run([*run, "--offload-acts", "--compile-loss", "--json"], capture_output=True, text=True,
                        check=False)
    assert ok.returncode == 0, ok.stderr
    mem = json.loads(ok.stdout)["model"]["memory"]
    assert mem["offload"] == "activations" and mem["host_bytes"] > 0
    plain = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True, check=True).stdout)
    assert mem["peak_bytes"] < plain["model"]["memory"]["peak_bytes"]
    bad = subprocess.run([*run, "--compile-loss", "--loss", "fused"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--compile-loss" in bad.stderr
