"""Statistical primitives against hand computations, published tables and brute force."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from ffnlab.experiments.analysis.stats import (
    PooledModel,
    QuadraticMinimum,
    crossing,
    dunnett_vs_reference,
    fieller,
    lack_of_fit,
    mean_ci,
    pooled_model,
    pooled_pair,
    quadratic_minimum,
    ratio_of_means,
    tost,
    welch_pair,
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


def test_crossing_interpolates_between_evaluations():
    tokens, losses, start = [100, 200, 300, 400], [4.0, 3.0, 2.0, 1.5], (0.0, 6.0)
    assert crossing(tokens, losses, 2.5, start).tokens == pytest.approx(250)
    assert crossing(tokens, losses, 3.0, start).tokens == pytest.approx(200)  # reached at an evaluation
    assert crossing(tokens, losses, 5.0, start).tokens == pytest.approx(50)  # before the first evaluation
    never = crossing(tokens, losses, 1.0, start)
    assert never.censored and never.tokens == 400 and never.upper == math.inf


def test_crossing_brackets_the_true_crossing_and_censors():
    c = crossing([100, 200, 300], [4.0, 3.0, 2.0], 2.5, (0, 5.5))
    assert (c.tokens, c.lower, c.upper) == (250.0, 200.0, 300.0) and not c.censored
    never = crossing([100, 200], [4.0, 3.0], 1.0, (0, 5.5))
    assert never.censored and never.lower == 200 and math.isinf(never.upper)
    first = crossing([100, 200], [2.0, 1.0], 3.0, (0, 5.5))  # reached between the start and the first evaluation
    assert first.lower == 0 and first.upper == 100 and first.tokens == pytest.approx(100 * 2.5 / 3.5)


def test_welch_pair_is_the_textbook_interval():
    c = welch_pair([1.0, 1.2], [1.5, 1.9])
    # se = sqrt(0.02/2 + 0.08/2) = sqrt(0.05); df = 0.05^2 / (0.01^2 + 0.04^2) = 1.4706
    df = 0.05**2 / (0.01**2 + 0.04**2)
    half = sps.t.ppf(0.975, df) * math.sqrt(0.05)
    assert c.diff == pytest.approx(-0.6) and c.hi - c.diff == pytest.approx(half) and c.lo < 0 < c.hi
    assert c.df == pytest.approx(df) and c.se == pytest.approx(math.sqrt(0.05))
    assert c.critical == pytest.approx(sps.t.ppf(0.975, df))
    assert not welch_pair([1.0], [2.0, 3.0]).has_interval  # one value: no interval
    assert not welch_pair([1.0, 1.0], [2.0, 2.0]).has_interval  # no spread: no interval


def test_welch_pair_with_one_constant_group_is_the_other_groups_t_interval_and_quiet():
    # log tokens-to-target of runs that all crossed between the same two evaluations: one group
    # has no spread, so Welch's interval is the other group's one-sample t interval (n - 1 df).
    const = [math.log(1.3e6)] * 4
    other = [13.9, 14.1, 14.0, 14.3, 13.8]
    sd = float(np.std(other, ddof=1))
    half = sps.t.ppf(0.975, len(other) - 1) * sd / math.sqrt(len(other))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's precision-loss warning would fail here
        c = welch_pair(const, other)
    assert c.df == pytest.approx(len(other) - 1)
    assert c.diff == pytest.approx(const[0] - float(np.mean(other)))
    assert c.hi - c.diff == pytest.approx(half) and c.diff - c.lo == pytest.approx(half)


def test_pooled_model_and_pooled_pair_by_hand():
    m = pooled_model({"a": [1.0, 2.0, 3.0], "b": [2.0, 4.0], "c": [5.0, 5.0, 5.0, 5.0]})
    # residual sum of squares 2 + 2 + 0 = 4 on 9 - 3 = 6 df
    assert m.df == 6 and m.sigma == pytest.approx(math.sqrt(4 / 6))
    se = math.sqrt(4 / 6) * math.sqrt(1 / 3 + 1 / 2)
    assert m.se("a", "b") == pytest.approx(se)
    assert math.isnan(m.levene_p)  # a group without spread: untestable
    c = pooled_pair(m, "a", "b")
    assert c.diff == pytest.approx(-1.0) and c.hi - c.diff == pytest.approx(sps.t.ppf(0.975, 6) * se)
    assert c.p == pytest.approx(2 * sps.t.sf(1.0 / se, 6))


def test_dunnett_intervals_are_pooled_and_between_t_and_bonferroni():
    rng = np.random.default_rng(4)
    groups = {"ref": rng.normal(0, 1, 8), "x": rng.normal(0, 1, 8), "y": rng.normal(3, 1, 8), "z": rng.normal(0, 1, 8)}
    m = pooled_model(groups)
    d = dunnett_vs_reference(m, "ref")
    for k, c in d.items():
        assert c.diff == pytest.approx(groups[k].mean() - groups["ref"].mean())
        assert (c.lo + c.hi) / 2 == pytest.approx(c.diff)
        assert sps.t.ppf(0.975, m.df) < c.critical < sps.t.ppf(1 - 0.025 / 3, m.df)
        assert c.se == pytest.approx(m.sigma * math.sqrt(2 / 8)) and c.df == m.df
    assert d["y"].lo > 0 and not d["x"].decided and not d["z"].decided
    w = welch_vs_reference(groups, "ref")
    assert w["y"].lo > 0 and w["x"].lo < 0 < w["x"].hi
    # Bonferroni over 3: each Welch interval is the 1 - 0.05/3 interval of the pair
    one = welch_pair(groups["x"], groups["ref"], 1 - 0.05 / 3)
    assert (w["x"].lo, w["x"].hi) == pytest.approx((one.lo, one.hi))


def test_dunnett_critical_value_matches_dunnetts_table():
    # Dunnett (1955/1964) two-sided 95% table: 3 treatments vs one control, 20 error df -> 2.54
    rng = np.random.default_rng(5)
    m = pooled_model({k: rng.normal(0, 1, 6) for k in ("ref", "a", "b", "c")})
    assert m.df == 20
    for c in dunnett_vs_reference(m, "ref").values():
        assert c.critical == pytest.approx(2.54, abs=0.01)


def test_tost_by_hand():
    e = tost(0.01, 0.02, 20, 0.1)
    # p = max(P(T > (0.01 + 0.1) / 0.02), P(T < (0.01 - 0.1) / 0.02)) on 20 df
    assert e.p == pytest.approx(max(sps.t.sf(5.5, 20), sps.t.cdf(-4.5, 20)))
    assert e.equivalent and e.hi - e.diff == pytest.approx(sps.t.ppf(0.95, 20) * 0.02)
    assert not tost(0.09, 0.02, 20, 0.1).equivalent  # too close to the margin
    assert not tost(0.0, 0.2, 20, 0.1).equivalent  # too noisy to claim equivalence


def brute_force_set(num, den, vn, vd, cov, t, grid):
    """Every rho on ``grid`` inside Fieller's set, by evaluating the defining inequality."""
    return grid[(num - grid * den) ** 2 <= t * t * (vn - 2 * grid * cov + grid * grid * vd)]


