"""Sizing commands checked against oracles that do not share their code path.

``zoo --family`` against the raw ``zoo.json``; ``plan --count non-embedding`` and ``--kv-groups``
against a hand-written parameter formula (and the counter on the returned shape, which ``plan``
itself only extrapolates to); ``size --experts`` against hand arithmetic. Shapes are never
asserted: only properties every candidate must have.
"""

from __future__ import annotations

import csv
import io
import json
from importlib import resources

import pytest
from cli_inproc import run_cli
from cli_run import assert_usage_error

from ffnlab.sizing.config import make_config
from ffnlab.sizing.counting import count_params

VOCAB = 32000


def cli_json(capsys, *args: str):  # noqa: ANN001, ANN201 - pytest fixture, any JSON value
    r = run_cli(capsys, *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def raw_zoo() -> list[dict]:
    return json.loads(resources.files("ffnlab").joinpath("data/zoo.json").read_text(encoding="utf-8"))["models"]


@pytest.mark.parametrize("family", ["llama", "LLaMA", "gpt-3", "t5", "Mixtral", "gpt-4"])
def test_zoo_family_rows_are_exactly_the_familys_entries(capsys, family):
    rows = cli_json(capsys, "zoo", "--family", family)
    want = [m for m in raw_zoo() if family.lower() in m.get("family", "").lower()]
    assert want  # every family asked for exists in zoo.json
    assert [r["name"] for r in rows] == [m["name"] for m in want]
    assert [r["family"] for r in rows] == [m["family"] for m in want]
    for r, m in zip(rows, want, strict=True):
        raw = m.get("config") or {}
        if raw.get("model_type") in ("llama", "mistral", "mixtral"):  # read the fields untranslated
            assert (r["d_model"], r["d_ff"]) == (raw["hidden_size"], raw["intermediate_size"])
        if "estimate" in m:
            assert (r["d_model"], r["d_ff"]) == (m["estimate"]["d_model"], m["estimate"]["d_ff"])


def test_zoo_unknown_family_is_one_error_line_naming_the_families(capsys):
    r = run_cli(capsys, "zoo", "--family", "no-such-family")
    assert_usage_error(r, "no family matches 'no-such-family'")
    assert all(m["family"] in r.stderr for m in raw_zoo())


def test_zoo_family_llama_matches_published_widths(capsys):
    """Widths from Meta's params.json / the HF configs, written down by hand."""
    rows = {r["name"]: r for r in cli_json(capsys, "zoo", "--family", "llama")}
    assert (rows["llama-7b"]["d_model"], rows["llama-7b"]["d_ff"]) == (4096, 11008)
    assert (rows["llama-2-70b"]["d_model"], rows["llama-2-70b"]["d_ff"]) == (8192, 28672)
    assert not any(r["family"].lower().startswith(("mistral", "gpt")) for r in rows.values())


def hand_non_embedding(c: dict) -> int:
    """Non-embedding parameters of a bias-free RMSNorm decoder with a gated FFN, by hand:
    per layer q and o (d x d), k and v (d x n_kv*head_dim each), 3 FFN matrices, 2 norms;
    plus the final norm."""
    d, kv = c["d_model"], c["n_kv_heads"] * c["head_dim"]
    per_layer = 2 * d * c["n_heads"] * c["head_dim"] + 2 * d * kv + 3 * d * c["d_ff"] + 2 * d
    return c["n_layers"] * per_layer + d


def config_of(c: dict):  # noqa: ANN202 - a ModelConfig
    return make_config(c["d_model"], c["n_layers"], c["n_heads"], c["d_ff"], kind="swiglu", vocab_size=VOCAB,
                       n_kv_heads=c["n_kv_heads"], head_dim=c["head_dim"])


@pytest.mark.parametrize("target", ["125M", "1.3B"])
def test_plan_count_non_embedding(capsys, target):
    out = cli_json(capsys, "plan", target, "--ffn", "swiglu", "--vocab", str(VOCAB), "--count", "non-embedding")
    n = out["target"]
    assert out["candidates"] and out["best"] in out["candidates"]
    for c in out["candidates"]:
        assert c["params"] == hand_non_embedding(c)  # the non-embedding count is the one matched
        counts = count_params(config_of(c))
        assert c["params"] == counts.non_embedding != counts.total
        assert c["error"] == pytest.approx((c["params"] - n) / n)
    assert abs(out["best"]["error"]) <= 0.02


def test_plan_count_total_is_the_counters_total(capsys):
    out = cli_json(capsys, "plan", "350M", "--ffn", "swiglu", "--vocab", str(VOCAB), "--count", "total")
    for c in out["candidates"]:
        counts = count_params(config_of(c))
        assert c["params"] == counts.total == hand_non_embedding(c) + VOCAB * c["d_model"]  # tied head


@pytest.mark.parametrize("groups", [2, 4, 8])
def test_plan_kv_groups(capsys, groups):
    out = cli_json(capsys, "plan", "350M", "--ffn", "swiglu", "--vocab", str(VOCAB), "--kv-groups", str(groups))
    for c in out["candidates"]:
        assert c["n_heads"] == groups * c["n_kv_heads"]  # query heads per KV head
        assert c["params"] == hand_non_embedding(c) + VOCAB * c["d_model"]


def test_plan_kv_groups_must_be_positive(capsys):
    r = run_cli(capsys, "plan", "125M", "--kv-groups", "0")
    assert_usage_error(r, "kv_groups")


def test_size_experts_active_and_total_by_hand(capsys):
    # d 64, raw ratio 4 -> d_ff 256; a SwiGLU expert holds 3 * 64 * 256 = 49,152 weights;
    # the router 64 * 8 = 512. Total: 512 + 8 experts; active per token: 512 + top-2 experts.
    out = cli_json(capsys, "size", "--d-model", "64", "--ffn", "swiglu", "--ratio", "4", "--experts", "8",
                   "--top-k", "2", "--n-layers", "3", "--n-heads", "4", "--vocab", "100")
    assert out["d_ff"] == 256
    assert out["ffn_params_per_layer"] == 512 + 8 * 49_152 == 393_728
    assert out["ffn_params_per_layer_active"] == 512 + 2 * 49_152 == 98_816
    p = out["model"]["params"]
    assert p["ffn"] == 3 * 393_728 and p["ffn_active"] == 3 * 98_816
    assert p["total"] - p["total_active"] == 3 * 6 * 49_152  # six idle experts in each of 3 layers
    dense = cli_json(capsys, "size", "--d-model", "64", "--ffn", "swiglu", "--ratio", "4")
    assert "ffn_params_per_layer_active" not in dense and dense["ffn_params_per_layer"] == 49_152


def test_size_experts_table_shows_the_active_count(capsys):
    r = run_cli(capsys, "size", "--d-model", "64", "--ffn", "gelu", "--ratio", "4", "--experts", "4",
                "--top-k", "1", "--format", "csv")
    assert r.returncode == 0, r.stderr
    (row,) = csv.DictReader(io.StringIO(r.stdout))  # one record: the JSON's values, raw
    # plain expert: 2 * 64 * 256 = 32,768; router 64 * 4 = 256
    assert int(row["ffn_params_per_layer"]) == 256 + 4 * 32_768
    assert int(row["ffn_params_per_layer_active"]) == 256 + 32_768


@pytest.mark.parametrize("args, fragment", [
    (["--experts", "8", "--top-k", "9"], "top-k"),
    (["--experts", "-1"], "experts"),
    (["--experts", "4", "--top-k", "0"], "top-k"),
])
def test_size_experts_bad_input(capsys, args, fragment):
    assert_usage_error(run_cli(capsys, "size", "--d-model", "64", "--ratio", "4", *args), fragment)
