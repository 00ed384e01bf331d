"""The words a verdict on a claim can be, their order, and how verdicts on parts combine.

A claim checked now (:mod:`ffnlab.sizing.claims`), a hypothesis a sweep decides
(:mod:`ffnlab.experiments.analysis`) and a capacity claim judged at several budgets
(:mod:`ffnlab.experiments.capacity`) all end in one of the six words of :data:`Verdict`. The
order of :data:`VERDICTS` is the one order they are listed and counted in (``ffnlab claims``
prints ``33 claims: 11 true, 6 false, ...`` in it); :func:`combine` is the rule that joins the
verdicts of a claim's parts (e.g. one per budget) into the claim's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

# true / false: decided, with an interval; misleading: true numbers, wrong reading; inconclusive:
# the data at hand cannot decide at this power (the evidence says what would); needs-experiment:
# no measurement yet; unverifiable: no data can exist (e.g. an unpublished architecture).
Verdict = Literal["true", "false", "misleading", "inconclusive", "needs-experiment", "unverifiable"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

# Which verdict of a part decides the whole, first match wins: one refuted part refutes the claim;
# an unmeasured part leaves it unmeasured; then undecided, then true-but-misleading; true only if
# every part is true.
_DECIDES_FIRST: tuple[Verdict, ...] = ("false", "needs-experiment", "inconclusive", "misleading", "true")


def combine(parts: Iterable[str]) -> Verdict:
    """The verdict of a claim from the verdicts of its parts (needs-experiment when there are none)."""
    seen = set(parts)
    return next((v for v in _DECIDES_FIRST if v in seen), "needs-experiment")


def count_line(verdicts: Iterable[str], noun: str) -> str:
    """``N <noun>: a true, b false, ...``: each verdict counted, in :data:`VERDICTS` order, any
    other word after them in alphabetical order."""
    counts: dict[str, int] = {}
    total = 0
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
        total += 1
    order = [v for v in VERDICTS if v in counts] + sorted(set(counts) - set(VERDICTS))
    return f"{total} {noun}: " + ", ".join(f"{counts[v]} {v}" for v in order)