@pytest.mark.parametrize("case,shape", [((2.0, 1.0, 0.04, 0.01, 0.005, 2.0), "bounded"),
                                        ((2.0, 0.1, 0.04, 0.01, 0.0, 2.0), "exclusive"),
                                        ((0.1, 0.1, 0.04, 0.04, 0.0, 2.0), "all")])
def test_fieller_set_agrees_with_the_inequality_it_solves(case, shape):
    num, den, vn, vd, cov, t = case
    lo, hi, got = fieller(num, den, vn, vd, cov, t)
    assert got == shape
    grid = np.linspace(-200, 200, 400001)
    inside = brute_force_set(num, den, vn, vd, cov, t, grid)
    if shape == "bounded":
        assert inside.min() == pytest.approx(lo, abs=2e-3) and inside.max() == pytest.approx(hi, abs=2e-3)
    elif shape == "exclusive":
        assert not ((grid > lo + 1e-3) & (grid < hi - 1e-3) & np.isin(grid, inside)).any()
        assert inside.min() == grid.min() and inside.max() == grid.max()
    else:
        assert inside.size == grid.size


def test_ratio_of_means_is_fiellers_interval_on_welch_df():
    a, b = [2.10, 2.14, 2.12, 2.16], [2.00, 2.03, 2.01, 1.99]
    r, lo, hi = ratio_of_means(a, b)
    ma, mb = np.mean(a), np.mean(b)
    va, vb = np.var(a, ddof=1) / 4, np.var(b, ddof=1) / 4
    df = (va + r * r * vb) ** 2 / ((va**2) / 3 + (r * r * vb) ** 2 / 3)
    t = sps.t.ppf(0.975, df)
    grid = np.linspace(0.9, 1.2, 300001)
    inside = brute_force_set(ma, mb, va, vb, 0.0, t, grid)
    assert r == pytest.approx(ma / mb) and lo == pytest.approx(inside.min(), abs=2e-6)
    assert hi == pytest.approx(inside.max(), abs=2e-6) and lo < r < hi


