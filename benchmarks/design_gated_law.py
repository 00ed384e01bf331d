"""How `gated-law` was designed: seed counts by exact power from the pilots' measured spreads.

Reads pilot sweep folders (their kept runs are in ``docs/results/pilots/``), prints each arm's
final-loss spread, the observed differences of the two planned pairs, and for each pilot recipe
the seeds per arm that detect the observed gated-law difference, or show equivalence within the
margin if there is none, with 80% power: at the measured spreads and at their 80% upper
confidence limit (the pilots have 4 seeds), under Welch's t and under the pooled t the rule
would use at 10+ seeds. With the measured seconds per run it prints the CPU time of each design.

    python benchmarks/design_gated_law.py docs/results/pilots/pilot-gated-base \\
        docs/results/pilots/pilot-gated-warm docs/results/pilots/pilot-gated-long
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from ffnlab.experiments.analysis import power as pw
from ffnlab.experiments.sweep.runs import load

MARGIN = 0.005  # the spec's equivalence margin, a fraction of the 8/3 arm's loss
PAIRS = {"gated_law": ("swiglu-r4", "swiglu-pm4"), "glu_vs_plain": ("swiglu-pm4", "gelu-r4")}


def ucl_factor(n: int, level: float = 0.8) -> float:
    """The one-sided ``level`` upper confidence limit of a standard deviation from ``n`` values,
    as a multiple of the estimate."""
    from scipy import stats

    return math.sqrt((n - 1) / stats.chi2.ppf(1 - level, n - 1))


def design(folder: Path) -> None:
    _, arms = load(folder)
    by = {a.name: a for a in arms}
    n = min(len(a.runs) for a in arms)
    wall = statistics.mean(r.summary["wall_s"] for a in arms for r in a.runs)
    print(f"\n{folder.name}: {n} seeds per arm, {arms[0].runs[0].summary['tokens']:,} tokens per run, "
          f"{wall:.0f} s per run as measured (while the machine was shared)")
    sd = {k: statistics.stdev(a.losses) for k, a in by.items()}
    for k, a in by.items():
        print(f"  {k:11s} mean {statistics.mean(a.losses):.4f}  sd {sd[k]:.4f}")
    diffs = {key: statistics.mean(by[f].losses) - statistics.mean(by[s].losses) for key, (f, s) in PAIRS.items()}
    for key, d in diffs.items():
        print(f"  {key}: {PAIRS[key][0]} - {PAIRS[key][1]} = {d:+.4f}")
    margin = MARGIN * statistics.mean(by["swiglu-pm4"].losses)
    factor = ucl_factor(n)
    for label, f in (("measured spreads", 1.0), (f"80% upper limit (x{factor:.2f})", factor)):
        s = {k: v * f for k, v in sd.items()}
        pooled = math.sqrt(sum(v * v for v in s.values()) / len(s))
        first, second = PAIRS["gated_law"]
        welch = pw.TestDesign("welch", s[first], s[second])
        pooled_t = pw.TestDesign("pooled-t", pooled, pooled, arms=len(s))
        d = abs(diffs["gated_law"])
        print(f"  {label}: gated_law detect {d:.4f}: Welch {pw.seeds_for(welch, d)}, pooled t "
              f"{pw.seeds_for(pooled_t, d)} seeds; equivalence within {margin:.4f}: Welch "
              f"{pw.seeds_for_equivalence(welch, margin)}, pooled t {pw.seeds_for_equivalence(pooled_t, margin)}; "
              f"glu_vs_plain detect {abs(diffs['glu_vs_plain']):.4f}: Welch "
              f"{pw.seeds_for(pw.TestDesign('welch', s['swiglu-pm4'], s['gelu-r4']), diffs['glu_vs_plain'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="pilot sweep folders (or their kept reports)")
    for folder in ap.parse_args().folders:
        design(folder)


if __name__ == "__main__":
    main()
