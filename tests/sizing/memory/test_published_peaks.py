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
from typing import Any

import pytest

from ffnlab.sizing.memory import published_peaks
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
    if case["settings"]["precision"] == "pure-bf16":  # full training: not expressible; LoRA: adapters only
        found = price.not_expressible if case["settings"]["finetune"] is None else price.approximations
        assert any("pure bf16" in r for r in found)
    if case["settings"]["recompute"] == "selective-op":
        assert any("op-level selective AC" in r for r in price.not_expressible)
    if case["settings"]["finetune"] is not None and case["settings"]["gpus"] > 1:
        assert any("LoRA under FSDP" in r for r in price.not_expressible)


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
