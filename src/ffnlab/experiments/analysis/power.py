"""Exact power of the tests the reports use, at the design that ran or at any other seed count.

A :class:`TestDesign` names the test that decides a comparison (Dunnett's many-to-one on a
pooled variance, a pooled-variance t for one planned pair, or Welch's t with Bonferroni) and the
spreads it is planned for. At ``n`` seeds per arm it gives the standard error, the degrees of
freedom and the critical value *at that n* (Dunnett's from ``scipy.stats.dunnett`` itself, run
on a sample of that shape), so:

* :func:`power` is the probability that the test declares a true difference ``effect``
  (noncentral t for pooled tests; for Welch's test integrated over both sample variances, since
  its df and critical value are random: the noncentral t on the true variances' df overstates
  Welch's power at 3-5 seeds by up to ~9 points);
* :func:`mde` is the smallest true difference detected with 80% power (solved exactly, not
  the ``(c + t_power) * se`` shortcut);
* :func:`seeds_for` is the smallest n whose power reaches the target, everything recomputed at
  that n (not ``n * (mde / d)^2``, which keeps today's critical value);
* :func:`tost_power` / :func:`seeds_for_equivalence` do the same for the equivalence test
  (exact: the estimated standard error integrated over its chi distribution).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ffnlab.experiments.analysis.stats import LEVEL, POWER, dunnett_critical
from ffnlab.monotone import first_true

MAX_SEEDS = 100_000  # beyond this a seed count is reported as "more than"
METHODS = ("dunnett", "pooled-t", "welch")


@dataclass(frozen=True)
class TestDesign:
    """The test deciding ``first - second`` and the spreads it is planned for.

    ``dunnett``: ``comparisons`` arms against one reference, the variance ``sd_first`` (=
    ``sd_second``) pooled over those ``comparisons + 1`` arms; ``pooled-t``: one pair on a
    variance pooled over ``arms`` arms; ``welch``: the pair's own spreads, Bonferroni over
    ``comparisons``."""

    method: str
    sd_first: float
    sd_second: float
    comparisons: int = 1
    arms: int = 2
    level: float = LEVEL

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")

    def se(self, n_first: int, n_second: int) -> float:
        return math.sqrt(self.sd_first**2 / n_first + self.sd_second**2 / n_second)

    def df(self, n_first: int, n_second: int | None = None) -> float:
        """Degrees of freedom of the test with ``n_first`` seeds per arm (``n_second`` for the
        second arm of a Welch pair)."""
        n2 = n_first if n_second is None else n_second
        if self.method == "welch":
            va, vb = self.sd_first**2 / n_first, self.sd_second**2 / n2
            den = va * va / (n_first - 1) + vb * vb / (n2 - 1)
            return (va + vb) ** 2 / den if den > 0 else math.inf
        arms = self.comparisons + 1 if self.method == "dunnett" else self.arms
        return float(arms * (n_first - 1))

    def critical(self, n: int, df: float | None = None) -> float:
        """The interval multiplier at ``n`` seeds per arm."""
        from scipy import stats

        d = self.df(n) if df is None else df
        if self.method == "dunnett" and self.comparisons > 1:
            return dunnett_critical(self.comparisons, n, self.level)
        alpha = (1 - self.level) / (self.comparisons if self.method == "welch" else 1)
        return float(stats.t.ppf(1 - alpha / 2, d))


def power_at(effect: float, se: float, df: float, critical: float) -> float:
    """Probability that ``|estimate / se_hat| > critical`` for a true difference ``effect``:
    the two-sided noncentral t (both tails)."""
    if not (se > 0 and df > 0 and math.isfinite(critical)):
        return math.nan
    from scipy import stats

    nc = abs(effect) / se
    upper = float(stats.nct.sf(critical, df, nc))
    lower = float(stats.nct.cdf(-critical, df, nc))  # the wrong tail; scipy returns NaN far out in it
    if math.isnan(upper):  # far in the right tail: every test rejects
        upper = 1.0 if nc > critical else 0.0
    return min(1.0, upper + (0.0 if math.isnan(lower) else lower))


def power(design: TestDesign, n: int, effect: float, n_second: int | None = None) -> float:
    """Power of ``design`` with ``n`` seeds per arm (``n_second`` for the second arm) to declare a
    true difference ``effect``: the noncentral t for pooled tests (exact), and for Welch's test
    the rejection probability integrated over the distribution of both sample variances (its
    estimated degrees of freedom and critical value vary with them; see :func:`welch_power`)."""
    n2 = n if n_second is None else n_second
    if min(n, n2) < 2:
        return math.nan
    if design.method == "welch":
        return welch_power(effect, design.sd_first, design.sd_second, n, n2,
                           (1 - design.level) / design.comparisons)
    df = design.df(n, n2)
    return power_at(effect, design.se(n, n2), df, design.critical(min(n, n2), df))


GRID = 96  # quantile points per sample variance in the Welch integrals


def _welch_grid(sd1: float, sd2: float, n1: int, n2: int) -> tuple[np.ndarray, np.ndarray]:
    """(estimated standard error, Welch-Satterthwaite df) on a grid of equally likely pairs of
    sample variances (midpoint quantiles of their scaled chi-square distributions)."""
    from scipy import stats

    q = (np.arange(GRID) + 0.5) / GRID
    v1 = stats.chi2.ppf(q, n1 - 1) * sd1 * sd1 / (n1 - 1) / n1
    v2 = stats.chi2.ppf(q, n2 - 1) * sd2 * sd2 / (n2 - 1) / n2
    a, b = np.meshgrid(v1, v2)
    se = np.sqrt(a + b)
    df = (a + b) ** 2 / (a * a / (n1 - 1) + b * b / (n2 - 1))
    return se, df


def welch_power(effect: float, sd1: float, sd2: float, n1: int, n2: int, alpha: float = 0.05) -> float:
    """Probability that Welch's two-sided test at ``alpha`` rejects for a true difference
    ``effect``: the mean difference is normal and independent of the sample variances, so the
    rejection probability given the variances is two normal tails, averaged over the variances."""
    from scipy import stats

    if not (sd1 >= 0 and sd2 >= 0 and sd1 + sd2 > 0 and min(n1, n2) >= 2):
        return math.nan
    se_hat, df = _welch_grid(sd1, sd2, n1, n2)
    c = stats.t.ppf(1 - alpha / 2, df)
    sd = math.sqrt(sd1 * sd1 / n1 + sd2 * sd2 / n2)
    p = stats.norm.cdf((effect - c * se_hat) / sd) + stats.norm.cdf((-effect - c * se_hat) / sd)
    return float(p.mean())


def welch_tost_power(margin: float, sd1: float, sd2: float, n1: int, n2: int, diff: float = 0.0,
                     alpha: float = 0.05) -> float:
    """Probability that TOST on Welch's standard error shows |difference| < ``margin``."""
    from scipy import stats

    if not (sd1 >= 0 and sd2 >= 0 and sd1 + sd2 > 0 and min(n1, n2) >= 2 and margin > 0):
        return math.nan
    se_hat, df = _welch_grid(sd1, sd2, n1, n2)
    half = margin - stats.t.ppf(1 - alpha, df) * se_hat
    sd = math.sqrt(sd1 * sd1 / n1 + sd2 * sd2 / n2)
    p = np.where(half > 0, stats.norm.cdf((half - diff) / sd) - stats.norm.cdf((-half - diff) / sd), 0.0)
    return float(p.mean())


