"""Small, exact statistics for experiment reports (numpy + scipy, no torch).

* :func:`mean_ci` — mean and Student-t confidence interval over seeds;
* :func:`welch_ci` — difference of two arms' means with Welch's t interval;
* :func:`bootstrap_ci` — percentile bootstrap for a statistic of two groups (difference or
  ratio of means), resampling each group independently;
* :func:`tokens_to_target` — where a loss curve first reaches a target, interpolated linearly
  between evaluation points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) with a t interval; low = high = nan for fewer than two values."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def welch_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean(a) - mean(b), low, high): Welch's t interval (unequal variances). Conservative with
    few seeds, where a percentile bootstrap would understate the spread."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = float(xa.mean() - xb.mean()) if xa.size and xb.size else math.nan
    if xa.size < 2 or xb.size < 2:
        return d, math.nan, math.nan
    va, vb = xa.var(ddof=1) / xa.size, xb.var(ddof=1) / xb.size
    se = math.sqrt(va + vb)
    if se == 0:  # identical values: no spread to judge a difference by
        return d, math.nan, math.nan
    df = (va + vb) ** 2 / (va**2 / (xa.size - 1) + vb**2 / (xb.size - 1))
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2, df) * se)
    return d, d - half, d + half


def log_ratio_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean(a) / mean(b), low, high) from Welch's t interval on log values: conservative with
    few seeds (the percentile bootstrap is reported beside it but decides nothing)."""
    la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    _, lo, hi = welch_ci(la, lb, level)
    point = float(np.mean(a) / np.mean(b)) if len(a) and len(b) else math.nan
    return point, math.exp(lo) if lo == lo else math.nan, math.exp(hi) if hi == hi else math.nan


def diff_of_means(a: np.ndarray, b: np.ndarray) -> float:
    return float(a.mean() - b.mean())


def ratio_of_means(a: np.ndarray, b: np.ndarray) -> float:
    return float(a.mean() / b.mean())


def bootstrap_ci(a: Sequence[float], b: Sequence[float], stat: Callable[[np.ndarray, np.ndarray], float] = diff_of_means,
                 *, n_boot: int = 10_000, level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """(statistic, low, high): percentile bootstrap, each group resampled with replacement."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size == 0 or xb.size == 0:
        return math.nan, math.nan, math.nan
    point = stat(xa, xb)
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, xa.size, size=(n_boot, xa.size))
    ib = rng.integers(0, xb.size, size=(n_boot, xb.size))
    sa, sb = xa[ia], xb[ib]
    if stat is diff_of_means:
        samples = sa.mean(axis=1) - sb.mean(axis=1)
    elif stat is ratio_of_means:
        samples = sa.mean(axis=1) / sb.mean(axis=1)
    else:
        samples = np.array([stat(sa[i], sb[i]) for i in range(n_boot)])
    lo, hi = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2])
    return point, float(lo), float(hi)


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
