"""The published-peak suite's data (data/published_peaks.json, sizing/memory/published_peaks.py).

Oracle: the file's own schema (its ``about``, vocabularies and ``required_settings``). Every case
names its source (a repository file at a commit, or a page) and the trainer's version, quotes its
figure, gives the figure's unit and bytes, says which memory it is, and gives every setting (the
string ``unknown`` where the source is silent, listed in the case's ``unknown``). A planted
incomplete case must be caught. Each case turns into a valid ffnlab workload and layout, and a
case ffnlab cannot express says why.
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from ffnlab.sizing.finetune import finetune_summary
from ffnlab.sizing.memory import published_peaks
from ffnlab.sizing.memory.parallel import memory_summary
from ffnlab.sizing.zoo import find

CASES = published_peaks.cases()
IDS = [c["id"] for c in CASES]


def test_the_suite_has_fifteen_cases_over_five_trainers() -> None:
    assert len(CASES) >= 15
    assert len({c["trainer"] for c in CASES}) >= 5


def test_the_kept_file_has_no_problems() -> None:
    assert published_peaks.problems() == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_case_is_sourced_quoted_and_complete(case: dict[str, Any]) -> None:
    doc = published_peaks.load()
    assert published_peaks.case_problems(case, doc) == []
    src = case["source"]
    assert src["url"].startswith("https://")
    if "repo" in src:
        assert len(src["commit"]) == 40 and src["commit"] in src["url"]
    assert case["figure"]["unit"] in doc["units"]
    assert case["memory_kind"] in doc["memory_kinds"]
    # the quoted line carries the figure itself
    fig = case["figure"]
    shown = f"{fig['seq_len_fitting']:,}" if case["memory_kind"] == "capacity" else str(fig["value"])
    assert shown in case["quoted"]
    for key in doc["required_settings"]:
        assert key in case["settings"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bytes_agree_with_the_quoted_value_and_unit(case: dict[str, Any]) -> None:
    fig = case["figure"]
    if case["memory_kind"] == "capacity":
        assert fig["bytes"] is None
        return
    scale = {"bytes": 1, "MiB": 2**20, "GiB": 2**30, "GB": 10**9}[fig["unit"]]
    assert fig["bytes"] == round(fig["value"] * scale)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_case_prices_as_an_ffnlab_workload(case: dict[str, Any]) -> None:
    price = published_peaks.pricing(case)
    assert find(price.model).config() is not None  # a zoo model with its architecture
    assert price.work.batch == case["settings"]["micro_batch"]
    assert price.work.seq_len == case["settings"]["seq_len"]
    assert price.work.step.logits_held == (case["settings"]["logits_freed"] is not True)
    accum = case["settings"]["grad_accum"]
    assert price.work.step.grad_accum == (accum if isinstance(accum, int) else 1)
    assert (price.api == "finetune_summary") == (case["settings"]["finetune"] is not None)
    if case["settings"]["precision"] == "pure-bf16":  # full training: --pure-bf16; LoRA: adapters only
        if case["settings"]["finetune"] is None:
            assert price.work.pure_bf16 and not any("pure bf16" in r for r in price.not_expressible)
        else:  # bf16 adapters priced as such (torchtune), or the fp32 ones peft keeps, said so
            assert not price.work.pure_bf16
            assert price.work.finetune is not None
            assert (price.work.finetune.adapter_dtype == "bf16"
                    or any("pure bf16" in r for r in price.approximations))
    if case["settings"]["activation_offload"] is True:  # offloaded as the trainer's own facts say, or not expressed
        known = published_peaks.activation_offload(case["trainer"])
        assert price.work.step.offload_activations == (known is not None)
        assert known is not None or any("offloaded" in r for r in price.not_expressible)
    if case["settings"]["torch_compile"] is True:  # compile is priced eager only under checkpointing
        where = (price.approximations if case["settings"]["recompute"] in ("full", "selective-op")
                 else price.not_expressible)
        assert any("torch.compile" in r for r in where)
        assert not any("torch.compile" in r for r in price.not_expressible if where is price.approximations)
    if "foak" in str(case["settings"].get("framework_config", "")):  # eager is the bound only under full AC
        where = price.approximations if case["settings"]["recompute"] == "full" else price.not_expressible
        assert any("foak" in r for r in where)
        assert price.work.step.loss == "full"  # fast_loss true: FastForCausalLMLoss keeps the fp32 logits
    assert price.work.step.loss_compiled == (case["settings"].get("loss_compiled") is True)
    if case["settings"]["recompute"] == "selective-op":  # torchtitan's op-level policy, priced as it runs
        assert price.work.recompute == "op-selective"
        assert not any("selective" in r for r in price.not_expressible)
    if case["settings"]["finetune"] is not None and case["settings"]["gpus"] > 1:  # the frozen base sharded
        assert price.layout.dp == case["settings"]["layout"]["dp"] and price.layout.zero == 3
        assert not any("FSDP over" in r for r in price.not_expressible)


def _planted(**change: Any) -> list[str]:
    doc = copy.deepcopy(published_peaks.load())
    case = doc["cases"][0]
    for path, value in change.items():
        *head, last = path.split("__")
        where = case
        for key in head:
            where = where[key]
        if value is KeyError:
            del where[last]
        else:
            where[last] = value
    return published_peaks.case_problems(case, doc)


@pytest.mark.parametrize(("change", "problem"), [
    ({"source__url": ""}, "source has no url"),
    ({"source__commit": KeyError}, "a repository source needs its path and commit"),
    ({"trainer_version": ""}, "no trainer_version"),
    ({"quoted": " "}, "no quoted"),
    ({"figure__unit": "gigs"}, "unit 'gigs' is not one of"),
    ({"figure__bytes": None}, "a peak needs its figure in bytes"),
    ({"memory_kind": "used"}, "memory_kind 'used' is not one of"),
    ({"settings__seq_len": KeyError}, "settings has no seq_len"),
    ({"settings__optimizer": ""}, "setting optimizer is empty"),
    ({"settings__layout__zero": KeyError}, "layout has no zero"),
    ({"trainer": "mystery"}, "trainer 'mystery' is not one of"),
])
def test_a_planted_incomplete_case_is_caught(change: dict[str, Any], problem: str) -> None:
    found = _planted(**change)
    assert any(problem in p for p in found), found


def test_an_unknown_setting_must_be_listed() -> None:
    found = _planted(settings__optimizer="unknown", unknown=[])
    assert any("unknown list is empty" in p for p in found), found


def test_a_duplicate_id_is_caught() -> None:
    doc = copy.deepcopy(published_peaks.load())
    doc["cases"].append(copy.deepcopy(doc["cases"][0]))
    assert any("duplicate id" in p for p in published_peaks.problems(doc))


RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "memory-scale-cuda.json"
EXPRESSIBLE = [c for c in CASES if published_peaks.pricing(c).expressible]
# the cases ffnlab cannot express yet, each for the reason its pricing gives (the issue allows 3):
# settings the source does not state (the HF baseline of Unsloth's table); fms-acceleration's foak
# kernels under full checkpointing are an approximation (priced eager), Unsloth's kernels are priced
# from what they keep (data/fused_kernels.json), LitGPT's QLoRA with Lightning's 4-bit LM head
NOT_EXPRESSIBLE_YET = {"hf-fa2-llama3.1-8b-qlora-maxctx-80gb"}


def test_the_cases_not_expressed_are_the_known_ones_each_with_a_reason() -> None:
    """A case that becomes expressible (or stops being) must be moved here on purpose."""
    missing = {c["id"]: published_peaks.pricing(c).not_expressible for c in CASES if c not in EXPRESSIBLE}
    assert set(missing) == NOT_EXPRESSIBLE_YET
    assert all(reasons and all(r.strip() for r in reasons) for reasons in missing.values())


def measured_allocator_share() -> float:
    """Max reserved over max allocated, the median of the real-size CUDA steps kept in
    benchmarks/results (an H200 run of ``benchmarks/memory_cuda.py --measure-scale``)."""
    rows = json.loads(RESULTS.read_text(encoding="utf-8"))["rows"]
    return statistics.median(r["allocator_share"] for r in rows if r.get("allocator_share"))


@pytest.mark.parametrize("case", EXPRESSIBLE, ids=[c["id"] for c in EXPRESSIBLE])
def test_every_expressible_case_is_within_ten_percent_of_its_published_figure(case: dict[str, Any]) -> None:
    """Like with like: a reserved figure is compared with ffnlab's allocated peak times the
    allocator's measured reserved-over-allocated share (allocated alone never exceeds reserved);
    a capacity with ffnlab's longest sequence that fits the card."""
    cid = case["id"]
    if case["memory_kind"] == "capacity":
        ratio, _ = published_peaks.compared(case)
        assert 0.9 <= ratio <= 1.1, (cid, ratio)
        return
    price = published_peaks.pricing(case)
    assert price.expressible, price.not_expressible
    cfg = published_peaks.priced_config(price)
    if price.api == "finetune_summary":
        peak = finetune_summary(cfg, price.work, price.layout).peak.peak_bytes
    else:
        found = memory_summary(cfg, price.work, price.layout).peak_bytes
        assert found is not None
        peak = found
    published = case["figure"]["bytes"]
    if case["memory_kind"] == "reserved":
        assert peak < published
        peak = round(peak * measured_allocator_share())
    print(f"{cid}: ffnlab {peak / 2**30:.2f} GiB, published {published / 2**30:.2f} GiB, ratio {peak / published:.3f}")
    assert 0.9 <= peak / published <= 1.1


