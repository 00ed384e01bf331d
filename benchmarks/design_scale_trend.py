"""How `scale-trend` was designed: the power of its trend claims at a seed count, by simulation.

Reads the pilot (its kept runs are in ``docs/results/pilots/pilot-scale-warm``): each cell's
curvature and residual spread of the loss against log2(ratio). Then simulates the planned cells
(three sizes at one training length, or four lengths at one size) whose best log2 ratio moves by
``--slope`` per doubling, each with the planned ratios and seeds, runs the report's own trend
analysis (:func:`ffnlab.experiments.analysis.trend.slope`) on each simulated sweep, and prints how often
the interval excludes 0 (the claim "the best ratio does not change" is decided false) and how
often it is unbounded.

    python benchmarks/design_scale_trend.py docs/results/pilots/pilot-scale-warm --seeds 3 --slope 0.35
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from ffnlab.experiments.analysis import trend as tr
from ffnlab.experiments.sweep.runs import load


def pilot_shape(folder: Path) -> tuple[float, float]:
    """The pilot's median curvature and the largest residual sd over its cells (log2-ratio units)."""
    _, arms = load(folder)
    cells = sorted({a.name.split(".")[0] for a in arms})
    curv, sds = [], []
    for c in cells:
        x, y = tr.cell_points([a for a in arms if a.name.startswith(c + ".")], "gelu")
        coef = np.polyfit(x, y, 2)
        r = y - np.polyval(coef, x)
        curv.append(coef[0])
        sds.append(math.sqrt(float(r @ r) / (x.size - 3)))
        print(f"pilot {c}: curvature {coef[0]:.4f}, residual sd {sds[-1]:.4f}, fitted best ratio "
              f"{2 ** (-coef[1] / (2 * coef[0])) if coef[0] > 0 else float('nan'):.2f}")
    return float(np.median(curv)), max(sds)


def power(cells: int, step: int, seeds: int, ratios: list[float], slope: float, curvature: float, sd: float,
          sims: int, seed: int = 0) -> tuple[float, float]:
    """Share of simulated sweeps whose slope interval excludes 0, and share with an unbounded one:
    ``cells`` cells ``step`` doublings apart, the best log2 ratio centred on the tested range."""
    rng = np.random.default_rng(seed)
    x = np.repeat(np.log2(ratios), seeds)
    centre = float(np.mean(np.log2(ratios)))
    decided = unbounded = 0
    for _ in range(sims):
        pts = []
        for i in range(cells):
            best = centre + slope * step * (i - (cells - 1) / 2)
            y = 2.0 + curvature * (x - best) ** 2 + rng.normal(0, sd, x.size)
            pts.append((2.0 ** (step * i), x, y))
        s = tr.slope(pts, n_boot=400, seed=int(rng.integers(1 << 30)))
        unbounded += not s.bounded
        decided += s.lo > 0 or s.hi < 0
    return decided / sims, unbounded / sims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pilot", type=Path)
    ap.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--slope", type=float, default=0.35, help="true change in log2(best ratio) per doubling")
    ap.add_argument("--ratios", type=float, nargs="+", default=[0.5, 1, 2, 4, 8])
    ap.add_argument("--sims", type=int, default=200)
    args = ap.parse_args()
    curvature, sd = pilot_shape(args.pilot)
    print(f"planning with curvature {curvature:.4f} and residual sd {sd:.4f} (the pilot's largest)")
    for cells, step, what in ((3, 2, "3 sizes 4x apart"), (4, 1, "4 lengths 2x apart")):
        for n in args.seeds:
            p, u = power(cells, step, n, args.ratios, args.slope, curvature, sd, args.sims)
            print(f"{what}: {n} seeds x {len(args.ratios)} ratios per cell, true slope {args.slope}/doubling: "
                  f"interval excludes 0 in {p:.0%} of sweeps, unbounded in {u:.0%}")


if __name__ == "__main__":
    main()