def test_quadratic_minimum_by_an_independent_fit():
    rng = np.random.default_rng(7)
    x = np.repeat([0.0, 1.0, 2.0, 3.0], 3)
    y = 2.3 - 0.08 * x + 0.025 * x * x + rng.normal(0, 0.004, x.size)  # true minimum at x = 1.6
    q = quadratic_minimum(x, y)
    coef, cov = np.polyfit(x, y, 2, cov="unscaled")  # numpy's own least squares (highest power first)
    c, b = coef[0], coef[1]
    resid = y - np.polyval(coef, x)
    s2 = float(resid @ resid) / (x.size - 3)
    cov = cov * s2
    assert q.x_min == pytest.approx(-b / (2 * c))
    t = sps.t.ppf(0.975, x.size - 3)
    grid = np.linspace(-5, 8, 1300001)
    # x_min = -b / (2c): numerator -b (var V_bb), denominator 2c (var 4 V_cc), covariance -2 V_bc
    inside = brute_force_set(-b, 2 * c, cov[1, 1], 4 * cov[0, 0], -2 * cov[0, 1], t, grid)
    assert q.shape == "bounded" and q.lo == pytest.approx(inside.min(), abs=1e-4)
    assert q.hi == pytest.approx(inside.max(), abs=1e-4)


def test_quadratic_minimum_reports_unbounded_and_no_minimum():
    x = np.repeat([0.0, 1.0, 2.0, 3.0], 3)
    flat = 2.0 + 0.001 * np.tile([1, -1, 0.5], 4) + 0.0001 * x  # no curvature to speak of
    assert quadratic_minimum(x, flat).shape in ("all", "exclusive")
    down = 2.0 + 0.1 * x - 0.05 * x * x + 0.001 * np.tile([1, -1, 0.5], 4)
    q = quadratic_minimum(x, down)
    assert math.isnan(q.x_min) and q.shape == "none"


def test_lack_of_fit_by_hand():
    x = np.repeat([0.0, 1.0, 2.0, 3.0], 2)
    y = np.array([1.0, 1.2, 0.5, 0.7, 0.9, 1.1, 0.2, 0.4])  # a cubic wiggle a parabola cannot follow
    coef = np.polyfit(x, y, 2)
    resid = y - np.polyval(coef, x)
    pure = sum(((y[x == v] - y[x == v].mean()) ** 2).sum() for v in np.unique(x))  # 4 x 0.02 = 0.08
    f = ((resid @ resid - pure) / 1) / (pure / 4)
    p, dfs = lack_of_fit(x, y, resid, 3)
    assert dfs == (1, 4) and p == pytest.approx(sps.f.sf(f, 1, 4)) and p < 0.05
    assert quadratic_minimum(x, y).lack_of_fit_p == pytest.approx(p)


