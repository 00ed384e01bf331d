"""The LoRA fine-tuning step's peak against the peft steps measured on CPU and saved in
tests/data/finetune_measured.json (memory_finetune_cases.py --write): the live measurement is
test_memory_finetune.py; this one needs no torch, peft or transformers, so ``make mutate`` judges
each mutant of the fine-tuning rules against every case in about a second."""

from __future__ import annotations

import pytest
from memory_finetune_cases import CASES, load_saved, predict, record, saved_config

BY_NAME = {c.name: c for c in CASES}
RECORDS = load_saved()
TOLERANCE = 0.05  # the live test's


def test_every_case_is_saved():
    assert [r["id"] for r in RECORDS] == [c.name for c in CASES]


@pytest.mark.parametrize("saved", RECORDS, ids=[r["id"] for r in RECORDS])
def test_predicted_peak_is_within_5_percent_of_the_saved_lora_step(saved):
    case = BY_NAME[saved["id"]]
    predicted = predict(case, saved_config(saved, case)).timeline.peak_bytes
    assert abs(predicted / saved["measured_bytes"] - 1) < TOLERANCE, (predicted, saved["measured_bytes"])


SAMPLE = RECORDS[::9]


@pytest.mark.parametrize("saved", SAMPLE, ids=[r["id"] for r in SAMPLE])
def test_saved_lora_steps_are_what_peft_keeps_today(saved):
    pytest.importorskip("peft")
    pytest.importorskip("transformers")
    assert record(BY_NAME[saved["id"]])["measured_bytes"] == saved["measured_bytes"]
