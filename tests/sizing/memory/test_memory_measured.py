"""The activation model against bytes measured on ffnlab's own modules and saved in tests/data
(see memory_measured.py): the live measurement is test_memory_saved_tensors.py; this one needs no
torch, so each mutant of ``make mutate`` is judged against every saved case in about a second."""

from __future__ import annotations

import pytest
from memory_measured import config, load, measure

from ffnlab.sizing.memory.activations import activation_memory

RECORDS = load()
TOLERANCE = 0.001  # what is left is a handful of scalars (the loss weight, MoE balancing terms)


def estimate(r: dict) -> int:
    return activation_memory(config(r), seq_len=r["seq_len"], batch=r["batch"], dtype="fp32",
                             attention=r["attention"]).total


@pytest.mark.parametrize("record", RECORDS, ids=[r["id"] for r in RECORDS])
def test_activation_model_matches_the_saved_measurement(record):
    measured = record["measured_bytes"]
    assert abs(estimate(record) - measured) / measured < TOLERANCE, (estimate(record), measured)


SAMPLE = RECORDS[::7]


@pytest.mark.parametrize("record", SAMPLE, ids=[r["id"] for r in SAMPLE])
def test_saved_measurements_are_what_the_modules_save_today(record):
    pytest.importorskip("torch")
    assert measure(record) == record["measured_bytes"]