def test_levene_with_two_values_per_arm_is_untestable_not_a_rejection():
    """Two seeds per arm: median-centred Levene gives p = 0 for any data, so it must not decide."""
    groups = {"a": np.array([1.0, 1.2]), "b": np.array([2.0, 2.05])}
    assert sps.levene(*groups.values(), center="median").pvalue < 1e-6  # the degenerate raw test
    model = PooledModel(groups)
    assert math.isnan(model.levene_p) and 0 < model.bartlett_p < 1
    three = PooledModel({"a": np.array([1.0, 1.2, 1.1]), "b": np.array([2.0, 2.05, 2.01])})
    assert 0 < three.levene_p < 1


def test_no_residual_spread_gives_no_interval():
    """Every run of every arm identical (or one run per arm): a difference, but no standard error,
    so neither the pooled pair nor Dunnett may print an interval (a zero-width one would claim
    certainty)."""
    flat = pooled_model({"ref": [2.0, 2.0, 2.0], "a": [2.5, 2.5, 2.5], "b": [1.0, 1.0, 1.0]})
    assert flat.sigma == 0
    pair = pooled_pair(flat, "a", "ref")
    assert pair.diff == 0.5 and not pair.has_interval
    many = dunnett_vs_reference(flat, "ref")
    assert {k: (c.diff, c.has_interval) for k, c in many.items()} == {"a": (0.5, False), "b": (-1.0, False)}
    single = pooled_model({"ref": [2.0], "a": [2.5]})  # no df at all
    assert single.df == 0
    assert not pooled_pair(single, "a", "ref").has_interval
    assert not dunnett_vs_reference(single, "ref")["a"].has_interval
    noisy = pooled_model({"ref": [2.0, 2.1, 1.9], "a": [2.5, 2.5, 2.5]})  # spread in one arm is enough
    assert pooled_pair(noisy, "a", "ref").has_interval and dunnett_vs_reference(noisy, "ref")["a"].has_interval


def test_pooled_pair_carries_its_critical_value():
    m = pooled_model({"a": [1.0, 2.0, 3.0], "b": [2.0, 4.0, 3.0]})  # pooled variance 1 on 4 df
    c = pooled_pair(m, "a", "b")
    assert c.critical == pytest.approx(sps.t.ppf(0.975, 4)) and c.df == 4
    assert (c.hi - c.lo) / 2 == pytest.approx(c.critical * math.sqrt(2 / 3))


def test_too_few_points_for_a_parabola_locate_nothing():
    """Fewer than 4 runs, or under 3 distinct ratios: no fit, and every ratio is in the set."""
    for xs, ys in [([0.0, 1.0, 2.0], [2.0, 1.9, 2.0]), ([0.0, 0.0, 1.0, 1.0], [2.0, 2.1, 1.9, 2.0])]:
        q = quadratic_minimum(xs, ys)
        assert q.shape == "all" and q.n == len(xs) and not q.bounded
        assert math.isnan(q.x_min) and math.isnan(q.lo) and math.isnan(q.hi) and math.isnan(q.lack_of_fit_p)
        assert q.lack_of_fit_df == (0, 0) and q.contains(-100.0) and q.contains(7.0)


def test_fieller_sets_contain_what_their_shape_says():
    q = quadratic_minimum([0, 0, 1, 1, 2, 2, 3, 3], [2.3, 2.31, 2.1, 2.11, 2.05, 2.06, 2.2, 2.21])
    assert q.shape == "bounded" and q.contains(q.x_min) and not q.contains(q.hi + 1) and not q.contains(q.lo - 1)
    rays = QuadraticMinimum(1.0, -1.0, 3.0, "exclusive", 8, math.nan, (1, 4))
    assert rays.contains(-2.0) and rays.contains(4.0) and not rays.contains(1.0)
    assert not QuadraticMinimum(math.nan, math.nan, math.nan, "none", 8, math.nan, (1, 4)).contains(1.0)


