"""Statistics for experiment reports (numpy + scipy, no torch).

One model per sweep: each arm has its own mean and all arms share one within-arm variance
(pooled over every arm, ``N - k`` degrees of freedom), after a homogeneity check (Levene's
test, median-centred, and Bartlett's). On that model:

* :func:`dunnett_vs_reference` — every arm against the reference, simultaneous intervals with
  family-wise 95% coverage (Dunnett 1955, ``scipy.stats.dunnett``);
* :func:`welch_vs_reference` — Welch's t per pair (``scipy.stats.ttest_ind``), Bonferroni over the
  same family: the sensitivity column, which does not assume equal variances;
* :func:`tost` — two one-sided tests of equivalence within a margin (Schuirmann 1987) on the
  pooled variance, built from scipy's t distribution;
* :func:`mde` — the smallest difference the design detects with a given power.

Also: :func:`mean_ci` (Student t over seeds), :func:`bootstrap_ci` (percentile bootstrap of two
independent groups, ``scipy.stats.bootstrap``, descriptive only) and :func:`tokens_to_target`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

LEVEL = 0.95
POWER = 0.80
NAN3 = (math.nan, math.nan, math.nan)


def mean_ci(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(mean, low, high) with a t interval; low = high = nan for fewer than two values."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return NAN3
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


@dataclass(frozen=True)
class Comparison:
    """One arm against the reference: ``diff = mean(arm) - mean(reference)`` with an interval."""

    arm: str
    diff: float
    lo: float
    hi: float
    p: float = math.nan
    se: float = math.nan

    @property
    def decided(self) -> bool:
        """Whether the interval excludes zero (a NaN interval never does)."""
        return self.lo > 0 or self.hi < 0

    def as_list(self) -> list[float]:
        return [self.diff, self.lo, self.hi]


@dataclass
class PooledModel:
    """Per-arm means and one within-arm variance pooled over all arms."""

    groups: dict[str, np.ndarray]
    means: dict[str, float] = field(init=False)
    counts: dict[str, int] = field(init=False)
    df: int = field(init=False)
    sigma: float = field(init=False)
    levene_p: float = field(init=False)
    bartlett_p: float = field(init=False)

    def __post_init__(self) -> None:
        self.means = {k: float(v.mean()) for k, v in self.groups.items()}
        self.counts = {k: int(v.size) for k, v in self.groups.items()}
        self.df = sum(self.counts.values()) - len(self.groups)
        ss = sum(float(((v - v.mean()) ** 2).sum()) for v in self.groups.values())
        self.sigma = math.sqrt(ss / self.df) if self.df > 0 else math.nan
        self.levene_p, self.bartlett_p = _homogeneity(list(self.groups.values()))

    @property
    def homogeneous(self) -> bool:
        """False only when Levene's test (robust to non-normal data; Bartlett's is reported beside it)
        rejects equal variances at 5%; untestable counts as not rejected."""
        return not self.levene_p < 0.05

    def se(self, a: str, b: str) -> float:
        """Standard error of mean(a) - mean(b) under the pooled variance."""
        return self.sigma * math.sqrt(1 / self.counts[a] + 1 / self.counts[b])

    def summary(self) -> dict[str, float | int | bool]:
        return {"sigma": self.sigma, "df": self.df, "levene_p": self.levene_p,
                "bartlett_p": self.bartlett_p, "homogeneous": self.homogeneous}


def pooled_model(groups: Mapping[str, Sequence[float]]) -> PooledModel:
    """The one-way model of ``groups`` (arm name -> values over seeds)."""
    return PooledModel({k: np.asarray(v, dtype=float) for k, v in groups.items()})


def _homogeneity(samples: list[np.ndarray]) -> tuple[float, float]:
    """(Levene p, Bartlett p) for equal variances; NaN where the test cannot run (fewer than two
    groups of two or more, no spread at all). Levene needs three values per group: with two, both
    absolute deviations from the median are equal, every group's deviations have zero spread and
    the statistic is infinite (p = 0) whatever the data, so it is reported as NaN (untestable)."""
    usable = [s for s in samples if s.size >= 2]
    if len(usable) < 2 or any(float(s.var()) == 0 for s in usable):
        return math.nan, math.nan
    from scipy import stats

    bartlett = float(stats.bartlett(*usable).pvalue)
    if min(s.size for s in usable) < 3:
        return math.nan, bartlett
    return float(stats.levene(*usable, center="median").pvalue), bartlett


def dunnett_vs_reference(model: PooledModel, reference: str, level: float = LEVEL,
                         seed: int = 0) -> dict[str, Comparison]:
    """Every other arm against ``reference``: Dunnett's simultaneous intervals (family-wise
    ``level``) on the pooled variance. Empty when the model has no residual degrees of freedom."""
    others = [k for k in model.groups if k != reference]
    if not others or not model.df or not model.sigma > 0:
        return {k: Comparison(k, model.means[k] - model.means[reference], math.nan, math.nan) for k in others}
    from scipy import stats

    res = stats.dunnett(*(model.groups[k] for k in others), control=model.groups[reference],
                        rng=np.random.default_rng(seed))
    ci = res.confidence_interval(confidence_level=level)
    return {k: Comparison(k, model.means[k] - model.means[reference], float(ci.low[i]), float(ci.high[i]),
                          float(res.pvalue[i]), model.se(k, reference))
            for i, k in enumerate(others)}


def critical_value(comparison: Comparison) -> float:
    """The multiplier of the standard error that gave ``comparison``'s interval (Dunnett's or t)."""
    if not comparison.se > 0 or comparison.hi != comparison.hi:
        return math.nan
    return (comparison.hi - comparison.lo) / (2 * comparison.se)


def welch_ci(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(mean(a) - mean(b), low, high): Welch's t interval (``scipy.stats.ttest_ind``,
    unequal variances); NaN bounds with fewer than two values per group or no spread."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = float(xa.mean() - xb.mean()) if xa.size and xb.size else math.nan
    if xa.size < 2 or xb.size < 2 or float(xa.var()) + float(xb.var()) == 0:
        return d, math.nan, math.nan
    from scipy import stats

    ci = stats.ttest_ind(xa, xb, equal_var=False).confidence_interval(confidence_level=level)
    return d, float(ci.low), float(ci.high)


def welch_vs_reference(model: PooledModel, reference: str, level: float = LEVEL) -> dict[str, Comparison]:
    """Welch's interval per arm against ``reference``, Bonferroni over the family (sensitivity)."""
    others = [k for k in model.groups if k != reference]
    lvl = 1 - (1 - level) / max(1, len(others))
    out = {}
    for k in others:
        d, lo, hi = welch_ci(model.groups[k], model.groups[reference], lvl)
        out[k] = Comparison(k, d, lo, hi)
    return out


