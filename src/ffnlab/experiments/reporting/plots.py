"""Report figures (matplotlib, headless): PNG bytes, embedded in the HTML report.

One colour per FFN kind and raw ratio on every page (:func:`colour`): plain MLPs in blues and
gated FFNs in oranges, darker for wider FFNs, so "gelu r4" looks the same on every figure.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ffnlab import escape
from ffnlab.experiments.sweep.runs import ArmStats

if TYPE_CHECKING:
    from ffnlab.experiments.analysis.analyse import CellResult, Convergence, KaplanPoint, StatedHypothesis
    from ffnlab.experiments.analysis.verdicts import DecisionJSON

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH = 7.5  # inches; at 110 dpi about 825 px, the page's column
WIDE = 10.0
FONT = 9


def colour(gated: bool, ratio: float) -> tuple[float, float, float, float]:
    """The colour of an arm: its family's colour map (blues plain, oranges gated) at its raw ratio
    (log2 ratio 0..3 mapped to light..dark)."""
    import matplotlib

    cmap = matplotlib.colormaps["Oranges" if gated else "Blues"]
    pos = 0.35 + 0.6 * min(max((math.log2(ratio) if ratio > 0 else 0) / 3, 0.0), 1.0)
    return tuple(cmap(pos))  # type: ignore[return-value]


def arm_colour(arms: Mapping[str, ArmStats], name: str) -> Any:
    a = arms.get(name)
    return colour(a.gated, a.ratio_raw) if a is not None else "#555555"


def plain_text(fig: Any) -> None:
    """Every title, label, legend entry and note already on ``fig`` drawn as the text it is (its
    control characters as escapes, so no glyph is missing and no warning echoes them raw): names
    come from data (a folder, an arm, a budget) and a '$' must not start TeX. Tick labels are left
    alone: their formatter writes a log axis's 10^k in TeX on purpose."""
    from matplotlib.text import Text

    ticks = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()] for label in (tick.label1, tick.label2)}
    for t in fig.findobj(Text):
        if id(t) not in ticks:
            t.set_parse_math(False)
            t.set_text(escape.visible(t.get_text()))  # control characters shown as \x1b, never drawn raw


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    plain_text(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _figure(title: str, xlabel: str, ylabel: str, height: float = 4.2, width: float = WIDTH) -> tuple[Figure, Axes]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": FONT})
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_title(title, fontsize=FONT + 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _mean_curve(arm: ArmStats, flops: bool = False) -> tuple[list[float], list[float]]:
    n = min(len(r.tokens) for r in arm.runs)
    xs = [arm.runs[0].tokens[i] * (arm.train_flops_per_token if flops else 1) for i in range(n)]
    ys = [sum(r.losses[i] for r in arm.runs) / len(arm.runs) for i in range(n)]
    return xs, ys


def loss_curves(arms: Sequence[ArmStats], target: float | None, tail: float = 0.5) -> bytes:
    """Validation loss over the last ``tail`` of training (the first evaluations, near chance,
    would otherwise set the axis and hide the spread that decides the verdicts)."""
    fig, ax = _figure(f"Validation loss, last {tail:.0%} of training (thin: seeds)", "tokens", "val loss (nats)")
    kept = [a for a in arms if a.runs]
    end = max((t for a in kept for r in a.runs for t in r.tokens), default=1.0)
    lo_y, hi_y = math.inf, -math.inf
    for a in kept:
        xs, ys = _mean_curve(a)
        c = colour(a.gated, a.ratio_raw)
        ax.plot(xs, ys, label=a.name, lw=1.8, ls="--" if a.gated else "-", color=c)
        for r in a.runs:
            ax.plot(r.tokens, r.losses, color=c, alpha=0.3, lw=0.7)
            shown = [v for t, v in zip(r.tokens, r.losses, strict=True) if t >= (1 - tail) * end]
            if shown:
                lo_y, hi_y = min(lo_y, *shown), max(hi_y, *shown)
    if target is not None and not math.isnan(target):
        ax.axhline(target, color="k", lw=0.8, ls=":", label=f"target {target:.3f}")
    ax.set_xlim((1 - tail) * end, end * 1.01)
    if lo_y < hi_y:
        pad = 0.05 * (hi_y - lo_y)
        ax.set_ylim(lo_y - pad, hi_y + pad)
    if not kept:
        _no_run(ax)
    legend(ax, fontsize=FONT - 1, ncol=2)
    return _png(fig)


def legend(ax: Any, **style: Any) -> None:
    """``ax.legend(**style)``, or none when nothing drawn is labelled (every run set aside):
    matplotlib would draw an empty box and warn on stderr, quoting this module's source. Every
    legend of the report's figures is drawn here."""
    if ax.get_legend_handles_labels()[1]:
        ax.legend(**style)


def _legend_below(ax: Any) -> None:
    """The legend under the axes, off the data."""
    legend(ax, fontsize=FONT - 1, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)


NO_RUN = "no run is shown: every run was set aside (runs.csv says why)"


def _no_run(ax: Any) -> None:
    """Say on an empty plot that no run is drawn, rather than leave it blank."""
    ax.text(0.5, 0.5, NO_RUN, transform=ax.transAxes, ha="center", va="center", fontsize=FONT)


def _intervals(ax: Any, rows: Sequence[DecisionJSON], labels: list[str], colours: list[Any],
               seeds: Mapping[str, Sequence[float]], offsets: Sequence[float]) -> None:
    """Deciding interval (thick, labelled with its test), sensitivity (thin), estimate, seeds."""
    shown: set[str] = set()
    for i, r in enumerate(rows):
        lo, hi = r["interval"]
        if not math.isnan(lo):
            label = f"deciding: {r['method']}"
            ax.plot([lo, hi], [i, i], color=colours[i], lw=5, solid_capstyle="butt",
                    label=label if label not in shown else None)
            shown.add(label)
        for j, s in enumerate(r.get("sensitivity", [])):
            slo, shi = s["interval"]
            if not math.isnan(slo):
                label = f"sensitivity: {s['method']}"
                ax.plot([slo, shi], [i - 0.2 - 0.08 * j] * 2, color="#666", lw=1.2,
                        label=label if label not in shown else None)
                shown.add(label)
        ax.plot([r["diff"]], [i], "D", color="k", ms=5)
        pts = [v - offsets[i] for v in seeds.get(r["first"], [])]
        ax.plot(pts, [i + 0.22] * len(pts), "o", color="#444", ms=3, alpha=0.7,
                label="seeds (minus the other arm's mean)" if i == 0 else None)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels)


def forest(rows: Sequence[DecisionJSON], seeds: Mapping[str, Sequence[float]], reference: str, ref_mean: float,
           margin: float, arms: Mapping[str, ArmStats]) -> bytes:
    """Each alternative's final loss minus the reference's: the deciding 95% interval (thick),
    sensitivity intervals (thin), each seed minus the reference mean (dots), the margin (shaded)."""
    fig, ax = _figure(f"Difference from {reference} (final val loss, nats)", "arm - reference (nats)", "",
                      height=1.4 + 0.6 * max(1, len(rows)))
    ax.axvspan(-margin, margin, color="#9ecae1", alpha=0.3, label=f"equivalence margin +/-{margin:.4f}")
    ax.axvline(0, color="k", lw=0.8)
    _intervals(ax, rows, [r["first"] for r in rows], [arm_colour(arms, r["first"]) for r in rows], seeds,
               [ref_mean] * len(rows))
    _legend_below(ax)
    return _png(fig)


def pairs(rows: Sequence[DecisionJSON], seeds: Mapping[str, Sequence[float]]) -> bytes:
    """The planned pairs (first - second) with their deciding intervals and margins."""
    fig, ax = _figure("Planned pairs (final val loss, first - second, nats)", "first - second (nats)", "",
                      height=1.4 + 0.7 * len(rows))
    ax.axvline(0, color="k", lw=0.8)
    for i, r in enumerate(rows):
        ax.fill_between([-r["margin"], r["margin"]], i - 0.35, i + 0.35, color="#9ecae1", alpha=0.35,
                        label="equivalence margin" if i == 0 else None)
    means = [sum(seeds.get(r["second"], [math.nan])) / max(1, len(seeds.get(r["second"], []))) for r in rows]
    _intervals(ax, rows, [f"{r['first']} - {r['second']}" for r in rows], ["#b35806"] * len(rows), seeds, means)
    _legend_below(ax)
    return _png(fig)


def tokens_to_target(conv: Convergence, arms: Mapping[str, ArmStats],
                     claimed: StatedHypothesis | None = None) -> bytes:
    """Tokens to the target loss relative to the reference: the deciding interval per arm, each
    seed, and the speed-up the convergence hypothesis claims (``claimed``: its words), if any."""
    ref = conv.reference
    names = list(conv.arms)
    fig, ax = _figure(f"Tokens to val loss {conv.target_loss:.4f}, relative to {ref}",
                      f"tokens(arm) / mean tokens({ref})", "", height=1.4 + 0.6 * len(names))
    ref_mean = conv.arms[ref].tokens_mean or math.nan
    ax.axvline(1.0, color="k", lw=0.8)
    if claimed is not None and claimed.claimed_effect:
        x = float(claimed.claimed_effect)
        ax.axvline(x, color="#c62828", lw=1, ls="--", label=f"{x:.2f} (claimed by {claimed.id})")
    label: str | None = "deciding 95% (interpolation error included)"
    for i, name in enumerate(names):
        row = conv.arms[name]
        ratio = row.tokens_ratio
        if ratio and not math.isnan(ratio[1]):
            hi = ratio[2] if math.isfinite(ratio[2]) else ax.get_xlim()[1] * 2
            ax.plot([ratio[1], hi], [i, i], color=arm_colour(arms, name), lw=5, solid_capstyle="butt", label=label)
            label = None
            ax.plot([ratio[0]], [i], "D", color="k", ms=5)
        pts = [t / ref_mean for t in row.tokens]
        ax.plot(pts, [i + 0.22] * len(pts), "o", color="#444", ms=3, alpha=0.7)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    _legend_below(ax)
    return _png(fig)


def kaplan(rows: Sequence[KaplanPoint], arms: Mapping[str, ArmStats]) -> bytes:
    """Loss relative to the reference against the raw ratio (Kaplan et al. 2020, Fig. 5 form)."""
    fig, ax = _figure("Loss relative to the reference (Kaplan et al. 2020, Fig. 5 form)",
                      "raw ratio d_ff / d_model", "loss relative to the reference (%)")
    xs = [r.ratio_raw for r in rows]
    ys = [100 * r.loss_increase for r in rows]
    ax.plot(xs, ys, color="#999", lw=1, zorder=1)
    for r, x, y in zip(rows, xs, ys, strict=True):
        err = [[100 * (r.loss_increase - r.lo)], [100 * (r.hi - r.loss_increase)]] if not math.isnan(r.lo) \
            else None
        ax.errorbar([x], [y], yerr=err, marker="o", capsize=3, color=arm_colour(arms, r.arm), zorder=2)
    ref = next((r.ratio_raw for r in rows if r.reference), 4.0)
    ax.axvline(ref, color="k", lw=0.8, ls=":", label=f"ratio {ref:.3g} (the reference)")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xscale("log", base=2)
    ticks = sorted(set(xs) | {ref})
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:.3g}" for t in ticks])
    ax.minorticks_off()
    legend(ax, fontsize=FONT - 1)
    return _png(fig)