def test_lack_of_fit_without_enough_levels_or_replicates_has_no_p():
    """3 distinct ratios leave a parabola no lack-of-fit df; runs without replicates no pure error."""
    x, y = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0]), np.array([2.0, 2.1, 1.9, 2.0, 2.2, 2.1])
    p, dfs = lack_of_fit(x, y, y - y.mean(), 3)
    assert math.isnan(p) and dfs == (0, 3)
    x1 = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    p, dfs = lack_of_fit(x1, x1 * 0.1, np.full(5, 0.01), 3)
    assert math.isnan(p) and dfs == (2, 0)


def test_welch_satterthwaite_df_by_hand():
    from ffnlab.experiments.analysis.stats import _satterthwaite

    assert _satterthwaite([1.0, 1.0], [3, 3]) == pytest.approx(4.0)  # (1 + 1)^2 / (1/2 + 1/2)
    assert _satterthwaite([2.0, 1.0], [5, 3]) == pytest.approx(9 / (4 / 4 + 1 / 2))
    assert _satterthwaite([0.0, 0.0], [3, 3]) == math.inf  # no spread: no df to lose


def test_ratio_of_means_with_an_empty_group_is_nan_without_numpy_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Mean of empty slice" would be a warning the user sees
        for a, b in [([], [1.0, 2.0]), ([1.0, 2.0], []), ([], [])]:
            assert all(math.isnan(v) for v in ratio_of_means(a, b))


def test_dunnett_with_unequal_seed_counts_is_scipys_on_the_data():
    rng = np.random.default_rng(4)
    groups = {"ref": list(rng.normal(0, 1, 6)), "a": list(rng.normal(0.5, 1, 4)), "b": list(rng.normal(-1, 1, 5))}
    got = dunnett_vs_reference(pooled_model(groups), "ref")
    res = sps.dunnett(np.array(groups["a"]), np.array(groups["b"]), control=np.array(groups["ref"]),
                      rng=np.random.default_rng(0))
    ci = res.confidence_interval()
    m = pooled_model(groups)
    for i, k in enumerate(("a", "b")):
        c = got[k]
        assert c.arm == k and c.diff == pytest.approx(np.mean(groups[k]) - np.mean(groups["ref"]))
        assert (c.lo, c.hi) == pytest.approx((ci.low[i], ci.high[i]), abs=1e-3)  # scipy's integration tolerance
        assert c.se == pytest.approx(m.sigma * math.sqrt(1 / len(groups[k]) + 1 / 6))
        assert c.critical == pytest.approx((c.hi - c.lo) / (2 * c.se)) and c.df == 12
        assert c.p == pytest.approx(res.pvalue[i], abs=1e-3)


def test_dunnett_with_one_alternative_is_the_pooled_t_interval():
    groups = {"ref": [1.0, 2.0, 3.0], "a": [2.0, 4.0, 3.0]}  # pooled variance 1 on 4 df
    c = dunnett_vs_reference(pooled_model(groups), "ref")["a"]
    assert c.arm == "a" and c.critical == pytest.approx(sps.t.ppf(0.975, 4))
    assert (c.lo, c.hi) == pytest.approx((1 - c.critical * math.sqrt(2 / 3), 1 + c.critical * math.sqrt(2 / 3)))


def test_welch_vs_reference_names_its_bonferroni_and_keeps_welchs_p():
    groups = {"ref": [1.0, 1.2, 0.9, 1.1], "a": [1.5, 1.9, 1.4], "b": [0.2, 0.9, 0.4, 0.6]}
    got = welch_vs_reference(groups, "ref")
    for k in ("a", "b"):
        res = sps.ttest_ind(groups[k], groups["ref"], equal_var=False)
        assert got[k].method == f"Welch t on {float(res.df):.1f} df, Bonferroni over 2"
        assert got[k].p == pytest.approx(float(res.pvalue))
        ci = res.confidence_interval(confidence_level=0.975)
        assert (got[k].lo, got[k].hi) == pytest.approx((float(ci.low), float(ci.high)))


