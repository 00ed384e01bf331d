"""How `size-fixed-steps` was designed: the size trend's error rates at its seed count, by simulation.

Reads a kept sweep (default ``docs/results/golden-mature``, cell ``t20``: the middle size of the
design, trained to 20 tokens per parameter) for each cell's curvature and residual spread of the
final loss against log2(ratio). Then simulates the planned design: three sizes 4x apart in
parameters, the planned ratios and seeds per cell, the best log2 ratio moving by ``--slope`` per
doubling of parameters. Each simulated sweep goes through the report's own trend analysis
(:func:`ffnlab.experiments.analysis.trend.weighted_trend` and :func:`~ffnlab.experiments.analysis.trend.trend_verdict`)
and the script prints, per true slope: how often the claim "the best ratio does not change with
size" is decided false, true and inconclusive, how often the weighted slope's interval covers
the true slope, and how often a cell has no significant minimum.

    python benchmarks/design_size_fixed_steps.py --seeds 2 3 4 --slopes 0 0.25 0.5
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from ffnlab.experiments.analysis import trend as tr
from ffnlab.experiments.sweep.runs import load


def cell_shape(folder: Path, cell: str) -> tuple[float, float, float]:
    """One kept cell's parabola: curvature, residual sd and vertex (log2-ratio units)."""
    _, arms = load(folder)
    x, y = tr.cell_points([a for a in arms if a.name.startswith(cell + ".")], "gelu")
    coef = np.polyfit(x, y, 2)
    r = y - np.polyval(coef, x)
    return float(coef[0]), math.sqrt(float(r @ r) / (x.size - 3)), float(-coef[1] / (2 * coef[0]))


def simulate(seeds: int, ratios: list[float], slope: float, curvature: float, sd: float, centre: float,
             sims: int, seed: int = 0) -> dict[str, float]:
    """Shares of simulated sweeps by verdict, interval coverage and cells without a minimum."""
    rng = np.random.default_rng(seed)
    x = np.repeat(np.log2(ratios), seeds)
    counts = {"false": 0, "true": 0, "inconclusive": 0, "covered": 0, "no_minimum": 0}
    for _ in range(sims):
        cells = []
        for i in range(3):  # sizes 4x apart: two doublings per step, centred on the middle size
            best = centre + slope * 2 * (i - 1)
            y = 2.0 + curvature * (x - best) ** 2 + rng.normal(0, sd, x.size)
            cells.append((4.0 ** i, x, y))
        t = tr.weighted_trend(cells)
        counts[tr.trend_verdict(t)] += 1
        counts["covered"] += bool(math.isfinite(t.lo) and t.lo <= slope <= t.hi)
        counts["no_minimum"] += sum(not math.isfinite(v) for _, v, _ in t.vertices) > 0
    return {k: v / sims for k, v in counts.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kept", type=Path, default=Path("docs/results/golden-mature"))
    ap.add_argument("--cell", default="t20")
    ap.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--slopes", type=float, nargs="+", default=[0.0, 0.25, 0.5])
    ap.add_argument("--ratios", type=float, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--sims", type=int, default=2000)
    args = ap.parse_args()
    curvature, sd, centre = cell_shape(args.kept, args.cell)
    print(f"kept cell {args.cell}: curvature {curvature:.4f}, residual sd {sd:.4f}, best log2 ratio {centre:.2f}")
    for n in args.seeds:
        for s in args.slopes:
            r = simulate(n, args.ratios, s, curvature, sd, centre, args.sims)
            print(f"{n} seeds x {len(args.ratios)} ratios, true slope {s:+.2f}/doubling: false {r['false']:.0%}, "
                  f"true {r['true']:.0%}, inconclusive {r['inconclusive']:.0%}; interval covers the slope in "
                  f"{r['covered']:.0%}; a cell without a minimum in {r['no_minimum']:.0%}")


if __name__ == "__main__":
    main()
