"""How the best FFN ratio moves with model size or training length.

For one cell (one model size at one training length), :func:`best_ratio` fits a parabola in
log2(raw ratio) to every run's final loss and reports its minimum with Fieller's 95% set
(bounded, or unbounded when the curvature is not significant) and the lack-of-fit test of the
parabola against the ratio means.

Across cells, the headline is :func:`weighted_trend`: every cell's vertex (its best log2 ratio)
with its standard error (delta method on the cell's parabola), then

* **homogeneity**: Cochran's Q of the vertices about their precision-weighted mean, on K - 1 df:
  a small p says the best ratio is not constant along the axis, whatever its shape;
* **weighted slope**: the vertices' inverse-variance weighted regression on log2(axis), the
  change of the best log2 ratio per doubling; where the vertices scatter about the line more than
  their errors allow (misfit Q on K - 2 df above its df), the standard error is widened by
  sqrt(Q / df) and the interval uses Student's t on K - 2 df (K = 2: the normal interval, no misfit
  to measure).

The trend claim ("the best raw ratio does not change with size", the source note's "for any d_model")
is decided by :func:`trend_verdict`: false when homogeneity is rejected at 5% (the best ratio is
not constant), true when it is not and the slope's interval lies inside the pre-registered margin
(:data:`SLOPE_MARGIN` per doubling), otherwise inconclusive.

:func:`slope` (the unweighted joint fit of every cell's parabola with vertices on one line,
:func:`joint_fit`, and its parametric bootstrap) is kept as a sensitivity analysis. Its least
squares can have several minima (a precise cell treated as flat is one); :func:`joint_fit` takes
the best of starts over a grid of slopes, so it finds the global one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ffnlab.experiments.analysis.stats import LEVEL, quadratic_minimum
from ffnlab.experiments.sweep.runs import ArmStats
from ffnlab.sizing.result import Result
from ffnlab.sizing.verdicts import Verdict

SLOPE_MARGIN = 0.1  # log2(best ratio) per doubling: over 100x (6.6 doublings) a factor 2**0.66 = 1.6
BOOTSTRAP = 2000
START_SLOPES = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)  # joint_fit's starts besides the vertices' own line
HOMOGENEITY_ALPHA = 0.05
CURVATURE_Z = 1.96  # a cell's vertex enters the weighted trend only where its curvature is significant


def cell_points(arms: Sequence[ArmStats], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(log2 raw ratio, final loss) of every kept run of the arms of FFN ``kind``."""
    same = [a for a in arms if a.kind == kind]
    xs = [math.log2(a.ratio_raw) for a in same for _ in a.runs]
    ys = [v for a in same for v in a.losses]
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


@dataclass(frozen=True)
class BestRatio(Result):
    """One cell's best raw ratio (:func:`best_ratio`): the reference's size and training tokens, the
    parabola's minimum with Fieller's set (``shape``), the runs fitted, the lack-of-fit test, the
    lowest and highest raw ratio tested (empty with none) and whether the set lies inside them."""

    params_non_embedding: int
    d_model: int
    tokens: int | None
    best_ratio: float
    lo: float
    hi: float
    shape: str
    runs: int
    lack_of_fit_p: float
    lack_of_fit_df: tuple[int, int]
    tested: tuple[float, ...]
    inside_tested: bool


def best_ratio(arms: Sequence[ArmStats], reference: str) -> BestRatio:
    """The raw ratio with the lowest loss for the reference's FFN kind (module docstring)."""
    ref = next(a for a in arms if a.name == reference)
    x, y = cell_points(arms, ref.kind)
    q = quadratic_minimum(x.tolist(), y.tolist())
    tested = sorted({a.ratio_raw for a in arms if a.kind == ref.kind})
    return BestRatio(params_non_embedding=ref.params_non_embedding, d_model=ref.d_model,
                     tokens=ref.runs[0].summary.get("tokens") if ref.runs else None,
                     best_ratio=2 ** q.x_min if not math.isnan(q.x_min) else math.nan,
                     lo=_pow2(q.lo), hi=_pow2(q.hi), shape=q.shape, runs=q.n,
                     lack_of_fit_p=q.lack_of_fit_p, lack_of_fit_df=q.lack_of_fit_df,
                     tested=(min(tested), max(tested)) if tested else (),
                     inside_tested=bool(q.bounded and tested and min(tested) <= _pow2(q.lo)
                                        and _pow2(q.hi) <= max(tested)))


