"""Statistical primitives of the experiment reports (numpy + scipy, no torch).

Intervals, each a :class:`Comparison` that carries its own standard error, degrees of freedom
and interval multiplier, so the power and seed advice of a comparison always come from the test
that decided it (:mod:`ffnlab.experiments.analysis.power`):

* :func:`dunnett_vs_reference` — every arm against the reference on the variance pooled over
  all arms, simultaneous family-wise intervals (Dunnett 1955, ``scipy.stats.dunnett``);
* :func:`welch_vs_reference` — Welch's t per arm against the reference (``scipy.stats.ttest_ind``
  with unequal variances), Bonferroni over the family: valid whether or not variances are equal;
* :func:`pooled_pair` / :func:`welch_pair` — one planned comparison;
* :func:`tost` — two one-sided tests of equivalence within a margin (Schuirmann 1987);
* :func:`ratio_of_means` — Fieller's interval for mean(a) / mean(b) with each group's own variance;
* :func:`quadratic_minimum` — where a fitted parabola is lowest, Fieller's interval for it
  (bounded, or unbounded when the curvature is not significant) and the lack-of-fit F test.

Also :func:`mean_ci` (Student t over seeds) and :func:`crossing` (where a loss curve reaches a
target, with the bracket the evaluations leave).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ffnlab.experiments.fmt import finite

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
    """``diff = mean(arm) - mean(reference)`` with its interval and the test that made it: the
    interval is ``diff +/- critical * se`` on ``df`` degrees of freedom (``method`` names it)."""

    arm: str
    diff: float
    lo: float = math.nan
    hi: float = math.nan
    se: float = math.nan
    df: float = math.nan
    critical: float = math.nan
    method: str = "none"
    p: float = math.nan

    @property
    def has_interval(self) -> bool:
        return finite(self.lo) and finite(self.hi)

    @property
    def decided(self) -> bool:
        """Whether the interval excludes zero (no interval never does)."""
        return self.has_interval and (self.lo > 0 or self.hi < 0)

    def as_list(self) -> list[float]:
        return [self.diff, self.lo, self.hi]


@dataclass
class PooledModel:
    """Per-arm means and one within-arm variance pooled over all arms (``N - k`` df)."""

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
        self.levene_p, self.bartlett_p = homogeneity(list(self.groups.values()))

    def sd(self, arm: str) -> float:
        """The arm's own standard deviation over seeds (NaN with one seed)."""
        x = self.groups[arm]
        return float(x.std(ddof=1)) if x.size > 1 else math.nan

    def se(self, a: str, b: str) -> float:
        """Standard error of mean(a) - mean(b) under the pooled variance."""
        return self.sigma * math.sqrt(1 / self.counts[a] + 1 / self.counts[b])

    def summary(self) -> dict[str, float | int]:
        return {"sigma": self.sigma, "df": self.df, "levene_p": self.levene_p, "bartlett_p": self.bartlett_p}


def pooled_model(groups: Mapping[str, Sequence[float] | np.ndarray]) -> PooledModel:
    """The one-way model of ``groups`` (arm name -> values over seeds)."""
    return PooledModel({k: np.asarray(v, dtype=float) for k, v in groups.items()})


def homogeneity(samples: list[np.ndarray]) -> tuple[float, float]:
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


@lru_cache(maxsize=4096)
def dunnett_critical(comparisons: int, n: int, level: float = LEVEL) -> float:
    """Dunnett's two-sided critical value for ``comparisons`` arms against a reference, ``n`` seeds
    in every arm, the variance pooled over those ``comparisons + 1`` arms: the half-width of
    ``scipy.stats.dunnett``'s interval over its standard error, on a sample of that shape (the
    critical value depends on the design only, not on the data)."""
    from scipy import stats

    sample = np.zeros(n)
    sample[:2] = (1.0, -1.0)  # every arm: sum of squares 2, so the pooled sd is known
    res = stats.dunnett(*[sample] * comparisons, control=sample, rng=np.random.default_rng(0))
    ci = res.confidence_interval(confidence_level=level)
    sd = math.sqrt(2.0 / (n - 1))
    return float(ci.high[0] - ci.low[0]) / 2 / (sd * math.sqrt(2 / n))


