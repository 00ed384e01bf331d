"""Whether a sweep's runs are far from trained: one warning to print beside its verdicts.

A verdict from runs that stopped early describes early training, not trained models: a
40-step sweep can rank FFN ratios confidently and still say nothing about where they end up.
:func:`assess` reads each run's progress (:class:`RunProgress`) and names what is far from
trained; :func:`warning` turns that into one sentence, or ``None`` when nothing is. Both are pure.
:func:`sweep_progress` reads the progress of a sweep folder's runs (no torch).

The thresholds are deliberately loose (a run is flagged only when it is *far* from trained):

* fewer than :data:`TOKENS_PER_PARAM_FLOOR` training tokens per non-embedding parameter, a
  twentieth of the about 20 tokens per parameter Hoffmann et al. (2022, "Training
  Compute-Optimal Large Language Models", Chinchilla) found compute-optimal;
* a validation loss that still fell by more than :data:`STILL_FALLING` of its final value over
  the last :data:`LAST_PART` of the training tokens (a curve that has not levelled off);
* fewer than :data:`MIN_STEPS` optimizer steps per run;
* runs stopped before their planned steps.

Medians over the runs are compared with the thresholds, so one odd run does not decide.

**The maturity rule** (:func:`cell_maturity`, applied by ``experiments.analysis``): a verdict about
an *optimal* ratio (``ratio_optimal``, ``gated_law`` and the trends of the best ratio) is given
only where the runs reach the spec's ``maturity`` in tokens per non-embedding parameter (default
:data:`TOKENS_PER_PARAM_OPTIMAL`, Chinchilla's ~20); below it the claim is ``inconclusive``, with
"trained to X tokens/param; needs Y" in its evidence and the verdict the runs would give kept as
``verdict_if_mature``. Every verdict carries its cell's maturity: tokens per parameter and the
validation loss's fall over the last quarter of training.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ffnlab.errors import FfnlabError

TOKENS_PER_PARAM_OPTIMAL = 20.0  # Hoffmann et al. 2022 (Chinchilla)
TOKENS_PER_PARAM_FLOOR = 1.0  # below this a run saw under 1/20 of a compute-optimal budget
STILL_FALLING = 0.02  # relative fall of the validation loss over the last part of training
LAST_PART = 0.25  # the last quarter of the training tokens
MIN_STEPS = 100  # optimizer steps; fewer is a smoke test (warm-up alone is often 10-30)
OPTIMAL_RATIO_CLAIMS = ("ratio_optimal", "gated_law")  # claims about which width is best


@dataclass(frozen=True)
class RunProgress:
    """How far one run got: tokens and steps trained, its size and its validation curve."""

    tokens: int  # training tokens seen
    params: int  # non-embedding parameters
    steps: int  # optimizer steps done
    planned_steps: int  # steps its config asks for
    curve: tuple[tuple[int, float], ...] = ()  # (tokens, validation loss) of each evaluation, in order


def loss_at(curve: Sequence[tuple[int, float]], tokens: float) -> float | None:
    """The validation loss at ``tokens``, linearly interpolated between evaluations (None outside)."""
    for (t0, l0), (t1, l1) in zip(curve, curve[1:], strict=False):
        if t0 <= tokens <= t1:
            return l0 if t1 == t0 else l0 + (l1 - l0) * (tokens - t0) / (t1 - t0)
    return None


def late_fall(run: RunProgress, part: float = LAST_PART) -> float | None:
    """Relative fall of the validation loss over the last ``part`` of the run's curve, or None
    when the curve is too short to tell (fewer than two evaluations, or none early enough)."""
    if len(run.curve) < 2:
        return None
    end_tokens, end_loss = run.curve[-1]
    before = loss_at(run.curve, end_tokens * (1 - part))
    if before is None or end_loss <= 0:
        return None
    return (before - end_loss) / end_loss


def assess(runs: Sequence[RunProgress]) -> list[str]:
    """What about these runs is far from trained, one phrase per finding (empty: nothing)."""
    if not runs:
        return []
    found = []
    per_param = statistics.median(r.tokens / r.params for r in runs if r.params > 0) if any(
        r.params > 0 for r in runs) else None
    if per_param is not None and per_param < TOKENS_PER_PARAM_FLOOR:
        found.append(f"{per_param:.2g} training tokens per parameter (compute-optimal is about "
                     f"{TOKENS_PER_PARAM_OPTIMAL:.0f}, Hoffmann et al. 2022)")
    falls = [f for f in map(late_fall, runs) if f is not None]
    if falls and statistics.median(falls) > STILL_FALLING:
        found.append(f"the validation loss still fell {statistics.median(falls):.1%} over the last "
                     f"{LAST_PART:.0%} of training")
    steps = statistics.median(r.steps for r in runs)
    if steps < MIN_STEPS:
        found.append(f"{steps:g} optimizer steps per run")
    stopped = sum(r.steps < r.planned_steps for r in runs)
    if stopped:
        found.append(f"{stopped} of {len(runs)} runs stopped before their planned steps")
    return found


class MaturityJSON(TypedDict):
    """A :class:`CellMaturity` as the JSON shows it (:meth:`CellMaturity.as_dict`)."""

    tokens_per_param: float | None
    late_fall: float | None
    needs: float
    mature: bool
    text: str


@dataclass(frozen=True)
class CellMaturity:
    """How far one cell's runs were trained, against the maturity its spec asks for."""

    tokens_per_param: float | None  # median over the runs: training tokens / non-embedding parameters
    late_fall: float | None  # median relative fall of the validation loss over the last quarter
    needs: float  # the spec's maturity, tokens per parameter

    @property
    def mature(self) -> bool:
        return self.tokens_per_param is not None and self.tokens_per_param >= self.needs

    def trained_to(self) -> str:
        """Tokens per parameter as the text shows them ("unknown" when no run has a count)."""
        return "unknown" if self.tokens_per_param is None else f"{self.tokens_per_param:.3g}"

    def text(self) -> str:
        out = f"trained to {self.trained_to()} tokens/param (needs {self.needs:g})"
        if self.late_fall is not None:
            out += f"; validation loss fell {self.late_fall:.1%} over the last quarter"
        return out

    def as_dict(self) -> MaturityJSON:
        return {"tokens_per_param": self.tokens_per_param, "late_fall": self.late_fall, "needs": self.needs,
                "mature": self.mature, "text": self.text()}