def _pow2(v: float) -> float:
    if math.isnan(v):
        return math.nan
    if math.isinf(v):
        return math.inf if v > 0 else 0.0
    return 2.0 ** v if v < 1000 else math.inf


def _design(x: np.ndarray) -> np.ndarray:
    """Columns 1, x, x^2 of a parabola in x."""
    return np.column_stack([np.ones(x.size), x, x * x])


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    design = _design(x)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    return coef, float(resid @ resid) / max(1, x.size - 3)


@dataclass(frozen=True)
class Slope(Result):
    """Change in log2(best ratio) per doubling of the axis, with its bootstrap interval."""

    slope: float
    lo: float
    hi: float
    no_minimum_share: float  # share of redraws where the joint fit failed
    cells: int

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)


def joint_fit(cells: Sequence[tuple[float, np.ndarray, np.ndarray]]) -> tuple[float, float] | None:
    """(slope, intercept) of the vertex line: least squares of every cell's losses on its own
    parabola ``a_k + c_k (x - m - s z_k)^2`` (``z_k`` = log2 of the cell's axis, ``c_k > 0``), so
    the cells share only the line their best log2 ratios lie on; a flat cell (small ``c_k``) says
    little about it. The global minimum of several starts (the vertices' own line and the slopes
    :data:`START_SLOPES`); None when every start fails."""
    from scipy import optimize

    z = np.log2(np.asarray([c[0] for c in cells], dtype=float))
    z = z - z.mean()
    k = len(cells)
    start_a, start_c, vert = [], [], []
    for _, x, y in cells:
        coef, _ = _fit(x, y)
        c = max(float(coef[2]), 1e-4)
        start_a.append(float(y.min()))
        start_c.append(math.log(c))
        vert.append(-coef[1] / (2 * c))
    vert_arr = np.clip(np.asarray(vert), -10, 10)
    s0 = float(np.polyfit(z, vert_arr, 1)[0]) if k > 1 and np.ptp(z) > 0 else 0.0

    cell = np.concatenate([np.full(c[1].size, i) for i, c in enumerate(cells)])  # each run's cell
    xs = np.concatenate([c[1] for c in cells])
    ys = np.concatenate([c[2] for c in cells])
    zs = z[cell]
    width = 2 * k + 2
    block = np.zeros((xs.size, width))
    block[np.arange(xs.size), cell] = -1.0
    curv_at = np.arange(xs.size) * width + k + cell  # flat index of each run's curvature derivative

    def resid(p: np.ndarray) -> np.ndarray:  # every run at once (the cells' runs in order)
        u = xs - p[2 * k] - p[2 * k + 1] * zs
        r: np.ndarray = ys - p[:k][cell] - np.exp(p[k:2 * k])[cell] * u ** 2
        return r

    def jac(p: np.ndarray) -> np.ndarray:  # the residuals' derivatives, exact (no finite differences)
        u = xs - p[2 * k] - p[2 * k + 1] * zs
        cu = np.exp(p[k:2 * k])[cell] * u
        out: np.ndarray = block.copy()
        out.ravel()[curv_at] = -cu * u
        out[:, 2 * k] = 2 * cu
        out[:, 2 * k + 1] = 2 * cu * zs
        return out

    if xs.size < width:  # fewer runs than parameters: Levenberg-Marquardt cannot start
        return None
    best: tuple[float, np.ndarray] | None = None
    for s_start in (s0, *START_SLOPES):  # several starts: the least squares can have several minima
        p0 = np.asarray([*start_a, *start_c, float(vert_arr.mean()), s_start])
        if not np.all(np.isfinite(resid(p0))):
            continue
        # MINPACK's lmder through leastsq: what least_squares(method="lm") runs (same tolerances,
        # step factor and scaling), without its per-call wrappers, which cost more than the fit
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # leastsq's unused covariance
            x, _, info, _, status = optimize.leastsq(resid, p0, Dfun=jac, full_output=True, ftol=1e-8,
                                                     xtol=1e-8, gtol=1e-8, maxfev=2000, factor=100.0, diag=None)
        fvec = info["fvec"]
        cost = 0.5 * float(np.dot(fvec, fvec))
        if status in (1, 2, 3, 4) and np.all(np.isfinite(x)) and (best is None or cost < best[0]):
            best = (cost, x)
    if best is None:
        return None
    return float(best[1][2 * k + 1]), float(best[1][2 * k])


