import math

import numpy as np
import pytest

from ffnlab.experiments.stats import (
    bootstrap_ci,
    critical_value,
    dunnett_vs_reference,
    mde,
    mean_ci,
    pooled_model,
    power_at,
    tokens_to_target,
    tost,
    welch_vs_reference,
)


def test_mean_ci_matches_t_interval():
    m, lo, hi = mean_ci([1.0, 2.0, 3.0])
    # t(0.975, 2) = 4.302653; sd = 1; half = 4.302653 / sqrt(3)
    assert m == 2.0 and hi - m == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6) and m - lo == pytest.approx(hi - m)
    assert math.isnan(mean_ci([5.0])[1])


def test_mean_ci_covers_true_mean_at_nominal_rate():
    rng = np.random.default_rng(0)
    hits = sum(lo <= 0 <= hi for lo, hi in (mean_ci(rng.normal(0, 1, 5))[1:] for _ in range(2000)))
    assert 0.93 <= hits / 2000 <= 0.97


def test_tokens_to_target_interpolates():
    tokens, losses = [100, 200, 300, 400], [4.0, 3.0, 2.0, 1.5]
    assert tokens_to_target(tokens, losses, 2.5) == pytest.approx(250)
    assert tokens_to_target(tokens, losses, 3.0) == pytest.approx(200)
    assert tokens_to_target(tokens, losses, 5.0) is None  # below target at the first evaluation: censored
    assert tokens_to_target(tokens, losses, 5.0, start=(0, 6.0)) == pytest.approx(50)
    assert tokens_to_target(tokens, losses, 1.0) is None


def test_bootstrap_ratio_on_known_speedup():
    # curves that reach a target 8% later: ratio of means ~1.08 and the CI covers it
    rng = np.random.default_rng(1)
    ref = 1000 + rng.normal(0, 10, 20)
    slow = 1080 + rng.normal(0, 10, 20)
    r, lo, hi = bootstrap_ci(slow, ref, ratio=True, seed=0)
    assert r == pytest.approx(1.08, abs=0.01) and lo < 1.08 < hi and lo > 1.0


def test_bootstrap_difference_detects_and_does_not_invent_effects():
    rng = np.random.default_rng(2)
    a, b = rng.normal(0, 1, 30), rng.normal(0, 1, 30)
    d, lo, hi = bootstrap_ci(a, b, seed=0)
    assert lo < 0 < hi
    d, lo, hi = bootstrap_ci(a + 2, b, seed=0)
    assert lo > 1 and hi < 3


def test_welch_ci_is_wide_with_two_seeds_and_exact_formula():
    from ffnlab.experiments.stats import welch_ci

    d, lo, hi = welch_ci([1.0, 1.2], [1.5, 1.9])
    # se = sqrt(0.02/2 + 0.08/2) = sqrt(0.05); df = 0.05^2 / (0.01^2 + 0.04^2) = 1.4706
    from scipy import stats

    half = stats.t.ppf(0.975, 0.05**2 / (0.01**2 + 0.04**2)) * math.sqrt(0.05)
    assert d == pytest.approx(-0.6) and hi - d == pytest.approx(half) and lo < 0 < hi


def test_pooled_model_by_hand():
    m = pooled_model({"a": [1.0, 2.0, 3.0], "b": [2.0, 4.0], "c": [5.0, 5.0, 5.0, 5.0]})
    # residual sum of squares 2 + 2 + 0 = 4 on 9 - 3 = 6 df
    assert m.df == 6 and m.sigma == pytest.approx(math.sqrt(4 / 6))
    assert m.se("a", "b") == pytest.approx(math.sqrt(4 / 6) * math.sqrt(1 / 3 + 1 / 2))
    assert math.isnan(m.levene_p) and m.homogeneous  # a group without spread: untestable, not rejected


def test_homogeneity_tests_flag_unequal_spread():
    rng = np.random.default_rng(3)
    same = pooled_model({k: rng.normal(0, 1, 12) for k in "abc"})
    assert same.homogeneous
    wild = pooled_model({"a": rng.normal(0, 0.1, 12), "b": rng.normal(0, 10, 12), "c": rng.normal(0, 0.1, 12)})
    assert wild.levene_p < 0.05 and wild.bartlett_p < 0.05 and not wild.homogeneous