def mde(design: TestDesign, n: int, target: float = POWER, n_second: int | None = None) -> float:
    """The smallest true difference ``design`` detects with probability ``target`` at ``n`` seeds
    per arm (root of :func:`power`; NaN when the design has no interval)."""
    n2 = n if n_second is None else n_second
    se = design.se(n, n2) if min(n, n2) >= 1 else math.nan
    if not (min(n, n2) >= 2 and se > 0):
        return math.nan
    from scipy import optimize

    def short(d: float) -> float:
        return power(design, n, d, n2) - target

    hi = se * 20
    if math.isnan(short(hi)):
        return math.nan
    while short(hi) < 0:
        hi *= 2
    return float(optimize.brentq(short, 0.0, hi, xtol=se * 1e-9))


def smallest_n(reaches: Callable[[int], bool], start: int = 2, cap: int = MAX_SEEDS) -> int | None:
    """The smallest n >= ``start`` for which ``reaches(n)`` (monotone in n) holds; None past ``cap``."""
    return first_true(reaches, start, cap)


def seeds_for(design: TestDesign, effect: float, target: float = POWER) -> int | None:
    """Seeds per arm (every arm the same) at which ``design`` detects a true ``effect`` with
    probability ``target``; None if no count up to :data:`MAX_SEEDS` does."""
    if not (abs(effect) > 0 and design.sd_first + design.sd_second > 0):
        return None
    return smallest_n(lambda n: power(design, n, effect) >= target)


def tost_power(se: float, df: float, margin: float, diff: float = 0.0, alpha: float = 0.05) -> float:
    """Probability that TOST at ``alpha`` shows |difference| < ``margin`` when the true difference
    is ``diff`` and the estimate's true standard error is ``se`` (estimated on ``df`` df): the
    estimate must fall inside ``(-margin + t se_hat, margin - t se_hat)``, integrated exactly over
    the chi distribution of ``se_hat / se``."""
    if not (se > 0 and df > 0 and margin > 0):
        return math.nan
    from scipy import integrate, stats

    t = float(stats.t.ppf(1 - alpha, df))

    def inside(v: float) -> float:  # v = df * (se_hat / se)^2 ~ chi2(df)
        half = margin - t * se * math.sqrt(v / df)
        if half <= 0:
            return 0.0
        p = stats.norm.cdf((half - diff) / se) - stats.norm.cdf((-half - diff) / se)
        return float(p) * float(stats.chi2.pdf(v, df))

    v_max = df * (margin / (t * se)) ** 2  # beyond it the interval cannot fit inside the margin
    if v_max <= 0:
        return 0.0
    pts = [x for x in (df - 2, df, df + 2) if 0 < x < v_max] or None
    val, _ = integrate.quad(inside, 0.0, v_max, points=pts, limit=200)
    return float(min(max(val, 0.0), 1.0))


def design_tost_power(design: TestDesign, n: int, margin: float, diff: float = 0.0, alpha: float = 0.05) -> float:
    """TOST power of ``design`` at ``n`` seeds per arm (:func:`tost_power`, or
    :func:`welch_tost_power` for Welch's standard error)."""
    if n < 2:
        return math.nan
    if design.method == "welch":
        return welch_tost_power(margin, design.sd_first, design.sd_second, n, n, diff, alpha)
    return tost_power(design.se(n, n), design.df(n), margin, diff, alpha)


def seeds_for_equivalence(design: TestDesign, margin: float, alpha: float = 0.05, diff: float = 0.0,
                          target: float = POWER) -> int | None:
    """Seeds per arm at which TOST shows equivalence within ``margin`` with probability ``target``
    when the true difference is ``diff`` (default 0); None if |diff| >= margin or past the cap."""
    if not (margin > 0 and abs(diff) < margin and design.sd_first + design.sd_second > 0):
        return None
    return smallest_n(lambda n: design_tost_power(design, n, margin, diff, alpha) >= target)
