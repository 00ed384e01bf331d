"""Zoo models whose type is counted through transformers (hybrids, linear attention): the stored
structure equals what transformers builds now, and the zoo, audit and claims read it without torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hf_zoo_counts import rebuilt

from ffnlab.sizing.audit import audit_entry
from ffnlab.sizing.zoo import load_zoo

COUNTED = [e for e in load_zoo() if e.counted]


def test_the_hybrid_and_linear_attention_families_are_in_the_zoo():
    families = {e.family for e in COUNTED}
    assert {"Qwen3-Next", "Kimi-Linear", "MiniMax-M2", "LongCat-Flash", "Nemotron-H", "Jamba", "LFM2"} <= families
    for e in COUNTED:
        assert e.source and e.source.startswith("https://huggingface.co/") and e.verified_against, e.name


@pytest.mark.parametrize("entry", COUNTED, ids=[e.name for e in COUNTED])
def test_stored_structure_is_what_transformers_builds(entry):
    pytest.importorskip("transformers")
    assert entry.counted == rebuilt(entry.hf_config)


# published totals (model cards and papers named in each entry's verified_against), to 3 digits
PUBLISHED = {"qwen3-next-80b-a3b": 80e9, "minimax-m2": 230e9, "nemotron-nano-12b-v2-base": 12.31e9,
             "lfm2-1.2b": 1.17e9, "jamba-v0.1": 52e9, "kimi-linear-48b-a3b": 48e9}


@pytest.mark.parametrize("entry", COUNTED, ids=[e.name for e in COUNTED])
def test_counted_zoo_rows_have_the_ffn_view(entry):
    row = audit_entry(entry).as_dict()
    assert row["counted_by"] == "transformers" and row["params_total"] > 0
    for key in ("d_ff", "ffn_kind", "gated", "ratio_raw", "ratio_param_matched", "ffn_share", "n_layers",
                "layer_layout", "params_active", "flops_per_token"):
        assert row[key] is not None, key
    assert len(row["layer_layout"]) == row["n_layers"]
    if entry.name in PUBLISHED:  # within 3% of the headline figure (rounded in the announcements)
        assert abs(row["params_total"] / PUBLISHED[entry.name] - 1) < 0.03, row["params_total"]


def test_longcat_total_less_zero_expert_slots_is_the_published_560b():
    row = audit_entry(next(e for e in COUNTED if e.name == "longcat-flash-chat")).as_dict()
    assert abs((row["params_total"] - row["params_zero_experts"]) / 560e9 - 1) < 0.01


def test_zoo_audit_and_claims_of_counted_models_need_no_torch():
    code = ("import sys, ffnlab.cli\n"
            "for argv in (['zoo'], ['audit', '--all', '--json'], ['claims', '--json']):\n"
            "    sys.argv = ['ffnlab', *argv]\n"
            "    try:\n        ffnlab.cli.main()\n    except SystemExit as e:\n        assert not e.code, e.code\n"
            "print('LOADED', [m for m in ('torch', 'transformers') if m in sys.modules])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().endswith("LOADED []")
    out = subprocess.run([sys.executable, "-m", "ffnlab", "audit", "--all", "--json"], capture_output=True, text=True)
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    for e in COUNTED:
        assert rows[e.name]["counted_by"] == "transformers" and rows[e.name]["memory"]["kv_cache_bytes"] >= 0