def cell_maturity(runs: Sequence[RunProgress], needs: float = TOKENS_PER_PARAM_OPTIMAL) -> CellMaturity:
    """The maturity of one cell from its runs' progress (medians over the runs)."""
    per = [r.tokens / r.params for r in runs if r.params > 0]
    falls = [f for f in map(late_fall, runs) if f is not None]
    return CellMaturity(statistics.median(per) if per else None, statistics.median(falls) if falls else None,
                        float(needs))


def immature_reason(m: CellMaturity, verdict: str) -> str:
    """Why a decided verdict on an optimal ratio reads inconclusive at maturity ``m``: the words put
    first in its evidence."""
    return (f"trained to {m.trained_to()} tokens/param; needs {m.needs:g} (the spec's maturity) "
            f"before an optimal ratio is decided; at this maturity the runs say {verdict}: ")


def warning(runs: Sequence[RunProgress]) -> str | None:
    """One sentence to print beside the verdicts when the runs are far from trained, else None."""
    found = assess(runs)
    if not found:
        return None
    return ("runs far from trained: " + "; ".join(found)
            + ". The verdicts describe early training, not trained models; train longer to settle them.")


# ---------------------------------------------------------------- reading a sweep folder


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_progress(run_dir: Path, planned_steps: int) -> RunProgress | None:
    """A run folder's progress from its metrics.jsonl and model.json (None if unreadable)."""
    from ffnlab.training.runfiles import read_records, run_params

    model = _json(run_dir / "model.json") or _json(run_dir / "summary.json")  # a kept report has only the summary
    try:  # params checked as every reader of a run file checks them (both counts integers >= 1)
        params = run_params(model.get("params") if isinstance(model, dict) else None, str(run_dir)).non_embedding
    except FfnlabError:  # no counts: no tokens per parameter to judge (as an unreadable file)
        return None
    try:
        records = read_records(run_dir / "metrics.jsonl")
    except (OSError, UnicodeDecodeError):
        return None
    steps = [r["step"] for r in records if isinstance(r.get("step"), int)]
    tokens = [r["tokens"] for r in records if isinstance(r.get("tokens"), int)]
    curve = tuple((int(r["tokens"]), float(r["val_loss"])) for r in records
                  if r.get("kind") == "eval" and isinstance(r.get("tokens"), int)
                  and isinstance(r.get("val_loss"), (int, float)))
    if not steps or not tokens:
        return None
    return RunProgress(tokens=max(tokens), params=params, steps=max(steps), planned_steps=planned_steps,
                       curve=curve)


def sweep_progress(sweep_dir: str | Path) -> list[RunProgress]:
    """The progress of every readable run of a sweep folder (its ``sweep.json`` lists them)."""
    folder = Path(sweep_dir)
    record = _json(folder / "sweep.json")
    runs = record.get("runs") if isinstance(record, dict) else None
    out = []
    for r in runs if isinstance(runs, list) else []:
        try:
            planned = int(r["config"]["train"]["max_steps"])
            name = str(r["run"])
        except (KeyError, TypeError, ValueError):
            continue
        progress = run_progress(folder / "runs" / name, planned)
        if progress is not None:
            out.append(progress)
    return out


def sweep_warning(sweep_dir: str | Path) -> str | None:
    """:func:`warning` for a sweep folder (None if it is not one or its runs are trained)."""
    return warning(sweep_progress(sweep_dir))


def sweep_of_report(claims_file: str | Path) -> Path | None:
    """The sweep folder whose runs a report's claims.json rests on: the report's parent (``ffnlab
    report``'s default SWEEP/report) or its ``sweep/`` folder (``ffnlab verify``), if either holds one."""
    report = Path(claims_file).parent
    return next((d for d in (report.parent, report / "sweep") if (d / "sweep.json").is_file()), None)