def test_tost_without_a_margin_or_spread_decides_nothing():
    for se, df, margin in [(0.1, 10, 0.0), (0.0, 10, 0.1), (0.1, 0, 0.1), (0.1, 10, -0.1)]:
        e = tost(0.0, se, df, margin)
        assert not e.equivalent and math.isnan(e.p) and math.isnan(e.lo) and math.isnan(e.hi) and e.margin == margin


def test_fieller_at_the_edge_of_a_significant_denominator_is_the_whole_line():
    """den^2 = t^2 Var(den): the quadratic's leading coefficient is 0, no bounded set."""
    assert fieller(1.0, 2.0, 0.1, 1.0, 0.0, 2.0) == (-math.inf, math.inf, "all")


def test_crossing_bounds_by_hand():
    # convex around the crossing: the chord before and the one after, extended, bound it
    tokens, losses, start = [100, 200, 300, 400, 500], [4.0, 3.0, 2.4, 2.1, 1.95], (0.0, 6.0)
    c = crossing(tokens, losses, 2.7, start)
    assert (c.tokens, c.lower, c.upper) == pytest.approx((250, 230, 250))  # 200 + 0.3/0.6 x 100; 100 + 1.3/1 x 100
    # an evaluation exactly at the target is the crossing; not convex there: the bracket is the two evaluations
    c = crossing([100, 200, 300], [4.0, 3.0, 2.0], 3.0, (0.0, 4.5))
    assert (c.tokens, c.lower, c.upper) == (200, 100, 200)


def test_crossing_is_bracketed_by_its_evaluations_where_the_curve_is_not_convex():
    start = (0.0, 5.0)
    # slopes -0.02, -0.005, -0.01 around the crossing (the middle one above the last): not convex
    c = crossing([100, 200, 300, 400], [4.0, 2.0, 1.5, 0.5], 1.8, start)
    assert (c.tokens, c.lower, c.upper) == pytest.approx((240, 200, 300))
    # slopes -0.01, -0.02, -0.005 (the first above the second): not convex either
    c = crossing([100, 200, 300, 400], [4.0, 3.0, 1.0, 0.5], 2.0, start)
    assert (c.tokens, c.lower, c.upper) == (250, 200, 300)


def test_fieller_with_a_zero_discriminant_and_an_insignificant_denominator_is_the_whole_line():
    assert fieller(0.0, 1.0, 0.0, 1.0, 0.0, 2.0) == (-math.inf, math.inf, "all")  # a = -3, b = c = 0


def test_quadratic_minimum_of_four_runs_and_of_a_curve_that_bends_down():
    q = quadratic_minimum([0.0, 1.0, 2.0, 2.0], [2.2, 2.0, 2.2, 2.21])  # the fewest runs that fit: 1 df
    assert q.n == 4 and q.x_min == pytest.approx(1.0, abs=0.05)
    down = quadratic_minimum([0, 0, 1, 1, 2, 2, 3, 3], [2.0, 2.01, 2.3, 2.31, 2.4, 2.41, 2.3, 2.31])
    assert down.shape in ("none", "exclusive", "all") and not down.bounded
    assert math.isnan(down.x_min) and math.isnan(down.lo) and math.isnan(down.hi)


def test_ratio_of_means_edges():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ratio_of_means([1.0, 2.0], [0.0, 0.0])
        assert all(math.isnan(v) for v in r)  # a zero denominator: no ratio, no ZeroDivisionError
    assert ratio_of_means([2.0, 2.0], [1.0, 1.0]) == (2.0, 2.0, 2.0)  # no spread: the point itself
    two = ratio_of_means([2.0, 2.2], [1.0, 1.1])  # two values per group is enough for an interval
    assert two[0] == pytest.approx(2.0) and two[1] < 2.0 < two[2]
    assert math.isnan(ratio_of_means([2.0], [1.0, 1.1])[1]) and math.isnan(ratio_of_means([2.0, 2.1], [1.0])[1])