def test_dunnett_intervals_are_pooled_and_wider_than_one_t_interval():
    from scipy import stats

    rng = np.random.default_rng(4)
    groups = {"ref": rng.normal(0, 1, 8), "x": rng.normal(0, 1, 8), "y": rng.normal(3, 1, 8), "z": rng.normal(0, 1, 8)}
    m = pooled_model(groups)
    d = dunnett_vs_reference(m, "ref")
    t_one = stats.t.ppf(0.975, m.df)
    for k, c in d.items():
        assert c.diff == pytest.approx(groups[k].mean() - groups["ref"].mean())
        assert (c.lo + c.hi) / 2 == pytest.approx(c.diff)  # symmetric around the difference
        crit = critical_value(c)
        # Dunnett's multiplier for 3 comparisons sits between one t and Bonferroni's t
        assert t_one < crit < stats.t.ppf(1 - 0.025 / 3, m.df)
    assert d["y"].lo > 0 and not d["x"].decided and not d["z"].decided
    w = welch_vs_reference(m, "ref")
    assert w["y"].lo > 0 and w["x"].lo < 0 < w["x"].hi


def test_dunnett_critical_value_matches_dunnetts_table():
    # Dunnett (1955/1964) two-sided 95% table: 3 treatments vs one control, 20 error df -> 2.54
    rng = np.random.default_rng(5)
    m = pooled_model({k: rng.normal(0, 1, 6) for k in ("ref", "a", "b", "c")})
    assert m.df == 20
    for c in dunnett_vs_reference(m, "ref").values():
        assert critical_value(c) == pytest.approx(2.54, abs=0.01)


def test_tost_by_hand():
    from scipy import stats

    e = tost(0.01, 0.02, 20, 0.1)
    # p = max(P(T > (0.01 + 0.1) / 0.02), P(T < (0.01 - 0.1) / 0.02)) on 20 df
    assert e.p == pytest.approx(max(stats.t.sf(5.5, 20), stats.t.cdf(-4.5, 20)))
    assert e.equivalent and e.hi - e.diff == pytest.approx(stats.t.ppf(0.95, 20) * 0.02)
    assert not tost(0.09, 0.02, 20, 0.1).equivalent  # too close to the margin
    assert not tost(0.0, 0.2, 20, 0.1).equivalent  # too noisy to claim equivalence


def test_mde_has_the_stated_power():
    from scipy import stats

    se, df = 0.01, 21
    crit = stats.t.ppf(0.975, df)
    effect = mde(se, df, crit)
    assert power_at(effect, se, df, crit) == pytest.approx(0.80, abs=0.01)
    rng = np.random.default_rng(6)  # simulate: two groups of 8, sigma so that se = 0.01
    sigma = se / math.sqrt(2 / 8)
    hits = 0
    for _ in range(2000):
        a, b = rng.normal(effect, sigma, 8), rng.normal(0, sigma, 8)
        s = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
        t = (a.mean() - b.mean()) / (s * math.sqrt(2 / 8))
        hits += abs(t) > stats.t.ppf(0.975, 14)
    # the simulated design has 14 df; its power at the 21-df MDE is a little under 80%
    assert 0.70 <= hits / 2000 <= 0.85


def test_levene_with_two_values_per_arm_is_untestable_not_a_rejection():
    """Two seeds per arm: median-centred Levene gives p = 0 for any data, so it must not decide."""
    from scipy import stats as sps

    from ffnlab.experiments.stats import PooledModel

    groups = {"a": np.array([1.0, 1.2]), "b": np.array([2.0, 2.05])}
    assert sps.levene(*groups.values(), center="median").pvalue < 1e-6  # the degenerate raw test
    model = PooledModel(groups)
    assert math.isnan(model.levene_p) and model.homogeneous and 0 < model.bartlett_p < 1
    three = PooledModel({"a": np.array([1.0, 1.2, 1.1]), "b": np.array([2.0, 2.05, 2.01])})
    assert 0 < three.levene_p < 1