CAPACITIES = [c for c in CASES if c["memory_kind"] == "capacity"]


@pytest.mark.parametrize("case", CAPACITIES, ids=[c["id"] for c in CAPACITIES])
def test_a_capacity_is_the_longest_sequence_whose_peak_fits_the_card(case: dict[str, Any]) -> None:
    """The capacity's definition: at ffnlab's length the peak fits the card's allocated budget, one
    token more does not."""
    length, price = published_peaks.predicted_capacity(case)
    budget = published_peaks.card_budget(case)
    assert price.work.seq_len == length > 0

    def peak(seq_len: int) -> int:
        return published_peaks.predicted_peak(dict(case, settings=dict(case["settings"], seq_len=seq_len)))[0]

    assert peak(length) <= budget < peak(length + 1)
    ratio, _ = published_peaks.compared(case)
    assert ratio == length / case["figure"]["seq_len_fitting"]


def test_the_hf_baseline_of_unsloths_table_is_underdetermined_by_its_unstated_settings() -> None:
    """The HF + FA2 capacity names no checkpointing, optimizer, precision or trainer loop. Over the
    readings ffnlab prices (full checkpointing; peft's fp32 upcast or not; the logits kept or freed)
    some land within 10% of the published length and some do not, so the figure cannot test ffnlab
    until its settings are known; docs/memory.md quotes the range and the Trainer's reading."""
    case = next(c for c in CASES if c["id"] == "hf-fa2-llama3.1-8b-qlora-maxctx-80gb")
    ratios = {}
    for upcast in (True, False):
        for freed in (True, False):
            reading = copy.deepcopy(case)
            s = reading["settings"]
            s.update(recompute="full", optimizer="adamw", optimizer_impl="foreach", precision="bf16-autocast",
                     logits_freed=freed)
            if upcast:
                s["finetune"]["prepare"] = "prepare_model_for_kbit_training"
            ratio, price = published_peaks.compared(reading)
            assert price.expressible
            ratios[upcast, freed] = ratio
    inside = [r for r in ratios.values() if 0.9 <= r <= 1.1]
    assert inside and len(inside) < len(ratios), ratios
    doc = (Path(__file__).resolve().parents[3] / "docs" / "memory.md").read_text(encoding="utf-8")
    quoted = (f"comes to {min(ratios.values()):.2f}-{max(ratios.values()):.2f} of the published 28,454 tokens, "
              f"{ratios[True, True]:.2f} as the\nTrainer runs")
    assert quoted in doc, quoted
