import math

import numpy as np
import pytest

from ffnlab.experiments.stats import bootstrap_ci, mean_ci, ratio_of_means, tokens_to_target


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
    r, lo, hi = bootstrap_ci(slow, ref, ratio_of_means, seed=0)
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