def dunnett_vs_reference(model: PooledModel, reference: str, others: Sequence[str] | None = None,
                         level: float = LEVEL, seed: int = 0) -> dict[str, Comparison]:
    """``others`` (default: every other arm) against ``reference``: Dunnett's simultaneous intervals
    on the variance pooled over the reference and ``others``. With the same seed count in every arm
    the critical value of that design is reused (:func:`dunnett_critical`); otherwise
    ``scipy.stats.dunnett`` runs on the data. No interval without residual spread."""
    others = [k for k in (others or model.groups) if k != reference]
    diffs = {k: model.means[k] - model.means[reference] for k in others}
    used = pooled_model({k: model.groups[k] for k in [reference, *others]})
    if not others or not used.df or not used.sigma > 0:
        return {k: Comparison(k, d) for k, d in diffs.items()}
    method = f"Dunnett, pooled sigma {used.sigma:.4g} on {used.df} df"
    counts = {used.counts[k] for k in used.groups}
    if len(counts) == 1:
        crit = dunnett_critical(len(others), counts.pop(), level) if len(others) > 1 else \
            _t_quantile(0.5 + level / 2, used.df)
        return {k: Comparison(k, diffs[k], diffs[k] - crit * used.se(k, reference), diffs[k] + crit * used.se(k,
                                                                                                              reference),
                              used.se(k, reference), float(used.df), crit, method) for k in others}
    from scipy import stats

    res = stats.dunnett(*(model.groups[k] for k in others), control=model.groups[reference],
                        rng=np.random.default_rng(seed))
    ci = res.confidence_interval(confidence_level=level)
    out = {}
    for i, k in enumerate(others):
        se = used.se(k, reference)
        lo, hi = float(ci.low[i]), float(ci.high[i])
        out[k] = Comparison(k, diffs[k], lo, hi, se, float(used.df), (hi - lo) / (2 * se), method,
                            float(res.pvalue[i]))
    return out


def _t_quantile(q: float, df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(q, df))


def welch_pair(a: Sequence[float], b: Sequence[float], level: float = LEVEL, name: str = "") -> Comparison:
    """mean(a) - mean(b) with Welch's t interval (``scipy.stats.ttest_ind``, unequal variances);
    no interval with fewer than two values per group or no spread."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = float(xa.mean() - xb.mean()) if xa.size and xb.size else math.nan
    if xa.size < 2 or xb.size < 2 or float(xa.var()) + float(xb.var()) == 0:
        return Comparison(name, d)
    from scipy import stats

    with warnings.catch_warnings():
        # One group may be constant (every run crossed the target between the same two
        # evaluations): its variance is exactly 0, the interval rests on the other group, and
        # scipy's "catastrophic cancellation" warning about the rounding of its mean is noise.
        if float(np.ptp(xa)) == 0 or float(np.ptp(xb)) == 0:
            warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        res = stats.ttest_ind(xa, xb, equal_var=False)
    ci = res.confidence_interval(confidence_level=level)
    se = math.sqrt(float(xa.var(ddof=1)) / xa.size + float(xb.var(ddof=1)) / xb.size)
    lo, hi = float(ci.low), float(ci.high)
    return Comparison(name, d, lo, hi, se, float(res.df), (hi - lo) / (2 * se),
                      f"Welch t on {float(res.df):.1f} df", float(res.pvalue))


def welch_vs_reference(groups: Mapping[str, Sequence[float]], reference: str, others: Sequence[str] | None = None,
                       level: float = LEVEL) -> dict[str, Comparison]:
    """Welch's interval per arm against ``reference``, Bonferroni over the family, so the
    family-wise coverage holds whatever the variances."""
    others = [k for k in (others or groups) if k != reference]
    lvl = 1 - (1 - level) / max(1, len(others))
    out = {}
    for k in others:
        c = welch_pair(groups[k], groups[reference], lvl, k)
        out[k] = c if not c.has_interval or len(others) == 1 else Comparison(
            c.arm, c.diff, c.lo, c.hi, c.se, c.df, c.critical,
            f"Welch t on {c.df:.1f} df, Bonferroni over {len(others)}", c.p)
    return out


def pooled_pair(model: PooledModel, a: str, b: str, level: float = LEVEL) -> Comparison:
    """One planned comparison mean(a) - mean(b): a t interval on the pooled variance."""
    diff = model.means[a] - model.means[b]
    if not (model.sigma > 0 and model.df > 0):
        return Comparison(a, diff)
    from scipy import stats

    se = model.se(a, b)
    crit = float(stats.t.ppf(0.5 + level / 2, model.df))
    p = float(2 * stats.t.sf(abs(diff) / se, model.df))
    return Comparison(a, diff, diff - crit * se, diff + crit * se, se, float(model.df), crit,
                      f"pooled t on {model.df} df", p)


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
    if not (se > 0 and df > 0 and margin > 0):
        return Equivalence(diff, math.nan, math.nan, margin, math.nan, False)
    from scipy import stats

    p = max(float(stats.t.sf((diff + margin) / se, df)), float(stats.t.cdf((diff - margin) / se, df)))
    half = float(stats.t.ppf(1 - alpha, df)) * se
    return Equivalence(diff, diff - half, diff + half, margin, p, p < alpha)


def fieller(num: float, den: float, v_num: float, v_den: float, cov: float, t: float) -> tuple[float, float, str]:
    """Fieller's set for ``rho = num / den``: every rho with (num - rho den)^2 <= t^2 Var(num - rho den),
    ``Var = v_num - 2 rho cov + rho^2 v_den``. Returns (lo, hi, shape): shape "bounded" (lo <= rho <= hi),
    "exclusive" (rho <= lo or rho >= hi: the denominator is not significantly nonzero) or "all"."""
    a = den * den - t * t * v_den
    b = -2 * (num * den - t * t * cov)
    c = num * num - t * t * v_num
    disc = b * b - 4 * a * c
    if a > 0 and disc >= 0:
        r = math.sqrt(disc)
        return (-b - r) / (2 * a), (-b + r) / (2 * a), "bounded"
    if a < 0 and disc > 0:
        r = math.sqrt(disc)
        lo, hi = sorted(((-b - r) / (2 * a), (-b + r) / (2 * a)))
        return lo, hi, "exclusive"
    return -math.inf, math.inf, "all"


def _satterthwaite(v: Sequence[float], n: Sequence[int]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variance terms ``v`` whose
    groups have ``n`` values."""
    num = sum(v) ** 2
    den = sum(x * x / (k - 1) for x, k in zip(v, n, strict=True))
    return num / den if den > 0 else math.inf


