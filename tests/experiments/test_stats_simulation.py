"""Proof by simulation: sweeps with a known truth, analysed by the verdict engine the reports use.

Each reported 95% interval must cover the truth in at least 93% of simulated sweeps at the
presets' seed counts, with equal and unequal variances and with heavy-tailed (outlier) runs; the
power the deciding test reports must match the engine's simulated rejection rate within 5 points;
the best-ratio and loss-ratio intervals must cover too. Fixed seeds: each case is deterministic.
A larger run of the same checks is ``benchmarks/stats_coverage.py`` (2,000 sweeps per case, kept in
``benchmarks/results/stats-coverage.json``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ffnlab.experiments.analysis import power as pw
from ffnlab.experiments.analysis import verdicts as vd
from ffnlab.experiments.analysis.stats import quadratic_minimum, ratio_of_means

SIMS = 600


def draw(rng: np.random.Generator, means: dict[str, float], sds: dict[str, float], n: int,
         tails: float | None = None) -> dict[str, list[float]]:
    """One simulated sweep: each arm's seeds around its true mean; ``tails``: Student-t noise with
    that many df (scaled to the sd), a stand-in for the occasional outlier run."""
    out = {}
    for k, m in means.items():
        noise = rng.standard_t(tails, n) * math.sqrt((tails - 2) / tails) if tails else rng.normal(0, 1, n)
        out[k] = list(m + sds[k] * noise)
    return out


def family_coverage(means, sds, n, alts, sims=SIMS, tails=None, seed=0) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    covered, pooled = 0, 0
    for _ in range(sims):
        fam = vd.decide_family("loss", draw(rng, means, sds, n, tails), "ref", alts, 0.01, sensitivity=False)
        pooled += fam.choice.pooled
        covered += all(d.comparison.lo <= means[k] - means["ref"] <= d.comparison.hi
                       for k, d in fam.decisions.items())
    return covered / sims, pooled


CASES = {
    # the presets' seed counts: scale-trend and capacity (3), golden-quick (10), gated-law (8)
    "3 seeds, 3 alternatives, equal variances": ({"ref": 0, "a": 0.0, "b": 0.01, "c": -0.02},
                                                  {"ref": 1, "a": 1, "b": 1, "c": 1}, 3),
    "3 seeds, one arm 4x the spread": ({"ref": 0, "a": 0.0, "b": 0.01, "c": -0.02},
                                       {"ref": 1, "a": 1, "b": 4, "c": 1}, 3),
    "3 seeds, reference 3x the spread": ({"ref": 0, "a": 0.0, "b": 0.01, "c": -0.02},
                                         {"ref": 3, "a": 1, "b": 1, "c": 1}, 3),
    "10 seeds, 2 alternatives, equal variances": ({"ref": 0, "a": 0.3, "b": -0.2}, {"ref": 1, "a": 1, "b": 1}, 10),
    "10 seeds, one arm 3x the spread": ({"ref": 0, "a": 0.3, "b": -0.2}, {"ref": 1, "a": 1, "b": 3}, 10),
    "8 seeds, first gated-law form's spreads": ({"ref": 2.087, "a": 2.104, "b": 2.070},
                                                {"ref": 0.008, "a": 0.065, "b": 0.023}, 8),
}


@pytest.mark.parametrize("name", CASES)
def test_many_to_one_intervals_cover_the_truth(name):
    means, sds, n = CASES[name]
    coverage, pooled = family_coverage(means, sds, n, [k for k in means if k != "ref"])
    assert coverage >= 0.93, (name, coverage)
    if n < vd.MIN_SEEDS_TO_POOL:
        assert pooled == 0  # the pre-registered rule: below 10 seeds nothing is pooled


def test_intervals_cover_with_heavy_tailed_outlier_runs():
    means = {"ref": 0.0, "a": 0.5, "b": 0.0}
    coverage, _ = family_coverage(means, {"ref": 1, "a": 1, "b": 1}, 10, ["a", "b"], tails=3, seed=1)
    assert coverage >= 0.93


def test_pooling_everything_would_not_have_covered():
    """The capacity case the review found: six arms of 3 seeds, the gated arm's spread 11x the
    others. The pooled interval of the pair covered 85% of the time; the engine's (Welch) covers."""
    rng = np.random.default_rng(2)
    means = {k: 0.3 for k in ("g", "p", "x1", "x2", "x3", "x4")}
    sds = {"g": 0.11, **{k: 0.01 for k in ("p", "x1", "x2", "x3", "x4")}}
    engine = pooled = 0
    from ffnlab.experiments.analysis.stats import pooled_model, pooled_pair

    for _ in range(SIMS):
        g = draw(rng, means, sds, 3)
        d, choice = vd.decide_pair("bits", g, "g", "p", 0.03)
        assert not choice.pooled
        engine += d.comparison.lo <= 0 <= d.comparison.hi
        c = pooled_pair(pooled_model(g), "g", "p")
        pooled += c.lo <= 0 <= c.hi
    assert engine / SIMS >= 0.93 and pooled / SIMS < 0.9


def test_reported_power_matches_the_engines_rejection_rate():
    """At 5 seeds (Welch decides) and at 10 seeds with equal variances (pooled t decides), the power
    the deciding test reports for the true effect matches how often the engine rejects."""
    rng = np.random.default_rng(3)
    for n, sds, effect, method in ((5, (0.02, 0.05), 0.07, "welch"), (10, (0.01, 0.01), 0.011, "pooled-t")):
        design = pw.TestDesign(method, *sds, arms=3)
        predicted = pw.power(design, n, effect)
        hits = 0
        for _ in range(SIMS * 2):
            g = draw(rng, {"a": effect, "b": 0.0, "c": 0.0}, {"a": sds[0], "b": sds[1], "c": sds[1]}, n)
            d, _ = vd.decide_pair("loss", g, "a", "b", 0.001)
            hits += d.comparison.decided
        assert hits / (SIMS * 2) == pytest.approx(predicted, abs=0.05), (n, method)