def test_pooled_model_summary_and_a_single_values_spread():
    import warnings

    m = pooled_model({"a": [1.0], "b": [2.0, 4.0]})
    assert set(m.summary()) == {"sigma", "df", "levene_p", "bartlett_p"} and m.summary()["df"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Degrees of freedom <= 0" must not reach the user
        assert math.isnan(m.sd("a")) and m.sd("b") == pytest.approx(math.sqrt(2))


def test_welch_vs_reference_names_each_arm():
    groups = {"ref": [1.0, 1.2, 0.9, 1.1], "a": [1.5, 1.9, 1.4], "b": [0.2, 0.9, 0.4, 0.6]}
    for others in (["a"], ["a", "b"]):
        got = welch_vs_reference(groups, "ref", others)
        assert all(got[k].arm == k and got[k].critical == pytest.approx((got[k].hi - got[k].lo) / (2 * got[k].se))
                   for k in others)


def test_tost_interval_is_the_90_percent_t_interval_and_empty_groups_have_no_difference():
    import warnings

    e = tost(0.01, 0.02, 10, 0.05)
    half = sps.t.ppf(0.95, 10) * 0.02
    assert (e.lo, e.hi) == pytest.approx((0.01 - half, 0.01 + half))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Mean of empty slice"
        assert math.isnan(welch_pair([], [1.0, 2.0]).diff) and math.isnan(welch_pair([1.0, 2.0], []).diff)


def test_more_edges_by_hand():
    # Fieller's exclusive set: a = 1 - 4 = -3, b = -2, c = 1 - 4 x 0.01 = 0.96, disc = 4 + 12 x 0.96
    r = math.sqrt(4 + 12 * 0.96)
    lo, hi, shape = fieller(1.0, 1.0, 0.01, 1.0, 0.0, 2.0)
    assert shape == "exclusive" and (lo, hi) == pytest.approx(((2 + r) / -6, (2 - r) / -6))
    # replicates that agree exactly: no pure error, no lack-of-fit test
    x = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
    y = np.array([2.0, 2.0, 1.5, 1.5, 1.4, 1.4, 1.6, 1.6])
    p, dfs = lack_of_fit(x, y, np.full(8, 0.01), 3)
    assert math.isnan(p) and dfs == (1, 4)
    # one pooled degree of freedom still gives an interval; a pair without spread keeps its name
    assert pooled_pair(pooled_model({"a": [1.0, 2.0], "b": [3.0]}), "a", "b").has_interval
    assert welch_pair([1.0], [2.0, 3.0], name="a").arm == "a"
    down = quadratic_minimum([0, 0, 1, 1, 2, 2, 3, 3], [2.0, 2.01, 2.3, 2.31, 2.4, 2.41, 2.3, 2.31])
    assert down.n == 8


def test_crossing_bounds_right_after_the_first_evaluation():
    """The crossing between the first and second evaluations, the start as the point before: convex
    (slopes -0.03, -0.01, -0.005), so the neighbouring chords bound it."""
    c = crossing([100, 200, 300], [3.0, 2.0, 1.5], 2.5, (0.0, 6.0))
    # t = 150; the chord from the start, extended, reaches 2.5 at 3.5/3 x 100 = 116.7; the next chord, back, at 100
    assert (c.tokens, c.lower, c.upper) == pytest.approx((150, 100 + 100 * 0.5 / 3, 150))


def test_crossing_convexity_uses_slopes_per_token_when_evaluations_are_unevenly_spaced():
    """Slopes -0.03, -0.01, -0.005 per token (the last over 300 tokens): convex, as in the evenly
    spaced case; changes per evaluation (-3, -1, -1.5) would not be."""
    c = crossing([100, 200, 500], [3.0, 2.0, 0.5], 2.5, (0.0, 6.0))
    assert (c.tokens, c.lower, c.upper) == pytest.approx((150, 350 / 3, 150))
