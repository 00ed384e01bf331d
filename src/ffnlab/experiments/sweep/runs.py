"""A finished sweep's runs, read back for analysis, with the pre-registered rule for bad runs.

**Runs left out (fixed before any run, flagged on the page).** A run is excluded from every
comparison, and listed with its reason, when

* any of its losses is not a finite number (NaN or infinite: training blew up), or
* its final validation loss is no better than chance (>= ln V for a vocabulary of V), or
* its final validation loss is more than :data:`DIVERGED_RISE` above the lowest validation loss it
  reached earlier (it learned, then diverged).

A run that is merely slow (e.g. a SwiGLU seed that leaves the early plateau late and is still
improving at the end) is *not* excluded: that spread is part of what the comparison measures.
Every arm the spec names must have runs in the sweep; a missing arm is an error naming it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict, cast

from ffnlab.errors import FfnlabError, require
from ffnlab.experiments.sweep.record import SweepRecord
from ffnlab.experiments.sweep.spec import SavedSpec
from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.widths import param_matched_ratio
from ffnlab.training.runfiles import finished_summary, read_records

DIVERGED_RISE = 0.10
SummaryFigure = Literal["final_val_loss", "final_val_ppl", "final_val_bpb", "wall_s", "train_flops"]


class RunSummary(TypedDict, total=False):
    """A run's ``summary.json`` (written by training), the keys the experiments read. Every key may
    be absent: :func:`load` reads the files as they are (:mod:`ffnlab.experiments.sweep.record`
    checks them before a report)."""

    status: str
    steps: int
    tokens: int
    final_val_loss: float
    final_val_ppl: float
    final_val_bpb: float
    train_flops: float
    wall_s: float
    params: dict[str, int]
    device: str
    tokenizer: str
    ffnlab_commit: str


@dataclass
class RunResult:
    run: str
    arm: str
    seed: int
    summary: RunSummary
    tokens: list[float]
    losses: list[float]
    flops_per_token: float
    excluded: str | None = None

    @property
    def final_loss(self) -> float:
        return float(self.summary["final_val_loss"])


@dataclass
class ArmStats:
    name: str
    kind: str
    gated: bool
    rule: str
    d_model: int
    d_ff: int
    ratio_raw: float
    ratio_param_matched: float
    params_non_embedding: int
    train_flops_per_token: float
    runs: list[RunResult] = field(default_factory=list)  # the runs the analysis uses
    excluded: list[RunResult] = field(default_factory=list)  # left out by the rule above

    def values(self, key: SummaryFigure) -> list[float]:
        return [float(r.summary[key]) for r in self.runs]

    @property
    def losses(self) -> list[float]:
        return [r.final_loss for r in self.runs]

    @property
    def mean_loss(self) -> float:
        """Mean final validation loss over the kept seeds (NaN with none)."""
        v = self.losses
        return sum(v) / len(v) if v else math.nan


def exclusion(run: RunResult, vocab_size: int | None) -> str | None:
    """Why ``run`` is left out under the rule in the module docstring, or None."""
    raw = run.summary.get("final_val_loss")
    if not (isinstance(raw, (int, float)) and all(math.isfinite(v) for v in [raw, *run.losses])):
        return "a loss is not finite (training blew up)"
    final = float(raw)
    values = [final, *run.losses]
    if vocab_size and final >= math.log(vocab_size):
        return f"final loss {final:.4f} is no better than chance (ln {vocab_size} = {math.log(vocab_size):.4f})"
    best = min(values)
    if final > best * (1 + DIVERGED_RISE):
        return (f"diverged: final loss {final:.4f} is {final / best - 1:.0%} above its best evaluation "
                f"{best:.4f} (the rule allows {DIVERGED_RISE:.0%})")
    return None


def spec_arm_names(spec: SavedSpec) -> list[str]:
    """Every arm the spec names (prefixed "SCALE." per size when it has scales)."""
    names = [a["name"] if isinstance(a, dict) else str(a) for a in spec.get("arms") or []]
    scales = spec.get("scales") or []
    return [f"{s['name']}.{n}" for s in scales for n in names] if scales else names


def load(sweep_dir: str | Path) -> tuple[SweepRecord, list[ArmStats]]:
    """``sweep.json`` and every arm's runs (finished runs required; bad runs set aside)."""
    root = Path(sweep_dir)
    require((root / "sweep.json").is_file(), f"{root} is not a sweep folder (no sweep.json)")
    try:
        record = cast(SweepRecord, json.loads((root / "sweep.json").read_text()))  # as written by the sweep
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FfnlabError(f"{root}/sweep.json is corrupt ({e})") from None
    vocab = record.get("vocab_size")
    arms: dict[str, ArmStats] = {}
    missing = []
    for r in record["runs"]:
        ffn = r["config"]["model"]["ffn"]
        kind = get_kind(ffn["kind"])
        arm = arms.setdefault(r["arm"], ArmStats(
            name=r["arm"], kind=ffn["kind"], gated=kind.gated, rule=ffn["rule"], d_model=r["d_model"],
            d_ff=r["d_ff"], ratio_raw=r["d_ff"] / r["d_model"],
            ratio_param_matched=float(param_matched_ratio(r["d_model"], r["d_ff"], kind.gated)),
            params_non_embedding=r["params_non_embedding"], train_flops_per_token=r["train_flops_per_token"]))
        run_dir = root / "runs" / r["run"]
        train = r["config"].get("train")
        found = finished_summary(run_dir, train.get("max_steps") if isinstance(train, dict) else None)
        try:
            records = read_records(run_dir / "metrics.jsonl", kinds=("eval",))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            found = None
        if found is None:
            missing.append(r["run"])
            continue
        summary = cast(RunSummary, found)
        evals = [e for e in records if e.get("kind") == "eval"]
        run = RunResult(r["run"], r["arm"], r["seed"], summary, [float(e["tokens"]) for e in evals],
                        [float(e["val_loss"]) for e in evals], r["train_flops_per_token"])
        run.excluded = exclusion(run, vocab)
        (arm.excluded if run.excluded else arm.runs).append(run)
    require(not missing, f"{len(missing)} run(s) of {root} have not finished ({', '.join(missing[:4])}); "
                         "finish the sweep first (rerun 'ffnlab sweep' with the same --out)")
    spec = record.get("spec")
    absent = [n for n in spec_arm_names(spec) if n not in arms] if spec else []
    require(not absent, f"{root}: arm(s) {', '.join(absent[:6])} named in the spec have no runs in sweep.json; "
                        "the comparisons fixed in the spec cannot be made without them")
    return record, list(arms.values())