@pytest.mark.parametrize("n", [3, 10])
def test_loss_ratio_interval_covers(n):
    rng = np.random.default_rng(4)
    hit = sum(lo <= 2.25 / 2.20 <= hi for lo, hi in
              (ratio_of_means(rng.normal(2.25, 0.02, n), rng.normal(2.20, 0.01, n))[1:] for _ in range(SIMS * 2)))
    assert hit / (SIMS * 2) >= 0.93


def test_best_ratio_interval_covers_the_true_minimum():
    """Loss against log2 ratio at 1, 2, 4, 8 with 3 seeds each, a true parabola with its minimum at
    log2 ratio 1.3 (ratio 2.5): Fieller's set (bounded or not) holds the truth >= 93% of the time."""
    rng = np.random.default_rng(5)
    x = np.repeat([0.0, 1.0, 2.0, 3.0], 3)
    truth = 1.3
    covered = bounded = 0
    for _ in range(SIMS * 2):
        y = 2.2 + 0.02 * (x - truth) ** 2 + rng.normal(0, 0.01, x.size)
        q = quadratic_minimum(x, y)
        bounded += q.shape == "bounded"
        covered += q.contains(truth)
    assert covered / (SIMS * 2) >= 0.93 and bounded > SIMS  # mostly informative, and honest when not


def test_the_old_delta_method_interval_undercovers_where_fieller_does_not():
    """At low curvature the delta-method interval for the minimum (the old report's) misses the
    truth far more often than its 95%; Fieller's does not."""
    rng = np.random.default_rng(6)
    from scipy import stats

    x = np.repeat([0.0, 1.0, 2.0, 3.0], 3)
    delta = fieller = 0
    for _ in range(SIMS * 2):
        y = 2.2 + 0.004 * (x - 1.3) ** 2 + rng.normal(0, 0.01, x.size)
        design = np.column_stack([np.ones(x.size), x, x * x])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        resid = y - design @ coef
        cov = float(resid @ resid) / (x.size - 3) * np.linalg.inv(design.T @ design)
        b, c = coef[1], coef[2]
        if c > 0:
            grad = np.array([0.0, -1 / (2 * c), b / (2 * c * c)])
            half = stats.t.ppf(0.975, x.size - 3) * math.sqrt(grad @ cov @ grad)
            delta += abs(-b / (2 * c) - 1.3) <= half
        q = quadratic_minimum(x, y)
        fieller += q.contains(1.3)
    assert delta / (SIMS * 2) < 0.9 and fieller / (SIMS * 2) >= 0.93


# -- tokens to a target loss (the convergence claim), interpolation error included ---------------

def simulated_arms(rng: np.random.Generator, speed: dict[str, float], n: int, sd: float, noise: float,
                   every: float, total: float) -> list:
    """Arms whose runs follow one loss curve stretched in tokens: a run of arm k at speed s reaches
    every loss at s times the tokens of a speed-1 run, so the true ratio of tokens to any target is
    speed[k] / speed["ref"]. Seeds vary the stretch (log-normal, sd ``sd``) and add evaluation noise
    of ``noise`` nats; evaluations every ``every`` tokens, as a sweep's eval_every gives."""
    from ffnlab.experiments.sweep.runs import ArmStats, RunResult

    grid = np.arange(every, total + every / 2, every)
    arms = []
    for k, s in speed.items():
        arm = ArmStats(k, "gelu", False, "ratio", 64, 256, 4.0, 4.0, 100_000, 1.0)
        for seed in range(n):
            stretch = s * math.exp(sd * rng.normal())
            losses = 1.5 + 4.0 * (1 + grid / (60_000 * stretch)) ** -0.8 + noise * rng.normal(size=grid.size)
            arm.runs.append(RunResult(f"{k}-s{seed}", k, seed, {"final_val_loss": float(losses[-1])},
                                      grid.tolist(), losses.tolist(), 1.0))
        arms.append(arm)
    return arms


@pytest.mark.parametrize("every", [40_960, 81_920])  # golden-quick's spacing and twice it
def test_tokens_to_target_interval_covers_the_true_ratio(every):
    from ffnlab.experiments.analysis.analyse import convergence
    from ffnlab.experiments.sweep.spec import saved_spec

    speed = {"ref": 1.0, "a": 0.9, "b": 1.3}
    spec = saved_spec({"reference": "ref", "comparisons": {"convergence_speed": ["a", "b"]}, "margin": 0.02})
    rng = np.random.default_rng(3)
    sims, covered, covered_interpolated = 200, 0, 0
    for _ in range(sims):
        arms = simulated_arms(rng, speed, 10, sd=0.04, noise=0.003, every=every, total=409_600)
        out = convergence(arms, spec, "ref", vocab_size=256).as_dict()
        truth = {k: speed[k] / speed["ref"] for k in ("a", "b")}
        covered += all(out["arms"][k]["tokens_ratio"][1] <= truth[k] <= out["arms"][k]["tokens_ratio"][2]
                       for k in truth)
        covered_interpolated += all(out["arms"][k]["tokens_ratio_interpolated"][1] <= truth[k]
                                    <= out["arms"][k]["tokens_ratio_interpolated"][2] for k in truth)
    assert covered / sims >= 0.93, (covered / sims, covered_interpolated / sims)
    if every == 81_920:  # the check bites: without the interpolation error the interval undercovers
        assert covered_interpolated / sims < 0.9, covered_interpolated / sims
