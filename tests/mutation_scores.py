"""Per-module mutation scores from a ``mutmut run`` (``make mutate``): what mutmut recorded in
``mutants/<path>.meta`` for each module, as killed / checked.

    python tests/mutation_scores.py ffnlab.sizing.counting ffnlab.sizing.widths [--min 90]

A mutant counts as killed when a test failed on it (or it ran out of time); "no tests" (no
selected test runs the mutated function) and "survived" count against the score; mutants not
checked yet are left out and reported. ``--min`` exits 1 when a module scores below it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {"killed", "timeout", "caught by type check"}
UNCHECKED = {"not checked", "skipped", "check was interrupted by user"}


def statuses(module: str, root: Path = Path("mutants")) -> Counter[str]:
    from mutmut.stats import status_by_exit_code

    meta = root / "src" / (module.replace(".", "/") + ".py.meta")
    if not meta.exists():
        raise SystemExit(f"error: no mutation results for {module} ({meta} is missing); run `make mutate` first")
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    return Counter(status_by_exit_code[c] for c in codes.values())


def score(counts: Counter[str]) -> tuple[float, int]:
    """(share killed, mutants checked)."""
    checked = sum(n for s, n in counts.items() if s not in UNCHECKED)
    killed = sum(counts[s] for s in KILLED)
    return (killed / checked if checked else float("nan")), checked


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="+")
    ap.add_argument("--min", type=float, default=None, help="exit 1 if a module scores below this (percent)")
    a = ap.parse_args()
    low = []
    print(f"{'module':<28} {'score':>7} {'killed':>7} {'survived':>9} {'no tests':>9} {'other':>6} {'unchecked':>10}")
    for m in a.modules:
        c = statuses(m)
        share, checked = score(c)
        killed = sum(c[s] for s in KILLED)
        other = checked - killed - c["survived"] - c["no tests"]
        unchecked = sum(c[s] for s in UNCHECKED)
        print(f"{m:<28} {share:>7.1%} {killed:>7} {c['survived']:>9} {c['no tests']:>9} {other:>6} {unchecked:>10}")
        if a.min is not None and not share * 100 >= a.min:
            low.append(m)
    if low:
        print(f"below {a.min:g}%: {', '.join(low)}", file=sys.stderr)
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