def ratio_of_means(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                   level: float = LEVEL) -> tuple[float, float, float]:
    """(mean(a) / mean(b), low, high): Fieller's interval for a ratio of two independent means,
    each group with its own variance, t on the Welch-Satterthwaite df. NaN bounds with fewer than
    two values per group or when the set is not a bounded interval."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size == 0 or xb.size == 0:
        return NAN3
    ma, mb = float(xa.mean()), float(xb.mean())
    point = ma / mb if mb else math.nan
    if xa.size < 2 or xb.size < 2:
        return point, math.nan, math.nan
    va, vb = float(xa.var(ddof=1)) / xa.size, float(xb.var(ddof=1)) / xb.size
    if va + vb == 0:
        return point, point, point
    from scipy import stats

    # df of Var(a - rho b) at the point estimate
    df = _satterthwaite([va, point * point * vb], [xa.size, xb.size])
    t = float(stats.t.ppf(0.5 + level / 2, df))
    lo, hi, shape = fieller(ma, mb, va, vb, 0.0, t)
    return (point, lo, hi) if shape == "bounded" else (point, math.nan, math.nan)


@dataclass(frozen=True)
class QuadraticMinimum:
    """Where ``y = a + b x + c x^2`` (least squares) is lowest. ``x_min`` is NaN when the fit
    curves down (c <= 0). The interval is Fieller's: ``shape`` "bounded" [lo, hi], "exclusive"
    (x <= lo or x >= hi) or "all" (unbounded: the curvature is not significant), or "none" (the
    fit curves down significantly: no minimum).
    ``lack_of_fit_p``: the F test of the parabola against the means of the distinct x (NaN when
    there are only three distinct x or no replicates)."""

    x_min: float
    lo: float
    hi: float
    shape: str
    n: int
    lack_of_fit_p: float
    lack_of_fit_df: tuple[int, int]

    @property
    def bounded(self) -> bool:
        return self.shape == "bounded"

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies in the interval's set (bounded, the two rays, everything, or nothing)."""
        if self.shape == "bounded":
            return self.lo <= x <= self.hi
        if self.shape == "exclusive":
            return x <= self.lo or x >= self.hi
        return self.shape == "all"


def lack_of_fit(x: np.ndarray, y: np.ndarray, resid: np.ndarray, n_coef: int) -> tuple[float, tuple[int, int]]:
    """F test of a fitted curve against the cell means of the distinct ``x`` (pure error from
    the replicates): p and (lack-of-fit df, pure-error df); NaN p when either df is 0."""
    levels = np.unique(x)
    pure = sum(float(((y[x == v] - y[x == v].mean()) ** 2).sum()) for v in levels)
    df_lof, df_pe = levels.size - n_coef, x.size - levels.size
    if df_lof <= 0 or df_pe <= 0 or pure <= 0:
        return math.nan, (max(df_lof, 0), max(df_pe, 0))
    from scipy import stats

    lof = float(resid @ resid) - pure
    f = (lof / df_lof) / (pure / df_pe)
    return float(stats.f.sf(f, df_lof, df_pe)), (df_lof, df_pe)


