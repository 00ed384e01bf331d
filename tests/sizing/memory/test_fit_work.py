"""``fit`` and its suggestions walk few step timelines, whatever the depth, and say what pricing
every layout says.

A step timeline walks every layer, so the work of a fit is the timelines it builds times the
layers. The oracle for the answer is the definition: every layout of the GPU count priced with
:func:`training_table` and :func:`training_peak`, sorted smallest first, those within the
allocator's budget fitting; the suggestions the same at each one-setting change and each doubled
GPU count."""

from __future__ import annotations

from dataclasses import replace

import pytest

import ffnlab.sizing.memory.fit as fit_mod
import ffnlab.sizing.memory.parallel as parallel
from ffnlab.sizing.hf import from_hf_dict
from ffnlab.sizing.memory.allocator import allocated_budget
from ffnlab.sizing.memory.engines import default_workload
from ffnlab.sizing.memory.fit import _changed, _layouts, fit, reserve_bytes, suggestions
from ffnlab.sizing.memory.hardware import custom_accelerator, find_accelerator
from ffnlab.sizing.memory.parallel import table_total, training_peak, training_table
from ffnlab.sizing.memory.sharding import Sharding


def _llama(layers: int, width: int = 16384) -> object:
    return from_hf_dict({"model_type": "llama", "hidden_size": width, "intermediate_size": 3 * width,
                         "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 1000,
                         "num_hidden_layers": layers})


def _moe(layers: int) -> object:
    return from_hf_dict({"model_type": "mixtral", "hidden_size": 512, "intermediate_size": 1024,
                         "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32000,
                         "num_local_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": layers})


def _every_layout(cfg, work, gpus, acc):  # type: ignore[no-untyped-def]
    """(the fitting layouts smallest first as (describe, bytes, moment), the least need, layouts)."""
    held_to = allocated_budget(acc.memory_bytes - reserve_bytes(acc, None))
    rows = []
    for lay in _layouts(cfg, gpus, "train", 8, Sharding()):
        table = training_table(cfg, work, lay)
        tl = training_peak(cfg, work, lay, table)
        rows.append(((lay.tp * lay.pp, lay.zero, lay.ep, lay.pp, tl.peak_bytes), lay.describe(), tl.peak_bytes,
                     tl.peak.name, table_total(table)))
    rows.sort(key=lambda r: r[0])
    return ([r[1:] for r in rows if r[2] <= held_to], min(r[2] for r in rows), len(rows))


def _counted(monkeypatch):  # type: ignore[no-untyped-def]
    built: list[int] = []
    timeline = parallel.step_timeline
    monkeypatch.setattr(parallel, "step_timeline", lambda cfg, *a, **k: built.append(cfg.n_layers) or
                        timeline(cfg, *a, **k))
    fit_mod._pricer.cache_clear()
    return built


WORKS = {"default": default_workload(),
         "accumulated-fused": replace(default_workload(), step=replace(default_workload().step, grad_accum=4,
                                                                       loss="fused")),
         "recompute-full": replace(default_workload(), recompute="full")}


@pytest.mark.parametrize("work", list(WORKS), ids=list(WORKS))
@pytest.mark.parametrize("model, gpus, gib", [("llama-4", 8, 4), ("llama-4", 16, 2), ("llama-4", 4, 8),
                                              ("moe-6", 8, 0.9), ("moe-6", 16, 0.6), ("moe-6", 2, 0.2)])
def test_fit_says_what_pricing_every_layout_says(model, gpus, gib, work):
    cfg = _llama(4, 4096) if model == "llama-4" else _moe(6)
    w, acc = WORKS[work], custom_accelerator(gib)
    fit_mod._pricer.cache_clear()
    res = fit(cfg, w, gpus=gpus, accelerator=acc)
    fitting, least, n = _every_layout(cfg, w, gpus, acc)
    assert [(r.describe, r.per_gpu_bytes, r.peak_moment, r.terms_sum_bytes) for r in res.candidates] == fitting
    assert (res.smallest_need_bytes, res.layouts_tried) == (least, n)


@pytest.mark.parametrize("model, gpus, gib", [("llama-4", 1, 6), ("moe-6", 1, 0.6), ("moe-6", 2, 0.2)])
def test_suggestions_say_what_pricing_every_layout_says(model, gpus, gib):
    cfg, w, acc = (_llama(4, 4096) if model == "llama-4" else _moe(6)), default_workload(), custom_accelerator(gib)
    fit_mod._pricer.cache_clear()
    said = [(s.change, s.fits, s.per_gpu_bytes, s.layout) for s in suggestions(cfg, w, gpus=gpus, accelerator=acc)]
    want = []
    for flag, value, key in fit_mod.TRAIN_CHANGES:
        changed = _changed(w, key, value)
        if changed is not None:
            fitting, least, _ = _every_layout(cfg, changed, gpus, acc)
            want.append((f"{flag} {value}", bool(fitting), fitting[0][1] if fitting else least,
                         fitting[0][0] if fitting else None))
    n = gpus * 2
    while n <= fit_mod.MAX_SUGGESTED_GPUS:
        fitting, least, _ = _every_layout(cfg, w, n, acc)
        if fitting or n * 2 > fit_mod.MAX_SUGGESTED_GPUS:
            want.append((f"--gpus {n}", bool(fitting), fitting[0][1] if fitting else least,
                         fitting[0][0] if fitting else None))
            break
        n *= 2
    assert said == want


@pytest.mark.parametrize("layers", [100, 1000])
def test_a_deep_fit_that_does_not_fit_walks_few_timelines(layers, monkeypatch):
    # 8 GPUs: 40 layouts; each of the three changes 40 more, and 9 doubled GPU counts up to 4,096:
    # pricing each layout walked 476 timelines at 100 layers
    built = _counted(monkeypatch)
    cfg, acc = _llama(layers), find_accelerator("H100")
    assert fit(cfg, gpus=8, accelerator=acc).best is None
    said = suggestions(cfg, gpus=8, accelerator=acc)
    assert said and set(built) == {layers}
    assert len(built) <= 32, f"{len(built)} step timelines of {layers} layers each"


def test_the_timelines_walked_do_not_grow_with_the_gpu_count(monkeypatch):
    # the doubled GPU counts that cannot fit are settled by bounds: no count walks every layout
    cfg, acc = _llama(2000), find_accelerator("H100")
    built = _counted(monkeypatch)
    suggestions(cfg, gpus=1, accelerator=acc)
    assert len(built) <= 32, f"{len(built)} step timelines of 2,000 layers each"