def pair_se_df(model: PooledModel, a: str, b: str) -> tuple[float, float]:
    """Standard error and degrees of freedom of mean(a) - mean(b): the pooled variance's when the
    variances are homogeneous, else Welch's (the Welch-Satterthwaite df of ``scipy.stats.ttest_ind``
    with unequal variances), so a pair is never judged on a variance its own arms do not share."""
    if model.homogeneous:
        return model.se(a, b), float(model.df)
    xa, xb = model.groups[a], model.groups[b]
    if xa.size < 2 or xb.size < 2 or float(xa.var()) + float(xb.var()) == 0:
        return math.nan, math.nan
    from scipy import stats

    se = math.sqrt(float(xa.var(ddof=1)) / xa.size + float(xb.var(ddof=1)) / xb.size)
    return se, float(stats.ttest_ind(xa, xb, equal_var=False).df)


def pair_interval(model: PooledModel, a: str, b: str, level: float = LEVEL) -> tuple[Comparison, float]:
    """One planned comparison, mean(a) - mean(b), as a :class:`Comparison` (t interval on
    :func:`pair_se_df`'s standard error; NaN bounds when there is no spread) and its df."""
    diff = model.means[a] - model.means[b]
    se, df = pair_se_df(model, a, b)
    if not (se > 0 and df > 0):
        return Comparison(a, diff, math.nan, math.nan, se=se), df
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
    return Comparison(a, diff, diff - half, diff + half, se=se), df


@dataclass(frozen=True)
class Equivalence:
    """TOST: ``equivalent`` when the (1 - 2 alpha) interval lies inside (-margin, +margin)."""

    diff: float
    lo: float
    hi: float
    margin: float
    p: float
    equivalent: bool


def tost(diff: float, se: float, df: float, margin: float, alpha: float = 0.05) -> Equivalence:
    """Two one-sided t tests of |true difference| < ``margin`` (Schuirmann 1987): p is the larger
    of the two one-sided p-values; equivalent iff p < alpha."""
    if not (se > 0 and df > 0):
        return Equivalence(diff, math.nan, math.nan, margin, math.nan, False)
    from scipy import stats

    p = max(float(stats.t.sf((diff + margin) / se, df)), float(stats.t.cdf((diff - margin) / se, df)))
    half = float(stats.t.ppf(1 - alpha, df)) * se
    return Equivalence(diff, diff - half, diff + half, margin, p, p < alpha)


