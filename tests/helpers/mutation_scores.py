"""Per-module mutation scores from a ``mutmut run`` (``make mutate``): what mutmut recorded in
``mutants/<path>.meta`` for each module, as killed / checked.

    python tests/helpers/mutation_scores.py ffnlab.sizing.counting ffnlab.sizing.widths [--min 90]
    # a seeded random sample of its mutants
    python tests/helpers/mutation_scores.py --names 150 ffnlab.sizing.memory.activations
    # the score of that sample only
    python tests/helpers/mutation_scores.py --sample 150 ffnlab.sizing.memory.activations
    # and its survivors (mutmut show NAME)
    python tests/helpers/mutation_scores.py --sample 150 --survivors ffnlab.sizing.memory.activations

A mutant counts as killed when a test failed on it (or it ran out of time); "no tests" (no
selected test runs the mutated function) and "survived" count against the score; mutants not
checked yet are left out and reported. ``--sample N`` scores the same seeded sample that
``--names N`` lists (uniform over the module's mutants, so the share killed estimates the whole
module's score; its 95% Clopper-Pearson interval is printed). ``--min`` exits 1 when a module's
score is below it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

KILLED = {"killed", "timeout", "caught by type check"}
UNCHECKED = {"not checked", "skipped", "check was interrupted by user"}


def exit_codes(module: str, root: Path = Path("mutants")) -> dict[str, int | None]:
    meta = root / "src" / (module.replace(".", "/") + ".py.meta")
    if not meta.exists():
        raise SystemExit(f"error: no mutation results for {module} ({meta} is missing); run `make mutate` first")
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    return codes


def sample_names(module: str, n: int, seed: int = 0, root: Path = Path("mutants")) -> list[str]:
    """``n`` of the module's mutant names, drawn uniformly with a fixed seed (all of them if fewer)."""
    names = sorted(exit_codes(module, root))
    return sorted(random.Random(f"{module}:{seed}").sample(names, min(n, len(names))))


def statuses(module: str, root: Path = Path("mutants"), only: list[str] | None = None) -> Counter[str]:
    from mutmut.stats import status_by_exit_code

    codes = exit_codes(module, root)
    return Counter(status_by_exit_code[codes[k]] for k in (only if only is not None else codes))


def score(counts: Counter[str]) -> tuple[float, int]:
    """(share killed, mutants checked)."""
    checked = sum(n for s, n in counts.items() if s not in UNCHECKED)
    killed = sum(counts[s] for s in KILLED)
    return (killed / checked if checked else float("nan")), checked


def interval(killed: int, checked: int) -> str:
    """The 95% Clopper-Pearson interval of a sample's share killed."""
    from scipy.stats import binomtest

    if not checked:
        return ""
    ci = binomtest(killed, checked).proportion_ci(0.95)
    return f"[{ci.low:.1%}, {ci.high:.1%}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="+")
    ap.add_argument("--min", type=float, default=None, help="exit 1 if a module scores below this (percent)")
    ap.add_argument("--names", type=int, default=None, help="print a sample of N mutant names per module and stop")
    ap.add_argument("--sample", type=int, default=None, help="score only the sample that --names N lists")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed")
    ap.add_argument("--survivors", action="store_true", help="list the mutants that survived (in the sample)")
    a = ap.parse_args()
    if a.names is not None:
        print(" ".join(name for m in a.modules for name in sample_names(m, a.names, a.seed)))
        return 0
    low = []
    print(f"{'module':<28} {'score':>7} {'killed':>7} {'survived':>9} {'no tests':>9} {'other':>6} {'unchecked':>10}"
          + ("  95% interval (sample)" if a.sample else ""))
    for m in a.modules:
        c = statuses(m, only=sample_names(m, a.sample, a.seed) if a.sample else None)
        share, checked = score(c)
        killed = sum(c[s] for s in KILLED)
        other = checked - killed - c["survived"] - c["no tests"]
        unchecked = sum(c[s] for s in UNCHECKED)
        print(f"{m:<28} {share:>7.1%} {killed:>7} {c['survived']:>9} {c['no tests']:>9} {other:>6} {unchecked:>10}"
              + (f"  {interval(killed, checked)}" if a.sample else ""))
        if a.survivors:
            from mutmut.stats import status_by_exit_code

            codes = exit_codes(m)
            for name in (sample_names(m, a.sample, a.seed) if a.sample else sorted(codes)):
                if status_by_exit_code[codes[name]] in ("survived", "no tests"):
                    print(f"  {name}: {status_by_exit_code[codes[name]]}")
        if a.min is not None and not share * 100 >= a.min:
            low.append(m)
    if low:
        print(f"below {a.min:g}%: {', '.join(low)}", file=sys.stderr)
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
