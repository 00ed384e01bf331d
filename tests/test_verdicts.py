"""Verdict rules on synthetic sweeps whose answer is known by construction (no training)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ffnlab.experiments.analysis import analyse

TOKENS = [100 * i for i in range(1, 11)]


def fake_sweep(root: Path, arms: dict[str, tuple[float, float]], seeds: int, noise: float, *,
               comparisons: dict[str, list[str]] | None = None, claims: list[str] | None = None,
               margin: float = 0.005, rng_seed: int = 0, spread: dict[str, float] | None = None) -> None:
    """A sweep folder: arm -> (final-loss offset, speed factor); each seed's curve is
    ``5 - 0.003 * tokens * speed + offset + noise_seed`` so offsets shift the final loss and the
    speed factor scales the tokens any loss needs by 1/speed. Seed k adds the same noise to every
    arm, so arms built equal have exactly equal means (a known zero difference); ``spread`` scales
    that noise per arm (unequal variances)."""
    shared = np.random.default_rng(rng_seed).normal(0, noise, seeds)
    runs = []
    for arm, (offset, speed) in arms.items():
        kind = "swiglu" if arm.startswith("swiglu") else "gelu"
        d_model = 108 if arm == "swiglu-r4" else 128
        ratio = float(arm.split("-r")[-1]) if "-r" in arm else 8 / 3
        for seed in range(seeds):
            e = float(shared[seed]) * (spread or {}).get(arm, 1.0)
            losses = [5.0 - 0.003 * t * speed + offset + e for t in TOKENS]
            name = f"{arm}-s{seed}"
            d = root / "runs" / name
            d.mkdir(parents=True)
            (d / "metrics.jsonl").write_text("".join(
                json.dumps({"kind": "eval", "step": i, "tokens": t, "val_loss": v}) + "\n"
                for i, (t, v) in enumerate(zip(TOKENS, losses, strict=True))))
            (d / "summary.json").write_text(json.dumps({
                "status": "finished", "final_val_loss": losses[-1], "final_val_ppl": math.exp(losses[-1]),
                "final_val_bpb": losses[-1] / math.log(2), "wall_s": 1.0, "tokens": TOKENS[-1],
                "train_flops": 1.0, "device": "cpu", "tokenizer": "byte"}))
            runs.append({"run": name, "arm": arm, "seed": seed, "d_model": d_model, "d_ff": round(ratio * d_model),
                         "params_non_embedding": 1000, "train_flops_per_token": 100,
                         "config": {"model": {"ffn": {"kind": kind, "rule": "ratio"}}}})
    spec = {"name": "fake", "control": "iso-params", "tolerance": 0.02, "reference": "gelu-r4",
            "seeds": list(range(seeds)), "base": {}, "description": "", "margin": margin,
            "claims": claims or [], "comparisons": comparisons or {}}
    (root / "sweep.json").write_text(json.dumps({"spec": spec, "runs": runs}))


def verdicts(root: Path) -> dict[str, str]:
    return {k: v["verdict"] for k, v in analyse(root)["claims"].items()}


def test_a_large_true_effect_decides_both_claims_false(tmp_path):
    # ratio 2 ends 0.1 nats lower and needs 1/1.3 of the tokens: ratio 4 is neither best nor faster
    fake_sweep(tmp_path, {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}, 6, 0.01)
    result = analyse(tmp_path)
    c = result["claims"]
    assert c["ratio_optimal"]["verdict"] == "false" and c["ratio_optimal"]["numbers"]["against"] == "gelu-r2"
    d, lo, hi = c["ratio_optimal"]["interval"]
    true = -0.1 - 0.003 * TOKENS[-1] * (1.3 - 1)  # offset plus the faster descent: -1.0 nats
    assert lo < true < hi < 0  # the deciding interval covers the true difference and excludes 0
    assert c["convergence_speed"]["verdict"] == "false"
    assert c["convergence_speed"]["interval"][2] < 1.08
    assert all(math.isfinite(v["mde80"]) for v in c.values())


def test_ratio_4_clearly_best_and_8pct_faster_is_true(tmp_path):
    fake_sweep(tmp_path, {"gelu-r2": (0.1, 1 / 1.25), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.1, 1 / 1.3)}, 6, 0.01)
    # no gated arm, so no glu_vs_plain verdict at all
    assert verdicts(tmp_path) == {"ratio_optimal": "true", "convergence_speed": "true"}


def test_zero_effect_is_inconclusive_when_noisy_and_equivalent_when_precise(tmp_path):
    arms = {"gelu-r2": (0.0, 1.0), "gelu-r4": (0.0, 1.0)}
    fake_sweep(tmp_path / "noisy", arms, 3, 0.05)
    v = analyse(tmp_path / "noisy")["claims"]["ratio_optimal"]
    assert v["verdict"] == "inconclusive" and "seeds per arm" in v["evidence"]  # says what would decide
    fake_sweep(tmp_path / "precise", arms, 8, 0.001)
    v = analyse(tmp_path / "precise")["claims"]["ratio_optimal"]
    assert v["verdict"] == "false" and "equivalent" in v["evidence"]  # ratio 2 loses no quality
    assert v["interval"][1] < 0 < v["interval"][2]


def test_a_significant_but_negligible_loss_is_misleading(tmp_path):
    # ratio 2 ends 0.002 nats higher (0.1% of the loss, inside the 0.5% margin), measured precisely
    fake_sweep(tmp_path, {"gelu-r2": (0.002, 1.0), "gelu-r4": (0.0, 1.0)}, 8, 0.0002)
    v = analyse(tmp_path)["claims"]["ratio_optimal"]
    assert v["verdict"] == "misleading" and v["interval"][1] > 0


def test_one_seed_gives_no_interval_and_no_decision(tmp_path):
    fake_sweep(tmp_path, {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0)}, 1, 0.01)
    c = analyse(tmp_path)["claims"]
    for key in ("ratio_optimal", "convergence_speed"):
        assert c[key]["verdict"] == "inconclusive" and "no interval" in c[key]["evidence"]
        assert all(math.isnan(x) for x in c[key]["interval"][1:])


def test_comparisons_fixed_in_the_spec_are_the_only_ones_used(tmp_path):
    # gelu-r1 is far better, but the spec compares ratio 4 only with ratio 8: the verdict is "true"
    fake_sweep(tmp_path, {"gelu-r1": (-0.3, 2.0), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.1, 1 / 1.3)}, 6, 0.01,
               comparisons={"ratio_optimal": ["gelu-r8"], "convergence_speed": ["gelu-r8"]},
               claims=["ratio_optimal", "convergence_speed"])
    c = analyse(tmp_path)["claims"]
    assert c["ratio_optimal"]["verdict"] == "true" and c["ratio_optimal"]["numbers"]["against"] == "gelu-r8"
    assert c["convergence_speed"]["verdict"] == "true"


@pytest.mark.parametrize("law_offset, expected", [(-0.05, "true"), (0.05, "false"), (0.0, "false")])
def test_gated_law_pair(tmp_path, law_offset, expected):
    # SwiGLU at raw 4 vs SwiGLU at 8/3; with no difference and low noise the pair is equivalent -> false
    fake_sweep(tmp_path, {"gelu-r4": (0.0, 1.0), "swiglu-pm4": (0.0, 1.0), "swiglu-r4": (law_offset, 1.0)}, 8,
               0.002, claims=["gated_law", "glu_vs_plain"],
               comparisons={"gated_law": ["swiglu-r4", "swiglu-pm4"], "glu_vs_plain": ["swiglu-pm4", "gelu-r4"]})
    c = analyse(tmp_path)["claims"]
    assert c["gated_law"]["verdict"] == expected
    assert c["glu_vs_plain"]["verdict"] == "false"  # equal arms: equivalent within the margin


def test_a_pair_with_unequal_variances_is_judged_by_welch_on_its_own_arms(tmp_path):
    # the gated arms are 8x noisier than the GELU one (as SwiGLU was in the gated-law run); pooling
    # GELU's tiny spread in would shrink the gated pair's interval
    from scipy import stats

    fake_sweep(tmp_path, {"gelu-r4": (0.0, 1.0), "swiglu-pm4": (0.0, 1.0), "swiglu-r4": (-0.03, 1.0)}, 8, 0.01,
               claims=["gated_law"], comparisons={"gated_law": ["swiglu-r4", "swiglu-pm4"]},
               spread={"gelu-r4": 0.1, "swiglu-pm4": 2.0, "swiglu-r4": 0.5}, rng_seed=3)
    result = analyse(tmp_path)
    assert not result["loss_model"]["model"]["homogeneous"]
    v = result["claims"]["gated_law"]
    a = [json.loads((tmp_path / "runs" / f"{arm}-s{s}" / "summary.json").read_text())["final_val_loss"]
         for arm in ("swiglu-r4",) for s in range(8)]
    b = [json.loads((tmp_path / "runs" / f"swiglu-pm4-s{s}" / "summary.json").read_text())["final_val_loss"]
         for s in range(8)]
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert v["interval"][1:] == pytest.approx([ci.low, ci.high], abs=1e-12)
    assert v["method"].startswith("Welch") and "Levene p" in v["evidence"]
    assert v["verdict"] == "inconclusive" and "seeds per arm" in v["evidence"]


def test_scale_trend_finds_each_sizes_best_ratio(tmp_path):
    # the loss is a parabola in log2(ratio) whose minimum moves from ratio 2 (s1) to ratio 4 (s2)
    arms = {}
    for scale, best in (("s1", 2.0), ("s2", 4.0)):
        for r in (1, 2, 4, 8):
            arms[f"{scale}.gelu-r{r}"] = (0.02 * (math.log2(r) - math.log2(best)) ** 2, 1.0)
    fake_sweep(tmp_path, arms, 3, 0.001, claims=["ratio_optimal"],
               comparisons={"ratio_optimal": ["gelu-r1", "gelu-r2", "gelu-r8"]})
    record = json.loads((tmp_path / "sweep.json").read_text())
    record["spec"]["scales"] = [{"name": "s1", "model": {}}, {"name": "s2", "model": {}}]
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    result = analyse(tmp_path)
    trend = {t["scale"]: t for t in result["scale_trend"]}
    for scale, best in (("s1", 2.0), ("s2", 4.0)):
        t = trend[scale]
        assert t["lo"] < best < t["hi"] and t["best_ratio"] == pytest.approx(best, rel=0.05) and t["inside_tested"]
    assert trend["s1"]["verdicts"]["ratio_optimal"] == "false"  # ratio 2 beats 4 at s1
    assert trend["s2"]["verdicts"]["ratio_optimal"] == "true"  # ratio 4 is best at s2
    assert result["claims"]["ratio_optimal"]["verdict"] == "true"  # the largest size decides