def slope(cells: Sequence[tuple[float, np.ndarray, np.ndarray]], level: float = LEVEL,
          n_boot: int = BOOTSTRAP, seed: int = 0) -> Slope:
    """``cells``: (axis value, log2 ratios, losses) per cell. The change of the best log2 ratio
    per doubling of the axis (:func:`joint_fit`) and its parametric-bootstrap interval: every
    cell's runs redrawn from that cell's own fitted parabola with its residual variance (no line
    assumed), the joint fit repeated, the percentile interval taken. Redraws in which the joint
    fit fails are counted; past half the tail probability the interval is unbounded."""
    if len(cells) < 2:
        return Slope(math.nan, math.nan, math.nan, math.nan, len(cells))
    point = joint_fit(cells)
    fits = [(_fit(x, y), x) for _, x, y in cells]
    rng = np.random.default_rng(seed)
    slopes, failed = [], 0
    for _ in range(n_boot):
        redraw = []
        for (axis, _, _), ((coef, s2), x) in zip(cells, fits, strict=True):
            y = coef[0] + coef[1] * x + coef[2] * x * x + rng.normal(0.0, math.sqrt(s2), x.size)
            redraw.append((axis, x, y))
        got = joint_fit(redraw)
        if got is None:
            failed += 1
            continue
        slopes.append(got[0])
    value = point[0] if point else math.nan
    return _percentile_slope(value, np.asarray(slopes), failed / n_boot, level, len(cells))


def _percentile_slope(value: float, draws: np.ndarray, failed_share: float, level: float, cells: int) -> Slope:
    """The percentile interval of the bootstrap ``draws``; unbounded when the point estimate is
    missing or more than half the tail probability of redraws failed."""
    tail = (1 - level) / 2
    if not math.isfinite(value) or failed_share > tail / 2 or draws.size == 0:
        return Slope(value, -math.inf, math.inf, failed_share, cells)
    lo, hi = np.quantile(draws, [tail, 1 - tail])
    return Slope(value, float(lo), float(hi), failed_share, cells)


def segment(a: tuple[float, np.ndarray, np.ndarray], b: tuple[float, np.ndarray, np.ndarray],
            level: float = LEVEL, n_boot: int = BOOTSTRAP, seed: int = 0) -> Slope:
    """The change of the best log2 ratio per doubling of the axis between two cells alone: each
    cell's vertex from its own parabola (what :func:`joint_fit` gives for two cells, since two
    vertices determine the line), with the same parametric bootstrap as :func:`slope`, vectorised.
    A diagnostic, not a pre-registered test: adjacent segments whose intervals do not overlap show
    that the vertices are not on one line, so one slope summarises the trend poorly."""
    dz = math.log2(b[0]) - math.log2(a[0])
    if dz == 0:  # two cells at one point of the axis: no change per doubling to speak of
        return Slope(math.nan, math.nan, math.nan, math.nan, 2)
    rng = np.random.default_rng(seed)
    point, boots = [], []
    for _, x, y in (a, b):
        design = _design(x)
        coef, s2 = _fit(x, y)
        point.append(_vertex(coef[None, :])[0])
        ys = (design @ coef)[:, None] + rng.normal(0.0, math.sqrt(s2), (x.size, n_boot))
        boots.append(_vertex(np.linalg.lstsq(design, ys, rcond=None)[0].T))
    ok = np.isfinite(boots[0]) & np.isfinite(boots[1])
    return _percentile_slope(float((point[1] - point[0]) / dz), (boots[1][ok] - boots[0][ok]) / dz,
                             1.0 - float(ok.mean()), level, 2)


def _vertex(coef: np.ndarray) -> np.ndarray:
    """Vertex x of each parabola (rows: intercept, slope, curvature); nan where it opens downward
    or is flat (no minimum)."""
    c = coef[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, -coef[:, 1] / (2 * c), np.nan)


@dataclass(frozen=True)
class Vertex:
    """A cell's best log2 ratio and its standard error (delta method on its parabola)."""

    x: float
    se: float


