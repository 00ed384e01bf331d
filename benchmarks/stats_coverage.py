"""The statistics' properties at scale: coverage of every interval the reports decide with, power
against simulation, and seed advice, on sweeps simulated with a known truth.

The same checks run in ``make test`` with a few hundred simulated sweeps per case
(``tests/experiments/test_stats_simulation.py``, ``tests/experiments/test_power.py``); this script runs thousands and
prints (and with ``--out`` keeps) the figures:

    python benchmarks/stats_coverage.py [--sims 4000] [--out benchmarks/results/stats-coverage.json]

Cases are the presets' seed counts (3: scale-trend and capacity; 10: golden-quick; 8 and 31:
gated-law) with equal variances, one arm with 1.5-4x the spread, and heavy-tailed (outlier) runs.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from ffnlab.experiments.analysis import power as pw
from ffnlab.experiments.analysis import trend as tr
from ffnlab.experiments.analysis import verdicts as vd
from ffnlab.experiments.analysis.stats import quadratic_minimum, ratio_of_means

CASES = [  # name, true means, true sds, seeds per arm, noise df (None: normal)
    ("3 seeds, 3 alternatives, equal", {"ref": 0, "a": 0, "b": 0.01, "c": -0.02}, {"ref": 1, "a": 1, "b": 1, "c": 1},
     3, None),
    ("3 seeds, one arm 4x", {"ref": 0, "a": 0, "b": 0.01, "c": -0.02}, {"ref": 1, "a": 1, "b": 4, "c": 1}, 3, None),
    ("3 seeds, reference 3x", {"ref": 0, "a": 0, "b": 0.01, "c": -0.02}, {"ref": 3, "a": 1, "b": 1, "c": 1}, 3, None),
    ("10 seeds, equal", {"ref": 0, "a": 0.3, "b": -0.2}, {"ref": 1, "a": 1, "b": 1}, 10, None),
    ("10 seeds, one arm 1.5x", {"ref": 0, "a": 0.3, "b": -0.2}, {"ref": 1, "a": 1, "b": 1.5}, 10, None),
    ("10 seeds, one arm 2x", {"ref": 0, "a": 0.3, "b": -0.2}, {"ref": 1, "a": 1, "b": 2}, 10, None),
    ("10 seeds, one arm 3x", {"ref": 0, "a": 0.3, "b": -0.2}, {"ref": 1, "a": 1, "b": 3}, 10, None),
    ("10 seeds, reference 3x", {"ref": 0, "a": 0.3, "b": -0.2}, {"ref": 3, "a": 1, "b": 1}, 10, None),
    ("10 seeds, t3 noise (outliers)", {"ref": 0, "a": 0.5, "b": 0}, {"ref": 1, "a": 1, "b": 1}, 10, 3),
    ("8 seeds, first gated-law form's spreads", {"ref": 2.087, "a": 2.104, "b": 2.070},
     {"ref": 0.008, "a": 0.065, "b": 0.023}, 8, None),
    ("32 seeds, gated-law as run", {"ref": 2.0712, "a": 1.9804, "b": 2.0018},
     {"ref": 0.0053, "a": 0.0089, "b": 0.0076}, 32, None),
    ("31 seeds, equal", {"ref": 0, "a": 0.1, "b": 0}, {"ref": 1, "a": 1, "b": 1}, 31, None),
    ("31 seeds, one arm 1.7x", {"ref": 0, "a": 0.1, "b": 0}, {"ref": 1, "a": 1.7, "b": 1}, 31, None),
]


def draw(rng, means, sds, n, tails):
    out = {}
    for k, m in means.items():
        noise = rng.standard_t(tails, n) * math.sqrt((tails - 2) / tails) if tails else rng.normal(0, 1, n)
        out[k] = list(m + sds[k] * noise)
    return out


def coverage(sims: int, seed: int = 0) -> list[dict]:
    rows = []
    for name, means, sds, n, tails in CASES:
        rng = np.random.default_rng(seed)
        alts = [k for k in means if k != "ref"]
        covered = pooled = 0
        for _ in range(sims):
            fam = vd.decide_family("x", draw(rng, means, sds, n, tails), "ref", alts, 0.01, sensitivity=False)
            pooled += fam.choice.pooled
            covered += all(d.comparison.lo <= means[k] - means["ref"] <= d.comparison.hi
                           for k, d in fam.decisions.items())
        rows.append({"case": name, "seeds": n, "coverage": covered / sims, "pooled_share": pooled / sims})
        print(f"coverage  {name:36s} {covered / sims:.3f}  (pooled in {pooled / sims:.0%})", flush=True)
    return rows


def power_checks(sims: int, seed: int = 1) -> list[dict]:
    """The deciding test's reported power against the engine's simulated rejection rate."""
    rows = []
    rng = np.random.default_rng(seed)
    for n, sd_a, sd_b, effect in ((3, 0.02, 0.02, 0.06), (5, 0.02, 0.05, 0.07), (8, 0.065, 0.023, 0.06),
                                  (12, 0.01, 0.01, 0.011), (31, 0.0099, 0.0099, 0.006)):
        hits = pooled = 0
        for _ in range(sims):
            g = draw(rng, {"a": effect, "b": 0.0, "c": 0.0}, {"a": sd_a, "b": sd_b, "c": sd_b}, n, None)
            d, choice = vd.decide_pair("x", g, "a", "b", 1e-6)
            hits += d.comparison.decided
            pooled += choice.pooled
        method = "pooled-t" if pooled > sims / 2 else "welch"
        predicted = pw.power(pw.TestDesign(method, sd_a, sd_b, arms=3), n, effect)
        rows.append({"seeds": n, "sds": [sd_a, sd_b], "effect": effect, "test": method,
                     "predicted": predicted, "simulated": hits / sims})
        print(f"power     n={n:2d} sd=({sd_a}, {sd_b}) effect {effect}: {method:8s} predicted {predicted:.3f}, "
              f"simulated {hits / sims:.3f}", flush=True)
    return rows


def advice_checks(sims: int, seed: int = 2) -> list[dict]:
    """Seed advice reaches 80% simulated power; one seed fewer does not."""
    rows = []
    rng = np.random.default_rng(seed)
    for sd_a, sd_b, effect in ((0.04, 0.015, 0.03), (0.0101, 0.0101, 0.0136), (0.0649, 0.0234, 0.0335)):
        design = pw.TestDesign("welch", sd_a, sd_b)
        n = pw.seeds_for(design, effect)
        assert n is not None  # every effect and spread above is nonzero and within MAX_SEEDS
        rates = []
        for m in (n, n - 1):
            hits = 0
            for _ in range(sims):
                a, b = rng.normal(effect, sd_a, m), rng.normal(0, sd_b, m)
                va, vb = a.var(ddof=1) / m, b.var(ddof=1) / m
                df = (va + vb) ** 2 / (va**2 / (m - 1) + vb**2 / (m - 1))
                from scipy import stats

                hits += abs(a.mean() - b.mean()) / math.sqrt(va + vb) > stats.t.ppf(0.975, df)
            rates.append(hits / sims)
        rows.append({"sds": [sd_a, sd_b], "effect": effect, "advice": n, "power_at_advice": rates[0],
                     "power_one_fewer": rates[1]})
        print(f"advice    sd=({sd_a}, {sd_b}) effect {effect}: {n} seeds -> {rates[0]:.3f}; {n - 1} -> {rates[1]:.3f}",
              flush=True)
    return rows


def interval_checks(sims: int, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    x = np.repeat([0.0, 1.0, 2.0, 3.0], 3)
    out = {}
    for curvature in (0.02, 0.006):
        hit = bounded = 0
        for _ in range(sims):
            y = 2.2 + curvature * (x - 1.3) ** 2 + rng.normal(0, 0.01, x.size)
            q = quadratic_minimum(x, y)
            bounded += q.shape == "bounded"
            hit += q.contains(1.3)
        out[f"best ratio (curvature {curvature})"] = {"coverage": hit / sims, "bounded_share": bounded / sims}
        print(f"interval  best ratio, curvature {curvature}: coverage {hit / sims:.3f}, bounded {bounded / sims:.0%}",
              flush=True)
    for n in (3, 10):
        hit = sum(lo <= 2.25 / 2.2 <= hi for lo, hi in
                  (ratio_of_means(rng.normal(2.25, 0.02, n), rng.normal(2.2, 0.01, n))[1:] for _ in range(sims)))
        out[f"loss ratio ({n} seeds)"] = {"coverage": hit / sims}
        print(f"interval  loss ratio, {n} seeds: coverage {hit / sims:.3f}", flush=True)
    return out


def slope_check(sims: int, seed: int = 4) -> dict:
    """The trend slope's bootstrap interval: three cells whose best log2 ratio rises 0.25 per
    doubling (true slope 0.25), 4 seeds per ratio."""
    rng = np.random.default_rng(seed)
    x = np.repeat([0.0, 1.0, 2.0, 3.0], 4)
    hit = unbounded = 0
    for _ in range(sims):
        cells = []
        for i, axis in enumerate((1e5, 4e5, 1.6e6)):
            best = 1.0 + 0.5 * i  # +0.5 per 4x = +0.25 per doubling
            cells.append((axis, x, 2.0 + 0.03 * (x - best) ** 2 + rng.normal(0, 0.006, x.size)))
        s = tr.slope(cells, n_boot=500, seed=int(rng.integers(1 << 30)))
        unbounded += not s.bounded
        hit += s.lo <= 0.25 <= s.hi
    print(f"interval  trend slope: coverage {hit / sims:.3f}, unbounded {unbounded / sims:.0%}", flush=True)
    return {"coverage": hit / sims, "unbounded_share": unbounded / sims}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=4000, help="simulated sweeps per case")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    t0 = time.perf_counter()
    result = {"sims": args.sims, "coverage": coverage(args.sims), "power": power_checks(args.sims),
              "advice": advice_checks(args.sims), "intervals": interval_checks(args.sims),
              "slope": slope_check(max(100, args.sims // 20))}
    result["wall_s"] = time.perf_counter() - t0
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
