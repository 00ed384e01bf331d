"""Verdict rules on synthetic sweeps whose answer is known by construction (no training)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from fake_sweeps import TOKENS, fake_sweep, scale_sweep

from ffnlab.experiments.analysis.analyse import analyse as analysis


def analyse(root: Path) -> dict:
    """The analysis as the JSON object a report keeps (these tests read its keys)."""
    return analysis(root).as_dict()


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
    # the evidence gives the difference without a dangling "no interval" unit, and the variance
    # model names the seeds the arms have (1), not the 0 left once one-seed arms are set aside
    assert re.search(r"gelu-r2 - gelu-r4 = [+-]\d+\.\d{4} nats: no interval", c["ratio_optimal"]["evidence"])
    assert "an arm has 1 seed(s)" in c["ratio_optimal"]["model"]


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
    v = result["claims"]["gated_law"]
    a = [json.loads((tmp_path / "runs" / f"{arm}-s{s}" / "summary.json").read_text())["final_val_loss"]
         for arm in ("swiglu-r4",) for s in range(8)]
    b = [json.loads((tmp_path / "runs" / f"swiglu-pm4-s{s}" / "summary.json").read_text())["final_val_loss"]
         for s in range(8)]
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert v["interval"][1:] == pytest.approx([ci.low, ci.high], abs=1e-12)
    assert v["method"].startswith("Welch") and v["model"].startswith("Welch")
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
    trend = {t["scale"]: t for t in result["cells"]}
    for scale, best in (("s1", 2.0), ("s2", 4.0)):
        t = trend[scale]
        assert t["lo"] < best < t["hi"] and t["best_ratio"] == pytest.approx(best, rel=0.05) and t["inside_tested"]
    assert trend["s1"]["verdicts"]["ratio_optimal"] == "false"  # ratio 2 beats 4 at s1
    assert trend["s2"]["verdicts"]["ratio_optimal"] == "true"  # ratio 4 is best at s2
    assert result["claims"]["ratio_optimal"]["verdict"] == "true"  # the largest size decides


def test_a_significant_difference_inside_the_margin_is_misleading_for_every_claim(tmp_path):
    # the review's case: -0.0009 [-0.0011, -0.0006] nats with a margin of ~0.011 once read "true"
    fake_sweep(tmp_path, {"gelu-r4": (0.0, 1.0), "swiglu-pm4": (-0.0009, 1.0), "swiglu-r4": (-0.0009, 1.0)}, 8,
               0.0001, claims=["glu_vs_plain"], comparisons={"glu_vs_plain": ["swiglu-pm4", "gelu-r4"]},
               margin=0.005, spread={"gelu-r4": 1.0, "swiglu-pm4": 0.5, "swiglu-r4": 0.5}, rng_seed=4)
    v = analyse(tmp_path)["claims"]["glu_vs_plain"]
    assert v["interval"][2] < 0  # significant
    assert v["verdict"] == "misleading" and "smaller than the margin" in v["evidence"]


def test_a_run_with_a_nan_loss_is_left_out_and_flagged(tmp_path):
    arms = {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}
    fake_sweep(tmp_path, arms, 6, 0.01, final={"gelu-r4-s2": float("nan")})
    result = analyse(tmp_path)
    assert [r["run"] for r in result["excluded"]] == ["gelu-r4-s2"]
    assert "not finite" in result["excluded"][0]["reason"]
    ref = next(a for a in result["arms"] if a["arm"] == "gelu-r4")
    assert ref["n_seeds"] == 5 and ref["n_excluded"] == 1
    assert result["claims"]["ratio_optimal"]["verdict"] == "false"  # still decided, on the five good runs


def test_a_diverged_but_finite_run_does_not_flip_a_clear_verdict(tmp_path):
    arms = {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}
    fake_sweep(tmp_path, arms, 6, 0.01, final={"gelu-r4-s1": 5.5})  # it learned, then blew up to 5.5 nats
    result = analyse(tmp_path)
    assert [r["run"] for r in result["excluded"]] == ["gelu-r4-s1"] and "diverged" in result["excluded"][0]["reason"]
    assert result["claims"]["ratio_optimal"]["verdict"] == "false"
    assert result["convergence"]["target_loss"] == pytest.approx(5.0 - 0.003 * 500, abs=0.03)  # not moved by it


def test_an_arm_named_in_the_spec_but_missing_is_an_error(tmp_path):
    from ffnlab.errors import FfnlabError

    fake_sweep(tmp_path, {"gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}, 3, 0.01,
               spec_extra={"arms": [{"name": n} for n in ("gelu-r2", "gelu-r4", "gelu-r8")]})
    with pytest.raises(FfnlabError, match="gelu-r2 named in the spec have no runs"):
        analyse(tmp_path)


def test_a_missing_reference_is_an_error_not_a_key_error(tmp_path):
    from ffnlab.errors import FfnlabError

    fake_sweep(tmp_path, {"gelu-r2": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}, 3, 0.01,
               spec_extra={"arms": [{"name": n} for n in ("gelu-r2", "gelu-r4", "gelu-r8")]})
    with pytest.raises(FfnlabError, match="gelu-r4"):
        analyse(tmp_path)


def test_a_one_seed_arm_among_others_gets_no_interval_not_an_exception(tmp_path):
    fake_sweep(tmp_path, {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}, 4, 0.01)
    for s in (1, 2, 3):  # gelu-r8 keeps one seed
        import shutil

        shutil.rmtree(tmp_path / "runs" / f"gelu-r8-s{s}")
    record = json.loads((tmp_path / "sweep.json").read_text())
    record["runs"] = [r for r in record["runs"] if not (r["arm"] == "gelu-r8" and r["seed"] > 0)]
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    result = analyse(tmp_path)
    r8 = next(d for d in result["loss_model"]["comparisons"] if d["first"] == "gelu-r8")
    assert r8["outcome"] == "no-interval"
    assert result["claims"]["ratio_optimal"]["verdict"] == "false"  # gelu-r2 still decides


def test_the_convergence_target_is_fixed_before_the_runs(tmp_path):
    arms = {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}
    fake_sweep(tmp_path / "rule", arms, 4, 0.01)
    conv = analyse(tmp_path / "rule")["convergence"]
    assert conv["target_rule"].startswith("rule") and conv["target_loss"] == pytest.approx(3.5, abs=0.02)
    fake_sweep(tmp_path / "fixed", arms, 4, 0.01, spec_extra={"target_loss": 3.0})
    conv = analyse(tmp_path / "fixed")["convergence"]
    assert conv["target_loss"] == 3.0 and conv["target_rule"] == "fixed in the spec"
    # dropping an arm does not move the target (it used to be the worst run's final loss)
    fake_sweep(tmp_path / "fewer", {k: v for k, v in arms.items() if k != "gelu-r8"}, 4, 0.01)
    assert analyse(tmp_path / "fewer")["convergence"]["target_loss"] == pytest.approx(
        analyse(tmp_path / "rule")["convergence"]["target_loss"])


def test_an_alternative_that_never_reaches_the_target_can_only_be_slower(tmp_path):
    # gelu-r8 learns so slowly it never reaches the target: its ratio has no upper end
    fake_sweep(tmp_path, {"gelu-r4": (0.0, 1.0), "gelu-r8": (0.0, 0.3)}, 4, 0.01, spec_extra={"target_loss": 3.0},
               claims=["convergence_speed"])
    result = analyse(tmp_path)
    row = result["convergence"]["arms"]["gelu-r8"]
    assert row["censored"] == 4 and math.isinf(row["tokens_ratio"][2])
    assert result["claims"]["convergence_speed"]["verdict"] == "true"  # ratio 4 is faster, by a lot


def test_the_kaplan_form_is_relative_to_the_reference_with_fieller_intervals(tmp_path):
    fake_sweep(tmp_path, {"gelu-r2": (-0.1, 1.0), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 1.0)}, 4, 0.01)
    rows = {r["arm"]: r for r in analyse(tmp_path)["kaplan"]}
    assert rows["gelu-r4"]["reference"] and math.isnan(rows["gelu-r4"]["lo"])  # no interval around a 0 by definition
    final = 5.0 - 0.003 * TOKENS[-1]
    assert rows["gelu-r2"]["loss_increase"] == pytest.approx(-0.1 / final, rel=0.02)
    assert rows["gelu-r2"]["lo"] < rows["gelu-r2"]["loss_increase"] < rows["gelu-r2"]["hi"] < 0


def test_a_moving_best_ratio_makes_the_size_trend_false(tmp_path):
    scale_sweep(tmp_path, {"s1": 1.5, "s2": 3.0, "s3": 6.0}, {"s1": 10**5, "s2": 4 * 10**5, "s3": 16 * 10**5},
                {"s1": 10**5, "s2": 4 * 10**5, "s3": 16 * 10**5}, 0.001)
    result = analyse(tmp_path)
    (t,) = result["trends"]
    assert t["slope"] == pytest.approx(0.5, abs=0.05)  # the best ratio doubles per 4x: +0.5 per doubling
    assert t["lo"] > 0 and t["verdict"] == "false"


def test_a_fixed_best_ratio_makes_the_size_trend_true_when_precise(tmp_path):
    scale_sweep(tmp_path, {"s1": 2.5, "s2": 2.5, "s3": 2.5}, {"s1": 10**5, "s2": 4 * 10**5, "s3": 16 * 10**5},
                {"s1": 10**5, "s2": 4 * 10**5, "s3": 16 * 10**5}, 0.0005, seeds=4)
    (t,) = analyse(tmp_path)["trends"]
    assert abs(t["slope"]) < 0.05 and -0.1 < t["lo"] < 0 < t["hi"] < 0.1 and t["verdict"] == "true"


@pytest.mark.slow
def test_segments_follow_a_straight_trend_and_flag_a_bent_one(tmp_path):
    sizes = {"s1": 10**5, "s2": 4 * 10**5, "s3": 16 * 10**5}
    scale_sweep(tmp_path / "straight", {"s1": 1.5, "s2": 3.0, "s3": 6.0}, sizes, sizes, 0.001)
    (t,) = analyse(tmp_path / "straight")["trends"]
    assert [s["scales"] for s in t["segments"]] == [["s1", "s2"], ["s2", "s3"]]
    assert all(s["slope"] == pytest.approx(0.5, abs=0.05) for s in t["segments"]) and t["straight"] is True
    # scale-trend's measured shape: down from s1 to s2, then up steeply
    scale_sweep(tmp_path / "bent", {"s1": 1.5, "s2": 0.7, "s3": 4.0}, sizes, sizes, 0.001)
    result = analyse(tmp_path / "bent")
    (t,) = result["trends"]
    down, up = t["segments"]
    assert down["hi"] < 0 < up["lo"] and t["straight"] is False
    assert down["slope"] == pytest.approx(math.log2(0.7 / 1.5) / 2, abs=0.05)
    assert up["slope"] == pytest.approx(math.log2(4.0 / 0.7) / 2, abs=0.05)
    from ffnlab.experiments.reporting.model import report_model

    model = report_model(analysis(tmp_path / "bent"), [], title="t", warnings=[])
    text = " ".join(p for s in model["sections"] for p in s["text"])
    assert "The size trend's adjacent segments have disjoint intervals" in text


def test_cells_on_the_same_tokens_give_the_size_effect_alone(tmp_path):
    # s2 long and s3 short share their tokens (as scale-trend's s2t8 and s3t2): best 2 -> 4 over 4x
    scale_sweep(tmp_path, {"s1": 1.0, "s2": 2.0, "s3": 4.0}, {"s1": 10**5, "s2": 8 * 10**5, "s3": 8 * 10**5},
                {"s1": 2 * 10**4, "s2": 10**5, "s3": 4 * 10**5}, 0.001)
    (pair,) = analyse(tmp_path)["equal_tokens"]
    assert pair["scales"] == ["s2", "s3"] and pair["tokens"] == 8 * 10**5
    assert pair["slope"] == pytest.approx(0.5, abs=0.05) and pair["lo"] < 0.5 < pair["hi"]


def test_the_maturity_rule_leaves_an_immature_optimal_ratio_inconclusive(tmp_path):
    """The toy sweep at the default maturity (20 tokens per parameter): ratio 2 is clearly better,
    but the runs saw TOKENS[-1] / 1000 tokens per parameter, so the optimal-ratio claim says why it
    is not decided; the convergence claim (not about an optimal ratio) is decided as before."""
    from ffnlab.experiments.sweep.spec import DEFAULT_MATURITY

    fake_sweep(tmp_path, {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}, 6, 0.01,
               spec_extra={"maturity": DEFAULT_MATURITY})
    c = analyse(tmp_path)["claims"]
    r = c["ratio_optimal"]
    tpp = TOKENS[-1] / 1000
    assert r["verdict"] == "inconclusive" and r["verdict_if_mature"] == "false"
    assert r["evidence"].startswith(f"trained to {tpp:.3g} tokens/param; needs 20")
    assert r["maturity"]["tokens_per_param"] == tpp and r["maturity"]["mature"] is False
    assert c["convergence_speed"]["verdict"] == "false" and "verdict_if_mature" not in c["convergence_speed"]
    assert c["convergence_speed"]["maturity"]["text"].startswith(f"trained to {tpp:.3g} tokens/param (needs 20)")
    # the loss still falls linearly: the last quarter's fall is printed beside each verdict
    assert c["convergence_speed"]["maturity"]["late_fall"] > 0


def test_a_spec_that_reaches_its_maturity_gets_its_verdict(tmp_path):
    fake_sweep(tmp_path, {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9)}, 6, 0.01,
               spec_extra={"maturity": TOKENS[-1] / 1000 - 1e-9})
    assert verdicts(tmp_path)["ratio_optimal"] == "false"
