"""ffnlab's parameter totals against transformers' own counts, saved in tests/data (see
hf_counts_saved.py): the live comparison is test_hf_parity.py; this one needs no transformers, so
each mutant of ``make mutate`` is judged by every saved config in about a second."""

from __future__ import annotations

import pytest
from hf_counts_saved import expected_total, load

from ffnlab.sizing.counting import count_params
from ffnlab.sizing.hf import from_hf_dict

RECORDS = load()


def test_every_saved_config_counts_what_transformers_built():
    wrong = {r["id"]: (count_params(from_hf_dict(r["config"])).total, r["total"]) for r in RECORDS
             if count_params(from_hf_dict(r["config"])).total != r["total"]}
    assert not wrong, wrong  # id: (ffnlab, transformers)


def test_the_saved_counts_cover_every_kind_of_layer():
    types = {r["config"].get("model_type") for r in RECORDS}
    assert len(RECORDS) >= 300 and len(types) >= 40
    configs = [from_hf_dict(r["config"]) for r in RECORDS]
    assert any(c.ffn.is_moe for c in configs) and any(c.is_mla for c in configs)
    assert any(c.encoder_layers for c in configs) and any(not c.tied_embeddings for c in configs)


SAMPLE = RECORDS[::37]  # ten records across the file, rebuilt by transformers now


@pytest.mark.parametrize("record", SAMPLE, ids=[r["id"] for r in SAMPLE])
def test_saved_counts_are_what_transformers_builds_today(record):
    pytest.importorskip("transformers")
    assert expected_total(record["config"]) == record["total"]