def quadratic_minimum(xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray,
                      level: float = LEVEL) -> QuadraticMinimum:
    """Fit a parabola to (x, y) points (loss against log2 ratio, one point per run) and locate its
    minimum ``-b / 2c`` with Fieller's ``level`` set on (b, c), t on n - 3 df. A fit that curves
    down significantly has no minimum (shape "none")."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    n = x.size
    if n < 4 or np.unique(x).size < 3:
        return QuadraticMinimum(math.nan, math.nan, math.nan, "all", n, math.nan, (0, 0))
    design = np.column_stack([np.ones(n), x, x * x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    s2 = float(resid @ resid) / (n - 3)
    cov = s2 * np.linalg.inv(design.T @ design)
    b, c = float(coef[1]), float(coef[2])
    lof_p, lof_df = lack_of_fit(x, y, resid, 3)
    from scipy import stats

    t = float(stats.t.ppf(0.5 + level / 2, n - 3))
    # x_min = -b / (2c): Fieller on num = -b, den = 2c
    lo, hi, shape = fieller(-b, 2 * c, float(cov[1, 1]), 4 * float(cov[2, 2]), -2 * float(cov[1, 2]), t)
    if c <= 0:  # the fit curves down: no minimum; a bounded set would be around its maximum
        return QuadraticMinimum(math.nan, math.nan, math.nan, "none" if shape == "bounded" else shape, n,
                                lof_p, lof_df)
    return QuadraticMinimum(-b / (2 * c), lo, hi, shape, n, lof_p, lof_df)


@dataclass(frozen=True)
class Crossing:
    """Where a falling curve first reaches a target: ``tokens`` interpolated linearly between the
    evaluation before (the last above the target) and the one at or below it, and bounds
    ``lower <= true crossing <= upper``. Where the curve is convex around the crossing (the slopes
    of its four neighbouring evaluations increase), the chord lies above it, so the crossing is at
    or before the interpolated point, and at or after where the neighbouring chords, extended,
    reach the target; elsewhere the bounds are the two evaluations. ``upper`` is infinite when the
    curve never reaches the target (censored at ``lower``, its last evaluation)."""

    tokens: float
    lower: float
    upper: float

    @property
    def censored(self) -> bool:
        return math.isinf(self.upper)


def _line_crossing(t0: float, l0: float, t1: float, l1: float, target: float) -> float:
    """Where the line through (t0, l0) and (t1, l1) reaches ``target`` (inf if it never falls)."""
    return t0 + (l0 - target) * (t1 - t0) / (l0 - l1) if l0 > l1 else math.inf


def crossing(tokens: Sequence[float], losses: Sequence[float], target: float,
             start: tuple[float, float]) -> Crossing:
    """First crossing of ``target`` by the curve (tokens, losses) that starts at ``start``
    (e.g. (0, ln V), the loss of a model at chance)."""
    ts, ls = [float(start[0]), *map(float, tokens)], [float(start[1]), *map(float, losses)]
    for i in range(1, len(ts)):
        if ls[i] > target:
            continue
        t0, t1, l0, l1 = ts[i - 1], ts[i], ls[i - 1], ls[i]
        t = t1 if l0 == l1 else min(max(t0 + (l0 - target) * (t1 - t0) / (l0 - l1), t0), t1)
        lo, hi = t0, t1
        if 2 <= i <= len(ts) - 2:  # an evaluation on each side of the bracket
            slopes = [(ls[j + 1] - ls[j]) / (ts[j + 1] - ts[j]) for j in (i - 2, i - 1, i)]
            tol = 1e-9 * max(abs(x) for x in slopes)  # a straight line is convex, whatever the rounding
            if slopes[0] <= slopes[1] + tol and slopes[1] <= slopes[2] + tol:  # convex: the chord is above
                prev = _line_crossing(ts[i - 2], ls[i - 2], t0, l0, target)
                nxt = _line_crossing(t1, l1, ts[i + 1], ls[i + 1], target) if l1 > ls[i + 1] else t0
                lo, hi = min(max(prev, nxt), t), t  # prev >= t0: the chord before falls past t0
        return Crossing(t, lo, hi)
    return Crossing(ts[-1], ts[-1], math.inf)