def vertex(x: np.ndarray, y: np.ndarray) -> Vertex:
    """The vertex ``-b / 2c`` of the least-squares parabola and its delta-method standard error;
    ``nan`` where the curvature is not significantly positive (z < :data:`CURVATURE_Z`: Fieller's
    set would be unbounded and the delta method too narrow) or with too few runs."""
    if x.size < 4:
        return Vertex(math.nan, math.nan)
    design = _design(x)
    coef, s2 = _fit(x, y)
    b, c = float(coef[1]), float(coef[2])
    cov = s2 * np.linalg.pinv(design.T @ design)
    if c <= 0 or c < CURVATURE_Z * math.sqrt(max(0.0, float(cov[2, 2]))):
        return Vertex(math.nan, math.nan)  # no significant minimum: the delta method would mislead
    grad = np.asarray([0.0, -1.0 / (2 * c), b / (2 * c * c)])
    return Vertex(-b / (2 * c), float(math.sqrt(max(0.0, grad @ cov @ grad))))


@dataclass(frozen=True)
class WeightedTrend:
    """The cells' vertices: their homogeneity and their precision-weighted slope per doubling."""

    slope: float
    lo: float
    hi: float
    se: float
    homogeneity_q: float
    homogeneity_df: int
    homogeneity_p: float
    misfit_q: float
    misfit_df: int
    misfit_p: float
    widened: bool  # the standard error was widened for misfit
    cells: int
    vertices: tuple[tuple[float, float, float], ...]  # (log2 axis, vertex, se) per cell


def weighted_trend(cells: Sequence[tuple[float, np.ndarray, np.ndarray]], level: float = LEVEL) -> WeightedTrend:
    """Homogeneity of the cells' vertices and their weighted slope per doubling (module docstring)."""
    from scipy import stats

    verts = [(math.log2(axis), vertex(x, y)) for axis, x, y in cells]
    ok = [(z, v) for z, v in verts if math.isfinite(v.x) and v.se > 0]
    nan = math.nan
    if len(ok) < 2:
        return WeightedTrend(nan, -math.inf, math.inf, nan, nan, 0, nan, nan, 0, nan, False, len(cells),
                             tuple((z, v.x, v.se) for z, v in verts))
    z = np.asarray([a for a, _ in ok])
    v = np.asarray([b.x for _, b in ok])
    w = 1.0 / np.asarray([b.se for _, b in ok]) ** 2
    mean = float(np.sum(w * v) / np.sum(w))
    q_h = float(np.sum(w * (v - mean) ** 2))
    df_h = len(ok) - 1
    p_h = float(stats.chi2.sf(q_h, df_h))
    zc = z - np.sum(w * z) / np.sum(w)
    sxx = float(np.sum(w * zc * zc))
    if sxx <= 0:  # every cell at one point of the axis
        return WeightedTrend(nan, nan, nan, nan, q_h, df_h, p_h, nan, 0, nan, False, len(cells),
                             tuple((a, b.x, b.se) for a, b in verts))
    slope_ = float(np.sum(w * zc * v) / sxx)
    intercept = mean
    resid = v - intercept - slope_ * zc
    df_m = len(ok) - 2
    q_m = float(np.sum(w * resid ** 2)) if df_m > 0 else nan
    p_m = float(stats.chi2.sf(q_m, df_m)) if df_m > 0 else nan
    se = math.sqrt(1.0 / sxx)
    widened = df_m > 0 and q_m > df_m
    if widened:
        se *= math.sqrt(q_m / df_m)
    crit = float(stats.t.ppf(0.5 + level / 2, df_m)) if df_m > 0 else float(stats.norm.ppf(0.5 + level / 2))
    return WeightedTrend(slope_, slope_ - crit * se, slope_ + crit * se, se, q_h, df_h, p_h, q_m, max(df_m, 0), p_m,
                         widened, len(cells), tuple((a, b.x, b.se) for a, b in verts))


def trend_verdict(t: WeightedTrend, margin: float = SLOPE_MARGIN, alpha: float = HOMOGENEITY_ALPHA) -> Verdict:
    """"The best ratio does not change along this axis": false when the cells' best ratios are not
    homogeneous (p < ``alpha``); true when they are not shown to differ and the weighted slope's
    interval lies within +/-``margin``; otherwise inconclusive."""
    if math.isfinite(t.homogeneity_p) and t.homogeneity_p < alpha:
        return "false"
    if math.isfinite(t.lo) and math.isfinite(t.hi) and -margin < t.lo and t.hi < margin:
        return "true"
    return "inconclusive"
