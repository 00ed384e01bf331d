"""Exact power, detectable effects and seed counts, checked against simulation of the tests the
reports run (the real interval code on simulated seeds), published figures and Dunnett's table."""

import math

import numpy as np
import pytest

from ffnlab.experiments.analysis import power as pw
from ffnlab.experiments.analysis.stats import tost, welch_pair


def simulated_rejections(n: int, sds: tuple[float, float], effect: float, test: str, sims: int, seed: int,
                         arms: int = 2, comparisons: int = 1) -> float:
    """Share of simulated designs whose test rejects: Welch's t (the textbook statistic and
    Welch-Satterthwaite df, Bonferroni over ``comparisons``) or the pooled t over ``arms`` arms,
    written out here independently of ffnlab's code, vectorised over ``sims`` designs."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    a = rng.normal(effect, sds[0], (sims, n))
    b = rng.normal(0.0, sds[1], (sims, n))
    va, vb = a.var(1, ddof=1) / n, b.var(1, ddof=1) / n
    diff = a.mean(1) - b.mean(1)
    if test == "welch":
        df = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (n - 1))
        crit = stats.t.ppf(1 - 0.025 / comparisons, df)
        return float((abs(diff) / np.sqrt(va + vb) > crit).mean())
    extra = [rng.normal(0.0, sds[1], (sims, n)).var(1, ddof=1) for _ in range(arms - 2)]
    pooled = (a.var(1, ddof=1) + b.var(1, ddof=1) + sum(extra)) / arms
    return float((abs(diff) / np.sqrt(pooled * 2 / n) > stats.t.ppf(0.975, arms * (n - 1))).mean())


def test_dunnett_critical_matches_dunnetts_table():
    # Dunnett (1964) two-sided 95%: k = 3 vs control, 20 df -> 2.54; k = 2, 24 df -> 2.35, 30 df -> 2.32
    assert pw.dunnett_critical(3, 6) == pytest.approx(2.54, abs=0.01)  # 4 arms x 5 df
    assert pw.dunnett_critical(2, 9) == pytest.approx(2.35, abs=0.01)  # 3 arms x 8 df = 24
    assert pw.dunnett_critical(2, 11) == pytest.approx(2.32, abs=0.01)  # 3 x 10 = 30


@pytest.mark.parametrize("design,n,effect,sims", [
    (pw.TestDesign("welch", 0.02, 0.05), 6, 0.06, 40000),
    (pw.TestDesign("welch", 0.05, 0.05, comparisons=3), 4, 0.12, 40000),
    (pw.TestDesign("welch", 0.065, 0.008), 3, 0.12, 40000),
    (pw.TestDesign("pooled-t", 0.03, 0.03, arms=3), 8, 0.04, 40000),
])
def test_power_matches_simulation_of_the_test(design, n, effect, sims):
    predicted = pw.power(design, n, effect)
    simulated = simulated_rejections(n, (design.sd_first, design.sd_second), effect, design.method, sims, 1,
                                     arms=design.arms, comparisons=design.comparisons)
    assert 0.2 < predicted < 0.95  # a case where power is informative
    assert simulated == pytest.approx(predicted, abs=0.02)


def test_the_simulated_welch_test_is_the_reports_welch_interval():
    """The vectorised simulation above and ffnlab's interval decide alike on the same data."""
    rng = np.random.default_rng(9)
    for _ in range(200):
        a, b = rng.normal(0.03, 0.02, 5), rng.normal(0.0, 0.05, 5)
        va, vb = a.var(ddof=1) / 5, b.var(ddof=1) / 5
        df = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
        from scipy import stats

        rejects = abs(a.mean() - b.mean()) / math.sqrt(va + vb) > stats.t.ppf(0.975, df)
        assert welch_pair(a, b).decided == rejects


def test_dunnett_power_matches_simulation_with_the_tabled_critical_value():
    """Dunnett's test of one alternative, 2 alternatives and 10 seeds per arm (27 df): reject when
    |t| on the pooled variance exceeds Dunnett's tabled 2.33 (between 2.35 at 24 df and 2.32 at 30)."""
    design = pw.TestDesign("dunnett", 0.01, 0.01, comparisons=2)
    rng = np.random.default_rng(1)
    sims, n = 40000, 10
    a, b, x = (rng.normal(mu, 0.01, (sims, n)) for mu in (0.012, 0.0, 0.0))
    sp = np.sqrt((a.var(1, ddof=1) + b.var(1, ddof=1) + x.var(1, ddof=1)) / 3)
    t = (a.mean(1) - b.mean(1)) / (sp * math.sqrt(2 / n))
    assert float((abs(t) > 2.33).mean()) == pytest.approx(pw.power(design, n, 0.012), abs=0.02)


def test_mde_is_the_effect_with_80_percent_power():
    d = pw.TestDesign("welch", 0.03, 0.01)
    m = pw.mde(d, 8)
    assert pw.power(d, 8, m) == pytest.approx(0.80, abs=1e-6)
    assert simulated_rejections(8, (0.03, 0.01), m, "welch", 40000, 2) == pytest.approx(0.80, abs=0.01)
    assert math.isnan(pw.mde(d, 1))


