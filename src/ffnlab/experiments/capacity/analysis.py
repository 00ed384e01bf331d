"""The capacity sweep's analysis: every run measured (Allen-Zhu & Li 2024's lower bound on stored
bits, :func:`ffnlab.training.capacity.measure_run`), bits per non-embedding parameter per arm, and
the two capacity claims decided at each budget by the one verdict engine
(:mod:`ffnlab.experiments.analysis.verdicts`), as the loss sweeps are: more bits is better, the margin is
:data:`EQUIVALENCE` of the reference arm's bits per parameter.

* capacity-peaks-at-ratio-4: the plain ratio-4 arm against every other plain arm
  (:func:`~ffnlab.experiments.analysis.verdicts.reference_best`, higher is better);
* gated-stores-as-much: the pair fixed in advance, the gated arm at parameter-matched ratio 4
  minus the plain ratio-4 arm, equal parameters as Shazeer (2020) compared them
  (:func:`~ffnlab.experiments.analysis.verdicts.as_much`).

A claim is false if it is false at either budget; otherwise the budgets' verdicts combine in the
order needs-experiment, inconclusive, misleading, true (:func:`ffnlab.sizing.verdicts.combine`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal, TypedDict, cast

from ffnlab.errors import require
from ffnlab.experiments.analysis import verdicts as vd
from ffnlab.experiments.analysis.stats import mean_ci
from ffnlab.experiments.sweep.record import load_sweep, record_seeds
from ffnlab.files import check_inside
from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.result import Result
from ffnlab.sizing.verdicts import Verdict, combine
from ffnlab.training.capacity import REFERENCE_BITS_PER_PARAM, cached_measure, measure_run

EQUIVALENCE = 0.10  # equivalence margin: 10% of the reference arm's bits/param ("as much", "no peak")
UNIT = "bits/param"
RunFigure = Literal["bits", "bits_per_param", "bits_per_param_total", "fraction", "heldout_bits", "entropy_bits",
                    "exposures"]


class StoredBits(TypedDict):
    """Bits stored on one split of a facts corpus (part of a run's ``capacity.json``)."""

    bits: float
    fraction: float
    entropy_bits: float


class HeldOutBits(TypedDict):
    """Bits the held-out facts (never trained) hold: the control (part of ``capacity.json``)."""

    bits: float


class CapacityMeasure(TypedDict):
    """A run's ``capacity.json`` (:func:`ffnlab.training.capacity.measure_run`), the keys read here."""

    trained: StoredBits
    heldout: HeldOutBits
    bits_per_param: float
    bits_per_param_total: float
    exposures: float


class CapacityRun(TypedDict):
    """One run's measure (from its ``capacity.json``, :func:`ffnlab.training.capacity.measure_run`)."""

    run: str
    seed: int
    bits: float
    bits_per_param: float
    bits_per_param_total: float
    fraction: float
    heldout_bits: float
    entropy_bits: float
    exposures: float


@dataclass
class ArmCapacity:
    budget: str
    arm: str
    kind: str
    gated: bool
    d_model: int
    d_ff: int
    ratio_raw: float
    ratio_param_matched: float
    params_non_embedding: int
    runs: list[CapacityRun] = field(default_factory=list)

    def values(self, key: RunFigure) -> list[float]:
        return [float(r[key]) for r in self.runs]

    @property
    def mean(self) -> float:
        v = self.values("bits_per_param")
        return sum(v) / len(v) if v else math.nan


def sweep_folders(root: Path) -> list[Path]:
    """The sweep folders under ``root`` (itself, or its budget sub-folders)."""
    if (root / "sweep.json").is_file():
        return [root]
    found = sorted(p for p in root.iterdir() if (p / "sweep.json").is_file()) if root.is_dir() else []
    require(bool(found), f"{root} is neither a sweep folder nor a folder of capacity sweeps (no sweep.json)")
    return found


def _cached(run: Path, remeasure: bool) -> CapacityMeasure | None:
    """The run's cached measure (:func:`ffnlab.training.capacity.cached_measure`), unless asked to
    measure again."""
    return None if remeasure else cast("CapacityMeasure | None", cached_measure(run))


def measure_sweep(folder: Path, *, remeasure: bool = False, root: Path | None = None) -> list[ArmCapacity]:
    """Every run of one sweep folder measured (``capacity.json`` per run is reused)."""
    runs = load_sweep(folder)["runs"]  # the sweep record and every run's files validated (one error line)
    arms: dict[str, ArmCapacity] = {}
    missing = []
    for r in runs:
        run = folder / "runs" / r["run"]
        if not (run / "summary.json").is_file():
            missing.append(r["run"])
            continue
        check_inside(run, root or folder)  # its capacity.json is rewritten: never through a link out of the folder
        result = _cached(run, remeasure) or cast(CapacityMeasure, measure_run(run))  # cached as RUN/capacity.json
        kind = get_kind(r["config"]["model"]["ffn"]["kind"])
        arm = arms.setdefault(r["arm"], ArmCapacity(
            budget=folder.name, arm=r["arm"], kind=kind.name, gated=kind.gated, d_model=r["d_model"],
            d_ff=r["d_ff"], ratio_raw=r["d_ff"] / r["d_model"],
            ratio_param_matched=r["d_ff"] / r["d_model"] * (1.5 if kind.gated else 1),
            params_non_embedding=r["params_non_embedding"]))
        arm.runs.append({"run": r["run"], "seed": r["seed"], "bits": result["trained"]["bits"],
                         "bits_per_param": result["bits_per_param"],
                         "bits_per_param_total": result["bits_per_param_total"],
                         "fraction": result["trained"]["fraction"], "heldout_bits": result["heldout"]["bits"],
                         "entropy_bits": result["trained"]["entropy_bits"], "exposures": result["exposures"]})
    require(not missing, f"{len(missing)} run(s) of {folder} have not finished ({', '.join(missing[:4])}); "
                         "finish the sweep first (rerun 'ffnlab capacity run' with the same --out)")
    return list(arms.values())


@dataclass(frozen=True)
class CapacityArmRow(Result):
    """One arm at one budget (:func:`arm_rows`): its FFN and size, the seeds it has, its bits per
    non-embedding parameter (mean and 95% t interval over seeds), the means of the other measures,
    and each seed's bits per parameter (by seed, as text: a JSON object's keys)."""

    budget: str
    arm: str
    kind: str
    gated: bool
    d_model: int
    d_ff: int
    ratio_raw: float
    ratio_param_matched: float
    params_non_embedding: int
    n_seeds: int
    bits_per_param: float
    bits_per_param_lo: float
    bits_per_param_hi: float
    bits: float
    entropy_bits: float
    fraction: float
    heldout_bits: float
    bits_per_param_total: float
    exposures: float
    seeds: dict[str, float]


def arm_rows(arms: list[ArmCapacity]) -> list[CapacityArmRow]:
    rows = []
    for a in arms:
        bpp = mean_ci(a.values("bits_per_param"))
        rows.append(CapacityArmRow(
            budget=a.budget, arm=a.arm, kind=a.kind, gated=a.gated, d_model=a.d_model,
            d_ff=a.d_ff, ratio_raw=a.ratio_raw, ratio_param_matched=a.ratio_param_matched,
            params_non_embedding=a.params_non_embedding, n_seeds=len(a.runs),
            bits_per_param=bpp[0], bits_per_param_lo=bpp[1], bits_per_param_hi=bpp[2],
            bits=mean_ci(a.values("bits"))[0], entropy_bits=a.runs[0]["entropy_bits"] if a.runs else math.nan,
            fraction=mean_ci(a.values("fraction"))[0], heldout_bits=mean_ci(a.values("heldout_bits"))[0],
            bits_per_param_total=mean_ci(a.values("bits_per_param_total"))[0],
            exposures=mean_ci(a.values("exposures"))[0],
            seeds={str(r["seed"]): r["bits_per_param"] for r in a.runs}))
    return rows


def _groups(arms: list[ArmCapacity]) -> dict[str, list[float]]:
    return {a.arm: a.values("bits_per_param") for a in arms}


@dataclass(frozen=True)
class BudgetVerdict(Result):
    """A capacity claim at one budget: the verdict and its evidence; where a comparison was made,
    the deciding interval, the difference detectable with 80% power, the test, the variance model's
    reason, and the family of comparisons (``capacity_peak``) or the planned pair's decision
    (``capacity_gated``)."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"interval", "mde80", "method", "model", "family", "decision"})

    verdict: Verdict
    evidence: str
    interval: tuple[float, float, float] | None = None  # estimate, lo, hi
    mde80: float | None = None
    method: str | None = None
    model: str | None = None
    family: vd.FamilyJSON | None = None
    decision: vd.DecisionJSON | None = None


@dataclass(frozen=True)
class CapacityNumbers(Result):
    """The figures a capacity verdict rests on: each budget's verdict and the equivalence margin
    (a share of the reference arm's bits per parameter)."""

    budgets: dict[str, BudgetVerdict]
    margin_share: float


@dataclass(frozen=True)
class CapacityClaim(Result):
    """A capacity claim decided over the budgets (module docstring), as ``claims.json`` shows it."""

    verdict: Verdict
    evidence: str
    numbers: CapacityNumbers


def _three(values: list[float]) -> tuple[float, float, float]:
    """A decision's interval (estimate, lo, hi) as a triple."""
    point, lo, hi = values
    return point, lo, hi


def _combined(per: dict[str, BudgetVerdict]) -> CapacityClaim:
    """The budgets' verdicts combined into the claim's (module docstring)."""
    return CapacityClaim(verdict=combine(v.verdict for v in per.values()),
                         evidence="; ".join(v.evidence for v in per.values()),
                         numbers=CapacityNumbers(budgets=per, margin_share=EQUIVALENCE))


def _nothing_stored(budget: str, arms: list[ArmCapacity]) -> BudgetVerdict | None:
    """The verdict of a budget where no run of any compared arm stored a bit: nothing to compare."""
    if arms and all(v == 0 for a in arms for v in a.values("bits_per_param")):
        return BudgetVerdict(
            verdict="inconclusive",
            evidence=f"{budget}: every run of {', '.join(a.arm for a in arms)} stored 0 bits, so there is "
                     "nothing to compare; train with more exposures (the models have not begun to memorise)")
    return None


def verdict_peak(by_budget: dict[str, list[ArmCapacity]]) -> CapacityClaim:
    """"Capacity per parameter peaks at ratio 4" at each budget (module docstring)."""
    per: dict[str, BudgetVerdict] = {}
    for budget, arms in by_budget.items():
        plain = [a for a in arms if not a.gated]
        ref = next((a for a in plain if abs(a.ratio_raw - 4) < 1e-9), None)
        others = [a.arm for a in plain if a is not ref]
        if ref is None or not others:
            per[budget] = BudgetVerdict(verdict="needs-experiment",
                                        evidence=f"{budget}: no plain ratio-4 arm to compare")
            continue
        empty = _nothing_stored(budget, plain)
        if empty:
            per[budget] = empty
            continue
        fam = vd.decide_family("bits per parameter", _groups(arms), ref.arm, others, EQUIVALENCE * ref.mean)
        verdict, k = vd.reference_best(fam.decisions, higher_is_better=True)
        d = fam.decisions[k]
        per[budget] = BudgetVerdict(verdict=verdict, evidence=f"{budget}: {vd.describe(d, UNIT)} ({fam.choice.why})",
                                    interval=_three(d.interval), mde80=d.mde80, method=d.comparison.method,
                                    model=fam.choice.why, family=fam.as_dict())
    return _combined(per)


def verdict_gated(by_budget: dict[str, list[ArmCapacity]]) -> CapacityClaim:
    """"Gated FFNs store as much per parameter as plain ones" at each budget (module docstring)."""
    per: dict[str, BudgetVerdict] = {}
    for budget, arms in by_budget.items():
        g = next((a for a in arms if a.gated and abs(a.ratio_param_matched - 4) < 0.05), None)
        p = next((a for a in arms if not a.gated and abs(a.ratio_raw - 4) < 1e-9), None)
        if g is None or p is None:
            per[budget] = BudgetVerdict(verdict="needs-experiment",
                                        evidence=f"{budget}: needs a gated arm at parameter-matched ratio 4 and a "
                                                 "plain ratio-4 arm")
            continue
        empty = _nothing_stored(budget, [g, p])
        if empty:
            per[budget] = empty
            continue
        d, choice = vd.decide_pair("bits per parameter", _groups(arms), g.arm, p.arm, EQUIVALENCE * p.mean)
        per[budget] = BudgetVerdict(verdict=vd.as_much(d), evidence=f"{budget}: {vd.describe(d, UNIT)} ({choice.why})",
                                    interval=_three(d.interval), mde80=d.mde80, method=d.comparison.method,
                                    model=choice.why, decision=d.as_dict())
    return _combined(per)


@dataclass(frozen=True)
class CapacityResult(Result):
    """The capacity sweep's analysis (:func:`analyse`), ``capacity.json``: the folder measured, the
    corpus, the seeds, every arm at every budget, the two claims decided and the published figure
    the bits are compared with."""

    root: str
    corpus: str
    seeds: list[int]
    arms: list[CapacityArmRow]
    claims: dict[str, CapacityClaim]
    reference_bits_per_param: float


def analyse(root: str | Path, *, remeasure: bool = False) -> CapacityResult:
    folders = sweep_folders(Path(root))
    by_budget = {f.name: measure_sweep(f, remeasure=remeasure, root=Path(root)) for f in folders}
    arms = [a for v in by_budget.values() for a in v]
    first = load_sweep(folders[0])
    return CapacityResult(root=str(root), corpus=first["spec"].get("base", {}).get("data", {}).get("corpus", "?"),
                          seeds=record_seeds(first), arms=arm_rows(arms),
                          claims={"capacity_peak": verdict_peak(by_budget), "capacity_gated": verdict_gated(by_budget)},
                          reference_bits_per_param=REFERENCE_BITS_PER_PARAM)
