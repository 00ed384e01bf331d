"""Is a sweep trained far enough for its verdicts to mean anything about trained models?

:func:`warnings_for` returns the notes a report prints beside its verdicts when the runs are far
from trained: very few tokens per parameter, a loss still falling steeply when training stopped,
very few steps, or very few seeds. The verdicts are still computed (they are correct about these
runs); the note says what they are about.
"""

from __future__ import annotations

from typing import Any

MIN_TOKENS_PER_PARAM = 1.0  # fewer training tokens than parameters
STILL_FALLING = 0.25  # share of the run's whole loss drop that came in its last quarter
MIN_STEPS = 100
MIN_SEEDS = 3


def late_drop(tokens: list[float], losses: list[float]) -> float | None:
    """Share of the drop from the first to the last evaluation that happened in the last quarter
    of training (None with fewer than three evaluations or no drop)."""
    if len(losses) < 3 or losses[0] <= losses[-1]:
        return None
    cut = tokens[-1] * 0.75
    i = max(j for j, t in enumerate(tokens) if t <= cut) if any(t <= cut for t in tokens) else 0
    return (losses[i] - losses[-1]) / (losses[0] - losses[-1])


def warnings_for(result: dict[str, Any]) -> list[str]:
    """The notes for one analysed sweep (see the module docstring)."""
    out = []
    sc = result.get("scale") or {}
    tpp = sc.get("tokens_per_param")
    if isinstance(tpp, (int, float)) and tpp < MIN_TOKENS_PER_PARAM:
        out.append(f"the runs saw {tpp:.2f} training tokens per non-embedding parameter, fewer than one: these "
                   "models are far from trained, and the verdicts describe early training, not trained models")
    ref = next((a for a in result.get("arm_objects", []) if a.name == result.get("reference")), None)
    if ref is not None and ref.runs:
        drops = [d for r in ref.runs if (d := late_drop(r.tokens, r.losses)) is not None]
        share = sum(drops) / len(drops) if drops else None
        if share is not None and share > STILL_FALLING:
            out.append(f"the reference's loss was still falling steeply when training stopped ({share:.0%} of its "
                       "drop came in the last quarter of training): longer runs could change the ranking")
        steps = ref.runs[0].summary.get("steps")
        if isinstance(steps, int) and steps < MIN_STEPS:
            out.append(f"each run trained only {steps} steps: a toy run, useful to test the pipeline, not to decide "
                       "a claim")
    seeds = [a.get("n_seeds", 0) for a in result.get("arms", [])]
    if seeds and min(seeds) < MIN_SEEDS:
        out.append(f"an arm has only {min(seeds)} seed(s): intervals are very wide or missing, and no variance "
                   "check is possible")
    return out
