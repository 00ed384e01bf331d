"""The training step's peak (sizing/memory/step.py) against whole steps measured on CPU.

Oracle: the live bytes of a real training step of ffnlab's model and of transformers' models,
counted op by op (``LiveBytes``; itself checked against torch's own ``MemTracker``). Every case
of ``memory_step_cases.CASES`` must be within 5% of the prediction, at the moment it names.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from memory_step_cases import (
    CASES,
    FREED_CASES,
    PURE_CASES,
    SAC_CASES,
    Case,
    build,
    measure,
    optimizer,
    predict,
    run_step,
)

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import make_config
from ffnlab.sizing.memory.parallel import Layout, memory_summary, training_peak, training_table
from ffnlab.sizing.memory.step import StepInputs, StepOptions, step_timeline
from ffnlab.sizing.memory.workload import Workload

TOLERANCE = 0.05
torch = pytest.importorskip("torch")


def measured_and_predicted(case: Case) -> tuple[Any, Any]:
    """The case's step measured and predicted, the prediction within TOLERANCE of the measurement;
    (the timeline, ffnlab's config)."""
    measured, op, cfg = measure(case)
    timeline = predict(case, cfg)
    gap = timeline.peak_bytes / measured - 1
    assert abs(gap) < TOLERANCE, (case.name, measured, op, timeline.peak_bytes, timeline.peak.name)
    return timeline, cfg


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_predicted_peak_is_within_5_percent_of_the_measured_step(case: Case) -> None:
    if case.family != "ffnlab":
        pytest.importorskip("transformers")
    measured_and_predicted(case)


@pytest.mark.parametrize("case", FREED_CASES, ids=[c.name for c in FREED_CASES])
def test_hf_trainer_step_without_held_logits_is_within_5_percent(case: Case) -> None:
    """``model(**batch).loss.backward()``: the caller keeps no logits, and neither does the prediction."""
    pytest.importorskip("transformers")
    timeline, cfg = measured_and_predicted(case)
    held = predict(replace(case, held=True), cfg)
    assert held.peak_bytes > timeline.peak_bytes  # one logits tensor too many when held


@pytest.mark.parametrize("case", SAC_CASES, ids=[c.name for c in SAC_CASES])
def test_op_level_selective_checkpointing_step_is_within_5_percent(case: Case) -> None:
    """transformers' Llama checkpointed per layer with torchtitan's op-level policy: the whole
    step's peak (the saved op outputs below, one layer recomputed around its own) as predicted."""
    pytest.importorskip("transformers")
    timeline, cfg = measured_and_predicted(case)
    full = predict(replace(case, recompute="full"), cfg)
    assert full.peak_bytes < timeline.peak_bytes  # keeping more than the layer inputs costs memory


@pytest.mark.parametrize("case", PURE_CASES, ids=[c.name for c in PURE_CASES])
def test_pure_bf16_peak_is_within_5_percent_of_the_measured_step(case: Case) -> None:
    """The model cast to bf16 before AdamW is made: bf16 weights, gradients and moments, no master copy."""
    if case.family != "ffnlab":
        pytest.importorskip("transformers")
    measured_and_predicted(case)


def test_pure_bf16_states_are_bf16_without_a_master_copy() -> None:
    cfg = make_config(64, 2, 4, 256, kind="gelu", vocab_size=97)
    mixed, pure = (memory_summary(cfg, Workload(pure_bf16=p)).as_dict() for p in (False, True))
    p = mixed["weights_bytes"] // 2
    assert mixed["optimizer_bytes"] == 12 * p  # fp32 moments 8 B + fp32 master 4 B
    assert pure["optimizer_bytes"] == 4 * p  # bf16 moments, no master
    assert pure["weights_bytes"] == mixed["weights_bytes"] and pure["gradients_bytes"] == 2 * p
    with pytest.raises(FfnlabError, match="--pure-bf16 trains in bf16"):
        Workload(dtype="fp32", pure_bf16=True)


def test_live_bytes_counter_agrees_with_torch_memtracker() -> None:
    """The counter the cases use gives the same peak as torch.distributed._tools.mem_tracker."""
    mem_tracker = pytest.importorskip("torch.distributed._tools.mem_tracker")
    from ffnlab.training.live_bytes import LiveBytes, model_tensors, optimizer_tensors

    for case in (CASES[0], CASES[10]):  # the loss leads; the optimizer step leads
        model, cfg, loss_fn = build(case)
        opt = optimizer(case, model)
        x = torch.randint(0, cfg.vocab_size, (case.batch, case.seq_len), generator=torch.Generator().manual_seed(1))
        run_step(case, model, opt, x, loss_fn)
        lb = LiveBytes()
        with lb:
            lb.add_existing(model_tensors(model) + optimizer_tensors(opt), "before")
            run_step(case, model, opt, x, loss_fn)
        mt = mem_tracker.MemTracker()
        mt.track_external(model, opt)
        with mt:
            run_step(case, model, opt, x, loss_fn)
        assert mt.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"] == lb.peak


def test_the_peak_moves_with_the_policy_as_measured() -> None:
    """Small vocabulary and full recompute: the peak leaves the loss for a layer's backward; a
    wide model on a short batch peaks in the optimizer step (foreach AdamW's square roots)."""
    names = {c.name: c for c in CASES}
    recompute = predict(names["ffnlab gelu 6 layers, full recompute"],
                        _cfg(names["ffnlab gelu 6 layers, full recompute"]))
    assert recompute.peak.name.startswith("backward, layer 6 of 6, FFN (recomputed)")
    wide = names["ffnlab wide model, short batch: foreach AdamW step leads"]
    assert predict(wide, _cfg(wide)).peak.name == "optimizer step"
    fused = names["ffnlab wide model: fused AdamW"]
    assert predict(fused, _cfg(fused)).peak.name != "optimizer step"


def _cfg(case: Case):  # noqa: ANN202
    return build(case)[1]


# -- the timeline's arithmetic, by hand ----------------------------------------------------------

def _hand_case():  # noqa: ANN202
    # d 8, 1 layer, 2 heads, GELU d_ff 16, vocab 10, learned positions, layernorm; batch 1 x 4 tokens, fp32
    cfg = make_config(8, 1, 2, 16, kind="gelu", vocab_size=10, max_positions=4, norm="layernorm", positions="learned")
    states = StepInputs(weights=1000, gradients=1000, optimizer=2000, working=0, opt_temp=1000)
    return cfg, states


def test_loss_backward_holds_logits_log_softmax_and_two_gradients() -> None:
    cfg, states = _hand_case()
    tl = step_timeline(cfg, Workload(seq_len=4, batch=1, dtype="fp32", recompute="none", attention="fused"), states)
    m = {x.name: dict(x.alive) for x in tl.moments}["loss backward"]
    nv = 4 * 10  # tokens x vocab
    assert m["logits (held)"] == nv * 4
    assert m["loss: log-softmax (kept)"] == nv * 4
    assert m["loss: log-softmax gradients"] == 2 * nv * 4
    assert m["weights"] == 1000 and m["optimizer state"] == 2000 and "gradients" not in m
    # one layer keeps (per token): norm 8 + 2 stats, attention input 8, qkv 24, lse 2, output 8,
    # FFN norm 8 + 2 stats, FFN input 8, GELU hidden 2 x 16 = 32 -> 76 fp32 + 4 stats ... by the model:
    from ffnlab.sizing.memory.activations import activation_memory

    assert m["kept activations, all layers"] == sum(activation_memory(cfg, seq_len=4, batch=1, dtype="fp32").per_layer)


def test_optimizer_step_holds_every_state_and_its_temporaries() -> None:
    cfg, states = _hand_case()
    tl = step_timeline(cfg, Workload(seq_len=4, batch=1, dtype="fp32", recompute="none", attention="fused"), states)
    step = {x.name: x for x in tl.moments}["optimizer step"]
    assert step.total == 1000 + 2000 + 1000 + 1000 + 4 * 10 * 4  # weights, optimizer, grads, temps, held logits
    assert tl.peak.total == max(x.total for x in tl.moments)


def test_logits_not_held_and_the_fused_loss_remove_the_logits() -> None:
    cfg, states = _hand_case()
    work = Workload(seq_len=4, batch=1, dtype="fp32", recompute="none", attention="fused")
    freed = step_timeline(cfg, replace(work, step=StepOptions(logits_held=False)), states)
    held = step_timeline(cfg, work, states)
    assert dict(held.moments[1].alive)["logits (held)"] - dict(freed.moments[1].alive).get("logits (held)", 0) == 160
    fused = step_timeline(cfg, replace(work, step=StepOptions(loss="fused")), states)
    assert all("logits" not in w for m in fused.moments for w, _ in m.alive if not w.startswith("loss: one chunk"))


def test_chunked_loss_divides_the_backward_gradients_by_the_chunks() -> None:
    cfg, states = _hand_case()
    work = Workload(seq_len=4, batch=1, dtype="fp32", recompute="none", attention="fused")
    m = dict(step_timeline(cfg, replace(work, step=StepOptions(loss="chunked", loss_chunks=4)),
                           states).moments[1].alive)
    assert m["loss: log-softmax gradients"] == 2 * 40 * 4 // 4


def test_gradient_accumulation_keeps_every_gradient_from_the_first_moment() -> None:
    cfg, states = _hand_case()
    work = Workload(seq_len=4, batch=1, dtype="fp32", recompute="none", attention="fused")
    tl = step_timeline(cfg, replace(work, step=StepOptions(grad_accum=4)), states)
    assert dict(tl.moments[0].alive)["gradients (accumulated)"] == 1000


def test_bf16_upcast_is_counted_in_forward_only() -> None:
    cfg, states = _hand_case()
    tl = step_timeline(cfg, Workload(seq_len=4, batch=1, dtype="bf16", recompute="none", attention="fused"), states)
    fwd, bwd = dict(tl.moments[0].alive), dict(tl.moments[1].alive)
    assert fwd["loss: fp32 upcast"] == 160 and fwd["logits"] == 80
    assert "loss: fp32 upcast" not in bwd and bwd["logits (held)"] == 80


@pytest.mark.parametrize("bad, message", [
    (dict(loss="sampled"), "--loss must be one of"), (dict(optimizer_impl="magic"), "--optimizer-impl"),
    (dict(grad_accum=0), "--grad-accum"), (dict(recompute_every=0), "--recompute-every"),
    (dict(loss_chunks=0), "--loss-chunks")])
def test_bad_step_options_are_refused(bad: dict, message: str) -> None:
    with pytest.raises(FfnlabError, match=message):
        StepOptions(**bad).check()


# -- the summary and the table agree with the timeline -----------------------------------------------

def test_summary_total_is_the_peak_and_the_sum_is_named_a_sum() -> None:
    cfg = make_config(4096, 32, 32, 14336, kind="swiglu", vocab_size=128256, n_kv_heads=8, tied_embeddings=False)
    m = memory_summary(cfg, Workload(seq_len=2048)).as_dict()
    assert m["training_total_bytes"] == m["peak_bytes"]
    assert m["terms_sum_bytes"] == m["states_bytes"] + m["activations_bytes"] + m["working_bytes"]
    # one GPU, batch 1, foreach AdamW: 2 + 2 + 12 bytes of states and 4 of square roots per parameter,
    # beside the held bf16 logits
    p = 8_030_261_248
    assert m["peak_moment"] == "optimizer step" and m["peak_bytes"] == 20 * p + 2048 * 128256 * 2
    assert sum(a["bytes"] for a in m["peak_alive"]) == m["peak_bytes"]
    rows = training_table(cfg, Workload(seq_len=2048), Layout())
    assert training_peak(cfg, Workload(seq_len=2048), Layout(), rows).peak_bytes == m["peak_bytes"]
    # four sequences: the activations and the loss's tensors lead
    assert memory_summary(cfg, Workload(seq_len=2048, batch=4)).as_dict()["peak_moment"] == "loss backward"


def test_the_fused_loss_lowers_a_large_vocabulary_peak() -> None:
    # llama-3-8b's 128k vocabulary: the full loss's logits and gradients lead at 4 x 2048 tokens
    cfg = make_config(4096, 32, 32, 14336, kind="swiglu", vocab_size=128256, n_kv_heads=8, tied_embeddings=False)
    full = memory_summary(cfg, Workload(seq_len=2048, batch=4, step=StepOptions(optimizer_impl="fused"))).peak_bytes
    fused = memory_summary(cfg, Workload(seq_len=2048, batch=4,
                                         step=StepOptions(loss="fused", optimizer_impl="fused"))).peak_bytes
    nv = 4 * 2048 * 128256
    assert full - fused > nv * 10  # at least the held bf16 logits and two fp32 gradients


# -- the loss implementations: the same loss and gradients as the full cross-entropy --------------------

@pytest.mark.parametrize("tied", [True, False])
def test_chunked_and_fused_losses_equal_the_full_one(tied: bool) -> None:
    from ffnlab.training import losses

    g = torch.Generator().manual_seed(0)
    h = torch.randn(2, 37, 16, generator=g)
    w = torch.randn(101, 16, generator=g)
    t = torch.randint(0, 101, (2, 37), generator=g)
    t[0, :3] = losses.IGNORE_INDEX
    results = []
    for fn in ("full", "chunked", "fused"):
        hh, ww = h.clone().requires_grad_(), w.clone().requires_grad_()
        if fn == "full":
            loss = losses.full_cross_entropy(hh, ww, t)[0]
        elif fn == "chunked":
            loss = losses.chunked_cross_entropy(hh, ww, t, chunks=5)[0]
        else:
            loss = losses.fused_linear_cross_entropy(hh, ww, t)
        (loss * (3.0 if tied else 1.0)).backward()
        results.append((loss.detach(), hh.grad, ww.grad))
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            assert torch.allclose(a, b, rtol=1e-5, atol=1e-7)


def test_fused_chunks_follow_liger_rule() -> None:
    from ffnlab.training.losses import fused_chunk_tokens

    # N 4096 tokens, V 128256, d 4096: ceil(128256 / 4096) = 32 -> 128 tokens per chunk
    assert fused_chunk_tokens(4096, 128256, 4096) == 128
    assert fused_chunk_tokens(10, 5, 64) == 10  # a vocabulary narrower than d: one chunk


def test_every_ffn_kind_has_backward_temporaries() -> None:
    from ffnlab.sizing.memory.activations import FFN_KEEPS
    from ffnlab.sizing.memory.step import FFN_BACKWARD_TEMPS

    assert set(FFN_BACKWARD_TEMPS) == set(FFN_KEEPS)