def mde(se: float, df: float, critical: float, power: float = POWER) -> float:
    """Minimum detectable difference: the true difference a two-sided test with ``critical``
    (Dunnett's or t multiplier) detects with probability ``power`` on ``df`` degrees of freedom,
    ``(critical + t_power) * se`` (the usual normal-shift approximation, t quantile for power)."""
    if not (se > 0 and df > 0 and critical == critical):
        return math.nan
    from scipy import stats

    return (critical + float(stats.t.ppf(power, df))) * se


def comparison_mde(comparison: Comparison, df: float, power: float = POWER) -> float:
    """:func:`mde` of one comparison: its own standard error and the multiplier of its interval."""
    return mde(comparison.se, df, critical_value(comparison), power)


def power_at(effect: float, se: float, df: float, critical: float) -> float:
    """Probability that the two-sided test with ``critical`` detects a true ``effect`` (noncentral
    t, one tail; the other tail is negligible for effects of interest)."""
    if not (se > 0 and df > 0 and critical == critical):
        return math.nan
    from scipy import stats

    nc = abs(effect) / se
    return float(stats.nct.sf(critical, df, nc) + stats.nct.cdf(-critical, df, nc))


@dataclass(frozen=True)
class QuadraticMinimum:
    """Where ``y = a + b x + c x^2`` (least squares) is lowest: ``x_min`` with a delta-method t
    interval; ``x_min`` is NaN when the fit has no minimum (c <= 0)."""

    x_min: float
    lo: float
    hi: float
    curvature: float
    n: int


def quadratic_minimum(xs: Sequence[float], ys: Sequence[float], level: float = LEVEL) -> QuadraticMinimum:
    """Fit a parabola to (x, y) points (e.g. loss against log2 ratio, one point per run) and locate
    its minimum with a ``level`` interval from the delta method on (b, c), t on n - 3 df."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    n = x.size
    if n < 4 or np.unique(x).size < 3:
        return QuadraticMinimum(math.nan, math.nan, math.nan, math.nan, n)
    design = np.column_stack([np.ones(n), x, x * x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    s2 = float(resid @ resid) / (n - 3)
    cov = s2 * np.linalg.inv(design.T @ design)
    _, b, c = (float(v) for v in coef)
    if c <= 0:
        return QuadraticMinimum(math.nan, math.nan, math.nan, c, n)
    x_min = -b / (2 * c)
    grad = np.array([0.0, -1 / (2 * c), b / (2 * c * c)])
    sd = math.sqrt(max(float(grad @ cov @ grad), 0.0))
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2, n - 3)) * sd
    return QuadraticMinimum(x_min, x_min - half, x_min + half, c, n)


def bootstrap_ci(a: Sequence[float], b: Sequence[float], *, ratio: bool = False, n_boot: int = 9999,
                 level: float = LEVEL, seed: int = 0) -> tuple[float, float, float]:
    """(statistic, low, high): percentile bootstrap (``scipy.stats.bootstrap``), each group
    resampled independently; the statistic is mean(a) - mean(b), or mean(a) / mean(b) with
    ``ratio``. Descriptive: with few seeds it understates the spread and decides nothing."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size == 0 or xb.size == 0:
        return NAN3

    def stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        mx, my = x.mean(axis=axis), y.mean(axis=axis)
        return mx / my if ratio else mx - my

    point = float(stat(xa, xb))
    if xa.size < 2 and xb.size < 2:
        return point, math.nan, math.nan
    from scipy import stats

    res = stats.bootstrap((xa, xb), stat, n_resamples=n_boot, confidence_level=level, method="percentile",
                          vectorized=True, rng=np.random.default_rng(seed))
    return point, float(res.confidence_interval.low), float(res.confidence_interval.high)


def tokens_to_target(tokens: Sequence[float], losses: Sequence[float], target: float,
                     start: tuple[float, float] | None = None) -> float | None:
    """First point where the curve reaches ``target`` (loss <= target), linearly interpolated
    between the evaluation before and the one at the crossing; None if it never does.

    ``start`` is the curve's origin, e.g. (0, ln V) for a model that starts at chance; without it a
    curve already below the target at its first evaluation is censored and gives None.
    """
    if start is not None:
        tokens, losses = [start[0], *tokens], [start[1], *losses]
    for i, (t, loss) in enumerate(zip(tokens, losses, strict=True)):
        if loss <= target:
            if i == 0:
                return None if start is None else float(t)
            t0, l0 = tokens[i - 1], losses[i - 1]
            if l0 == loss:
                return float(t)
            return float(t0 + (l0 - target) * (t - t0) / (l0 - loss))
    return None