def test_seed_counts_the_review_computed():
    # A review of the seed advice computed these by exact power: scale-trend s3 (sigma 0.0101, 3 alternatives,
    # observed 0.0136) -> 12 seeds; gated-law (Welch, sd 0.0649 / 0.0234, observed 0.0335) -> about 35.
    assert pw.seeds_for(pw.TestDesign("dunnett", 0.0101, 0.0101, comparisons=3), 0.0136) == 12
    assert pw.seeds_for(pw.TestDesign("welch", 0.0649, 0.0234), 0.0335) == pytest.approx(35, abs=1)


@pytest.mark.parametrize("design,effect", [(pw.TestDesign("welch", 0.04, 0.015), 0.03),
                                           (pw.TestDesign("pooled-t", 0.02, 0.02, arms=3), 0.02)])
def test_seed_advice_reaches_80_percent_and_one_seed_fewer_does_not(design, effect):
    n = pw.seeds_for(design, effect)
    assert n is not None and n > 2
    sims = 40000
    at_n = simulated_rejections(n, (design.sd_first, design.sd_second), effect, design.method, sims, 3, design.arms)
    fewer = simulated_rejections(n - 1, (design.sd_first, design.sd_second), effect, design.method, sims, 4,
                                 design.arms)
    mc = 2 * math.sqrt(0.8 * 0.2 / sims)
    assert at_n >= 0.78 and fewer < 0.80 + mc
    assert pw.power(design, n, effect) >= 0.80 > pw.power(design, n - 1, effect)


def test_tost_power_is_exact_against_simulation():
    se, df, margin = 0.004, 18, 0.01
    rng = np.random.default_rng(5)
    sims = 4000
    sigma = se / math.sqrt(2 / 10)  # two groups of 10: pooled df 18
    hits = 0
    for _ in range(sims):
        a, b = rng.normal(0.002, sigma, 10), rng.normal(0, sigma, 10)
        s = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2) * math.sqrt(2 / 10)
        hits += tost(float(a.mean() - b.mean()), s, df, margin).equivalent
    assert hits / sims == pytest.approx(pw.tost_power(se, df, margin, diff=0.002), abs=0.02)


def test_seeds_for_equivalence_reaches_its_power():
    design = pw.TestDesign("pooled-t", 0.02, 0.02, arms=2)
    n = pw.seeds_for_equivalence(design, 0.015)
    assert n is not None
    assert pw.design_tost_power(design, n, 0.015) >= 0.8 > pw.design_tost_power(design, n - 1, 0.015)
    assert pw.seeds_for_equivalence(design, 0.015, diff=0.02) is None  # a true difference past the margin


def test_smallest_n_searches_a_monotone_condition():
    assert pw.smallest_n(lambda n: n >= 37) == 37
    assert pw.smallest_n(lambda n: True) == 2
    assert pw.smallest_n(lambda n: False, cap=1000) is None


def test_power_guards():
    assert math.isnan(pw.power_at(0.1, 0.0, 10, 2.0))
    assert math.isnan(pw.power_at(0.1, 0.05, 0, 2.0))
    assert math.isnan(pw.power_at(0.1, 0.05, 10, math.nan))
    assert pw.power_at(10.0, 0.01, 10, 2.0) == 1.0  # far in the tail, where scipy's nct returns NaN
    assert pw.power_at(0.0, 0.05, 10, 2.228) == pytest.approx(0.05, abs=1e-3)  # no effect: the test's level
    with pytest.raises(ValueError):
        pw.TestDesign("bogus", 1, 1)


def test_dunnett_seed_advice_reaches_80_percent_and_one_seed_fewer_does_not():
    """Many-to-one advice (scale-trend's largest size in its first form: 3 alternatives, sigma
    0.0101, effect 0.0136 -> 12 seeds), simulated with Dunnett's tabled critical values for 3
    comparisons (Dunnett 1964: 2.44 at 40 df, 2.41 at 60; 44 df interpolated in 1/df: 2.434)."""
    design = pw.TestDesign("dunnett", 0.0101, 0.0101, comparisons=3)
    n = pw.seeds_for(design, 0.0136)
    assert n == 12
    rng = np.random.default_rng(6)
    sims = 40000

    def rejects(n: int, crit: float) -> float:
        arms = [rng.normal(mu, 0.0101, (sims, n)) for mu in (0.0136, 0.0, 0.0, 0.0)]  # alternative first, then ref
        pooled = sum(a.var(1, ddof=1) for a in arms) / 4
        t = (arms[0].mean(1) - arms[1].mean(1)) / np.sqrt(pooled * 2 / n)
        return float((abs(t) > crit).mean())

    mc = 2 * math.sqrt(0.8 * 0.2 / sims)
    assert rejects(12, 2.434) >= 0.78
    assert rejects(11, 2.44) < 0.80 + mc  # 40 df
