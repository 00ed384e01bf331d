"""One set of defaults across size, plan, explain and train, and size --from on real models.

Oracles: the other command's answer for the same question (train's resolved config against
size's assumptions), the audit's parameter count (checked against transformers elsewhere) and
hand-computed FFN sizes.
"""

from __future__ import annotations

import pytest
import yaml
from cli_run import assert_usage_error, run, run_json


def train_config(*args: str) -> dict:
    p = run("train", "--out", "/nonexistent/never-written", *args, "--print-config")
    assert p.returncode == 0, p.stderr
    return yaml.safe_load(p.stdout)


def test_the_default_ffn_kind_is_the_same_everywhere():
    kinds = {
        "size": run_json("size", "--d-model", "256", "--ratio", "4")["ffn_kind"],
        "plan": run_json("plan", "125M")["ffn_kind"],
        "explain": run_json("explain", "--d-model", "256", "--d-ff", "688").get("ffn_kind"),
        "train": train_config()["model"]["ffn"]["kind"],
    }
    assert set(kinds.values()) == {"swiglu"}, kinds


@pytest.mark.parametrize("kind", ["swiglu", "gelu", "relu"])
def test_size_and_train_assume_the_same_norm_and_positions(kind):
    model = run_json("size", "--d-model", "256", "--ffn", kind, "--ratio", "4", "--n-layers", "2")["model"]
    cfg = train_config("--ffn", kind, "--rule", "ratio")["model"]
    assert (cfg["norm"], cfg["positions"]) == (model["norm"], model["positions"])


def test_size_from_a_zoo_model_counts_what_the_audit_counts():
    (audited,) = run_json("audit", "llama-2-7b")
    out = run_json("size", "--from", "llama-2-7b")
    assert out["from"] == "llama-2-7b" and out["d_ff"] == audited["d_ff"] == 11008
    assert out["model"]["params"]["total"] == audited["params_total"]


def test_size_from_resizes_only_the_ffn():
    base = run_json("size", "--from", "llama-2-7b")
    out = run_json("size", "--from", "llama-2-7b", "--ffn", "gelu", "--ratio", "4")
    assert out["d_ff"] == 4 * 4096 and out["ffn_params_per_layer"] == 2 * 4096 * 16384  # two matrices, no bias
    per_layer = 2 * 4096 * 16384 - 3 * 4096 * 11008
    assert out["model"]["params"]["total"] - base["model"]["params"]["total"] == 32 * per_layer


def test_size_from_refuses_shape_options():
    assert_usage_error(run("size", "--from", "llama-2-7b", "--n-layers", "4"), "drop --n-layers")
    assert_usage_error(run("size", "--ratio", "4"), "--d-model")