def frontier(arms: Sequence[ArmStats]) -> bytes:
    fig, ax = _figure("Loss vs training compute (mean over seeds)", "training FLOPs", "val loss (nats)")
    for a in arms:
        if a.runs:
            xs, ys = _mean_curve(a, flops=True)
            ax.plot(xs, ys, label=a.name, ls="--" if a.gated else "-", color=colour(a.gated, a.ratio_raw))
    if not any(a.runs for a in arms):
        _no_run(ax)
    ax.set_xscale("log")
    legend(ax, fontsize=FONT - 1, ncol=2)
    return _png(fig)


def _parabola_band(x: Any, y: Any, grid: Any) -> tuple[Any, Any, Any]:
    """Fitted parabola on ``grid`` and its pointwise 95% band (OLS covariance, t on n - 3 df)."""
    import numpy as np
    from scipy import stats

    design = np.column_stack([np.ones(x.size), x, x * x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    cov = float(resid @ resid) / (x.size - 3) * np.linalg.inv(design.T @ design)
    g = np.column_stack([np.ones(grid.size), grid, grid * grid])
    fit = g @ coef
    half = float(stats.t.ppf(0.975, x.size - 3)) * np.sqrt(np.einsum("ij,jk,ik->i", g, cov, g))
    return fit, fit - half, fit + half


def scale_trend(cells: Sequence[CellResult], arms: Sequence[ArmStats], reference: str) -> bytes:
    """Top: each cell's mean loss relative to its ratio-4 arm with 95% t intervals, and the fitted
    parabola with its 95% band; bottom: each cell's best ratio with Fieller's interval (hollow and
    at the edge when there is no bounded minimum inside the tested ratios)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ffnlab.experiments.analysis.stats import mean_ci
    from ffnlab.experiments.analysis.trend import cell_points

    plt.rcParams.update({"font.size": FONT + 1})
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(WIDE, 9.0), gridspec_kw={"height_ratios": [3, 2]})
    cmap = matplotlib.colormaps["viridis"]
    tested: list[float] = []
    for i, t in enumerate(cells):
        col = cmap(0.1 + 0.8 * i / max(1, len(cells) - 1))
        cell_arms = [a for a in arms if a.name.split(".")[0] == t.scale]
        ref = next(a for a in cell_arms if a.name == f"{t.scale}.{reference}")
        base = ref.mean_loss
        same = sorted((a for a in cell_arms if a.kind == ref.kind and a.runs), key=lambda a: a.ratio_raw)
        tested += [a.ratio_raw for a in same]
        label = f"{t.scale}: {t.params_non_embedding / 1e6:.2g}M params, {(t.tokens or 0) / 1e6:.2g}M tokens"
        for a in same:
            m, lo, hi = mean_ci(a.losses)
            err = [[100 * (m - lo) / base], [100 * (hi - m) / base]] if not math.isnan(lo) else None
            ax.errorbar([a.ratio_raw], [100 * (m / base - 1)], yerr=err, marker="o", capsize=3, color=col, ls="none",
                        label=label if a is same[0] else None)
        x, y = cell_points(cell_arms, ref.kind)
        if np.unique(x).size >= 3 and x.size > 3:
            grid = np.linspace(x.min(), x.max(), 60)
            fit, lo_b, hi_b = _parabola_band(x, y, grid)
            ax.plot(2 ** grid, 100 * (fit / base - 1), color=col, lw=1.2)
            ax.fill_between(2 ** grid, 100 * (lo_b / base - 1), 100 * (hi_b / base - 1), color=col, alpha=0.15)
    ax.set_xscale("log", base=2)
    ticks = sorted(set(tested) | {4.0})
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{v:g}" for v in ticks])
    ax.minorticks_off()
    ax.axvline(4, color="k", lw=0.8, ls=":")
    ax.axhline(0, color="k", lw=0.6)
    ax.set(xlabel="raw ratio d_ff / d_model", ylabel="loss relative to the cell's ratio-4 arm (%)",
           title="Loss vs ratio per cell: means with 95% intervals, fitted parabola with 95% band")
    legend(ax, fontsize=FONT)
    ax.grid(alpha=0.3)
    low, high = (min(tested) / 2, max(tested) * 2) if tested else (0.5, 16.0)
    for i, t in enumerate(cells):
        col = cmap(0.1 + 0.8 * i / max(1, len(cells) - 1))
        if math.isnan(t.best_ratio):
            bx.annotate("no minimum", (i, 4), ha="center", fontsize=FONT)
            continue
        bounded = t.shape == "bounded"
        est = min(max(t.best_ratio, low), high)
        lo = min(max(t.lo, low), high) if bounded else low
        hi = min(max(t.hi, low), high) if bounded else high
        bx.errorbar([i], [est], yerr=[[est - lo], [hi - est]], marker="s", ms=8, capsize=4, color=col,
                    mfc=col if t.inside_tested else "white", clip_on=False)
        note = f"{t.best_ratio:.2f}" + ("" if bounded else " (interval unbounded)")
        bx.annotate(note, (i, est), xytext=(8, 0), textcoords="offset points", va="center", fontsize=FONT)
    bx.axhline(4, color="k", lw=0.8, ls=":", label="ratio 4")
    bx.set_yscale("log", base=2)
    bx.set_ylim(low, high)
    bx.set_xticks(range(len(cells)))
    bx.set_xticklabels([f"{t.scale}\n{t.params_non_embedding / 1e6:.2g}M params\n"
                        f"{(t.tokens or 0) / t.params_non_embedding:.2g} tokens/param" for t in cells])
    bx.set(ylabel="best raw ratio (Fieller 95%)", title="Best ratio per cell (hollow: no bounded minimum inside the "
                                                       "tested ratios; the axis keeps to half/double the tested range)")
    legend(bx, fontsize=FONT)
    bx.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)
