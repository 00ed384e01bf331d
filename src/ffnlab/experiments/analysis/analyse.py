"""Analyse a finished sweep: the comparisons the spec fixed, each through the one verdict engine.

All figures come from the runs' ``metrics.jsonl``/``summary.json``; nothing is assumed. Outcomes:
the final validation loss; log tokens to a target loss fixed before the runs (the spec's
``target_loss``, or the rule :func:`target_loss`); for scale sweeps, each cell's best ratio and
the trend of the best ratio along each pre-registered axis (:mod:`ffnlab.experiments.analysis.trend`).
How a comparison is decided (the variance model, the one verdict rule, power and seed advice) is
in :mod:`ffnlab.experiments.analysis.verdicts`; docs/experiments.md states it for users.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, TypedDict

import numpy as np

from ffnlab.experiments.analysis import maturity as mt
from ffnlab.experiments.analysis import trend as tr
from ffnlab.experiments.analysis import verdicts as vd
from ffnlab.experiments.analysis.stats import POWER, crossing, mean_ci, ratio_of_means
from ffnlab.experiments.fmt import interval as fmt_iv
from ffnlab.experiments.sweep.record import SweepRecord, record_seeds
from ffnlab.experiments.sweep.runs import ArmStats, load
from ffnlab.experiments.sweep.spec import SEED_CLAIM_OF, Hypothesis, SavedSpec, SweepSpec, Trend, saved_spec
from ffnlab.sizing.result import Result
from ffnlab.sizing.verdicts import Verdict


@dataclass(frozen=True)
class ArmRow(Result):
    """One arm of the arms table (:func:`arm_table`): its FFN and size, its final validation loss,
    perplexity and bits per byte (mean over the kept seeds, 95% t interval), the wall time of its
    runs and each kept seed's final loss (by seed, as text: a JSON object's keys)."""

    arm: str
    kind: str
    gated: bool
    rule: str
    d_model: int
    d_ff: int
    ratio_raw: float
    ratio_param_matched: float
    params_non_embedding: int
    train_flops_per_token: float
    n_seeds: int
    n_excluded: int
    val_loss: float
    val_loss_lo: float
    val_loss_hi: float
    val_ppl: float
    val_ppl_lo: float
    val_ppl_hi: float
    val_bpb: float
    val_bpb_lo: float
    val_bpb_hi: float
    wall_s: float
    seed_losses: dict[str, float]


@dataclass(frozen=True)
class ExcludedRun(Result):
    """A run the exclusion rule left out (:func:`ffnlab.experiments.sweep.runs.exclusion`), and why."""

    run: str
    arm: str
    seed: int
    reason: str | None


@dataclass(frozen=True)
class KaplanPoint(Result):
    """One arm of the Kaplan curve (:func:`kaplan_curve`): its loss relative to the reference's,
    minus 1, with Fieller's interval (NaN for the reference itself)."""

    arm: str
    ratio_raw: float
    loss_increase: float
    lo: float
    hi: float
    reference: bool


def arm_table(arms: list[ArmStats]) -> list[ArmRow]:
    rows = []
    for a in arms:
        loss = mean_ci(a.losses)
        ppl = mean_ci([math.exp(x) for x in a.losses])
        bpb = mean_ci(a.values("final_val_bpb"))
        rows.append(ArmRow(
            arm=a.name, kind=a.kind, gated=a.gated, rule=a.rule, d_model=a.d_model, d_ff=a.d_ff,
            ratio_raw=a.ratio_raw, ratio_param_matched=a.ratio_param_matched,
            params_non_embedding=a.params_non_embedding, train_flops_per_token=a.train_flops_per_token,
            n_seeds=len(a.runs), n_excluded=len(a.excluded), val_loss=loss[0], val_loss_lo=loss[1],
            val_loss_hi=loss[2], val_ppl=ppl[0], val_ppl_lo=ppl[1], val_ppl_hi=ppl[2],
            val_bpb=bpb[0], val_bpb_lo=bpb[1], val_bpb_hi=bpb[2],
            wall_s=sum(r.summary.get("wall_s", 0.0) for r in a.runs + a.excluded),
            seed_losses={str(r.seed): r.final_loss for r in a.runs}))
    return rows


def excluded_runs(arms: list[ArmStats]) -> list[ExcludedRun]:
    return [ExcludedRun(run=r.run, arm=r.arm, seed=r.seed, reason=r.excluded) for a in arms for r in a.excluded]


@dataclass(frozen=True)
class VerdictNumbers(Result):
    """The figures a verdict rests on (``numbers`` in ``claims.json``): the deciding interval, the
    difference detectable with 80% power, the alternative that decided it (``against``), the
    equivalence margin, and a planned pair's deciding comparison (``decision``)."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"against", "margin", "decision"})

    interval: tuple[float, ...]
    mde80: float
    against: str | None = None
    margin: float | None = None
    decision: vd.DecisionJSON | None = None


@dataclass(frozen=True)
class StatedHypothesis:
    """A hypothesis as its verdict carries it: the spec's words (id, sentence, claimed effect and
    where it comes from, margin)."""

    id: str
    sentence: str
    claimed_effect: float | None
    effect_source: str | None
    margin: float | None


@dataclass(frozen=True)
class ClaimVerdict(Result):
    """One hypothesis decided, as the report and ``claims.json`` show it: the verdict, the evidence
    and the finding (what the comparison shows without restating the interval: the report's card
    states it once), what it compares, the deciding interval and its unit, the test and why that
    test, its power; then the hypothesis in the spec's words, the maturity of the runs and, where
    immature runs made a decided verdict inconclusive, what they would say (``verdict_if_mature``).
    A comparison the sweep cannot make (:func:`_missing`) has no finding, power or numbers."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"finding", "power", "numbers", "hypothesis", "maturity", "verdict_if_mature"})
    NOT_MADE_ORDER: ClassVar[tuple[str, ...]] = ("verdict", "interval", "unit", "comparison", "evidence", "mde80",
                                                 "method", "model", "hypothesis", "maturity", "verdict_if_mature")

    verdict: Verdict
    evidence: str
    finding: str | None  # None: no comparison was made (needs-experiment)
    comparison: str
    interval: tuple[float, ...]
    unit: str
    mde80: float
    power: float | None
    method: str
    model: str
    numbers: VerdictNumbers | None
    hypothesis: StatedHypothesis | None = None
    maturity: mt.CellMaturity | None = None
    verdict_if_mature: str | None = None

    def keys(self) -> tuple[str, ...]:
        if self.finding is not None:
            return super().keys()
        return tuple(k for k in self.NOT_MADE_ORDER if self._shown(k))  # the order such a verdict always had


def _verdict(verdict: Verdict, evidence: str, comparison: str, interval: Sequence[float], unit: str, mde80: float,
             method: str, why: str, finding: str = "", *, against: str | None = None, margin: float | None = None,
             decision: vd.DecisionJSON | None = None) -> ClaimVerdict:
    """One verdict (:class:`ClaimVerdict`) of a comparison that was made."""
    numbers = VerdictNumbers(interval=tuple(interval), mde80=mde80, against=against, margin=margin, decision=decision)
    return ClaimVerdict(verdict=verdict, evidence=evidence, finding=finding or evidence, comparison=comparison,
                        interval=tuple(interval), unit=unit, mde80=mde80, power=POWER, method=method, model=why,
                        numbers=numbers)


def _missing(comparison: str, unit: str, why: str) -> ClaimVerdict:
    return ClaimVerdict(verdict="needs-experiment", evidence=why, finding=None, comparison=comparison,
                        interval=(math.nan,) * 3, unit=unit, mde80=math.nan, power=None, method="none", model="",
                        numbers=None)


def gated(v: ClaimVerdict, m: mt.CellMaturity) -> ClaimVerdict:
    """``v`` (a verdict on an optimal ratio) with its maturity; an immature decided verdict becomes
    ``inconclusive`` with the reason first in its evidence
    (:func:`ffnlab.experiments.analysis.maturity.immature_reason`)."""
    out = replace(v, maturity=m)
    if m.mature or v.verdict in ("inconclusive", "needs-experiment"):
        return out
    reason = mt.immature_reason(m, v.verdict)
    return replace(out, verdict="inconclusive", verdict_if_mature=v.verdict, evidence=reason + v.evidence,
                   finding=reason + (v.finding or v.evidence))


def alternatives(spec: SweepSpec, arms: list[ArmStats], key: str) -> list[str]:
    """The arms the spec fixed for ``key``; by default every other arm of the reference's kind."""
    chosen = spec.comparisons.get(key)
    if chosen:
        return list(chosen)
    ref = next(a for a in arms if a.name == spec.reference)
    return [a.name for a in arms if a.name != ref.name and a.kind == ref.kind]


def margin_of(spec: SweepSpec, value: float) -> float:
    return spec.margin * value


def groups(arms: list[ArmStats]) -> dict[str, list[float]]:
    return {a.name: a.losses for a in arms}


def verdict_ratio_optimal(arms: list[ArmStats], spec: SweepSpec,
                          seed: bool = True) -> tuple[ClaimVerdict, vd.Family | None]:
    """"Ratio 4 gives the best model; other ratios lose quality": the raw-ratio-4 reference against
    the spec's same-kind alternatives (:func:`ffnlab.experiments.analysis.verdicts.reference_best`)."""
    reference = spec.reference
    ref = next(a for a in arms if a.name == reference)
    alts = alternatives(spec, arms, "ratio_optimal")
    unit = "nats (alternative - ratio 4)" if seed else f"nats (alternative - {reference})"
    if seed and (abs(ref.ratio_raw - 4) > 1e-9 or not alts):  # the seed claim is about ratio 4
        return _missing("-", unit, "the sweep needs a raw-ratio-4 reference and alternatives of the same FFN "
                                   "kind"), None
    if not alts:
        return _missing("-", unit, "the sweep needs alternatives of the reference's FFN kind"), None
    margin = margin_of(spec, ref.mean_loss)
    fam = vd.decide_family("final validation loss", groups(arms), reference, alts, margin)
    verdict, k = vd.reference_best(fam.decisions)
    d = fam.decisions[k]
    others = [x for name, x in fam.decisions.items() if name != k]
    evidence = "; ".join(vd.describe(x, "nats") for x in [d, *others])
    found = "; ".join(vd.finding(x) for x in [d, *others])
    return _verdict(verdict, evidence, f"{', '.join(alts)} vs {reference} (fixed in the spec)", d.interval, unit,
                    d.mde80, d.comparison.method, fam.choice.why, found, against=k, margin=margin), fam


def _pair(spec: SweepSpec, arms: list[ArmStats], key: str) -> tuple[ArmStats, ArmStats] | None:
    chosen = spec.comparisons.get(key)
    by_name = {a.name: a for a in arms}
    if chosen:
        return by_name[chosen[0]], by_name[chosen[1]]
    if key != "glu_vs_plain":
        return None
    ref = by_name.get(spec.reference)  # default: a gated arm of the reference's d_model and size
    gated = [a for a in by_name.values() if a.gated and ref is not None and a.d_model == ref.d_model
             and abs(a.params_non_embedding / ref.params_non_embedding - 1) <= 0.05]
    return (gated[0], ref) if gated and ref is not None and not ref.gated else None


def verdict_pair(arms: list[ArmStats], spec: SweepSpec, key: str) -> ClaimVerdict | None:
    """A planned pair ``(first, second)`` fixed in the spec: first should end lower.
    glu_vs_plain: (gated, plain) at equal d_model and parameters (Shazeer 2020, Table 1);
    gated_law: (gated at raw ratio 4, gated at 8/3) at equal parameters (the source note's law inside the
    gated family). :func:`ffnlab.experiments.analysis.verdicts.first_better` maps its outcome."""
    pair = _pair(spec, arms, key)
    if pair is None:
        return None
    a, b = pair
    unit = f"nats ({a.name} - {b.name})"
    comparison = (f"{a.name} vs {b.name}: d_model {a.d_model} vs {b.d_model}, non-embedding params "
                  f"{a.params_non_embedding:,} vs {b.params_non_embedding:,}")
    margin = margin_of(spec, b.mean_loss)
    d, choice = vd.decide_pair("final validation loss", groups(arms), a.name, b.name, margin)
    return _verdict(vd.first_better(d), vd.describe(d, "nats") + "; one planned comparison", comparison,
                    d.interval, unit, d.mde80, d.comparison.method, choice.why, vd.finding(d), margin=margin,
                    decision=d.as_dict())


# -- convergence ----------------------------------------------------------------------------

def target_loss(spec: SweepSpec, arms: list[ArmStats], reference: str) -> tuple[float, str]:
    """The convergence target, fixed before the runs: the spec's ``target_loss``, or the rule
    "the mean over the reference's seeds of its validation loss at the evaluation nearest half of
    its training tokens" (it depends on no other arm, and the reference reaches it mid-run)."""
    fixed = spec.target_loss
    if isinstance(fixed, (int, float)) and math.isfinite(fixed):
        return float(fixed), "fixed in the spec"
    ref = next(a for a in arms if a.name == reference)
    vals, where = [], []
    for r in ref.runs:
        if r.tokens:
            half = r.tokens[-1] / 2
            i = min(range(len(r.tokens)), key=lambda j: abs(r.tokens[j] - half))
            vals.append(r.losses[i])
            where.append(r.tokens[i] / r.tokens[-1])
    at = f" ({min(where):.0%} of them)" if where and min(where) == max(where) else ""
    return ((sum(vals) / len(vals) if vals else math.nan),
            f"rule: the reference's mean loss at the evaluation nearest half its tokens{at}")


@dataclass(frozen=True)
class ArmCrossing(Result):
    """One arm's runs against the target loss (:func:`convergence`): each run's tokens at its
    crossing and the evaluations around it, how many runs never reached it (censored at their last
    evaluation), the mean; for an alternative the spec fixed, its tokens and training FLOPs
    relative to the reference (deciding 95% interval, interpolation error included), the interval
    at the interpolated crossings, the test and the change it detects with 80% power."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"tokens_ratio", "tokens_ratio_interpolated", "flops_ratio", "method", "mde80"})

    tokens: tuple[float, ...]
    bracket: tuple[tuple[float, float], ...]
    censored: int
    runs: int
    tokens_mean: float | None
    tokens_ratio: tuple[float, float, float] | None = None
    tokens_ratio_interpolated: tuple[float, float, float] | None = None
    flops_ratio: tuple[float, float, float] | None = None
    method: str | None = None
    mde80: float | None = None


@dataclass(frozen=True)
class Convergence(Result):
    """Tokens to the pre-registered target loss (:func:`convergence`): the target and the rule that
    fixed it, the reference, every arm's crossings, and the family of comparisons on log tokens
    (None where the spec fixes no alternative or a run crosses at once)."""

    target_loss: float
    target_rule: str
    reference: str
    arms: dict[str, ArmCrossing]
    family: vd.Family | None


def convergence(arms: list[ArmStats], spec: SweepSpec, reference: str,
                vocab_size: int | None = None) -> Convergence:
    """Tokens (and training FLOPs) to reach the pre-registered target loss, relative to the
    reference, for the spec's alternatives: log tokens through the verdict engine. The true
    crossing of each run lies between the two evaluations around it; the deciding interval carries
    that interpolation error (the union of the intervals with every run at its interpolated point,
    the alternatives at their earliest and the reference at its latest possible crossing, and the
    reverse). A run that never reaches the target is censored at its last evaluation: its arm's
    interval has no upper end, so it can support "slower" but never "faster"."""
    target, rule = target_loss(spec, arms, reference)
    start = (0.0, math.log(vocab_size)) if vocab_size else (0.0, 99.0)
    cross = {a.name: [crossing(r.tokens, r.losses, target, start) for r in a.runs] for a in arms}
    alts = [k for k in alternatives(spec, arms, "convergence_speed") if k in cross]
    flops = {a.name: a.train_flops_per_token for a in arms}
    rows = {a.name: ArmCrossing(tokens=tuple(c.tokens for c in cs), bracket=tuple((c.lower, c.upper) for c in cs),
                                censored=sum(c.censored for c in cs), runs=len(cs),
                                tokens_mean=sum(c.tokens for c in cs) / len(cs) if cs else None)
            for a in arms for cs in [cross[a.name]]}
    if not alts or not cross.get(reference) or any(c.tokens <= 0 for v in cross.values() for c in v):
        return Convergence(target_loss=target, target_rule=rule, reference=reference, arms=rows, family=None)

    def logs(pick: dict[str, str]) -> dict[str, list[float]]:
        return {k: [math.log(max(getattr(c, pick.get(k, "tokens")), 1e-300)) if math.isfinite(
            getattr(c, pick.get(k, "tokens"))) else math.inf for c in v] for k, v in cross.items()}

    margin = math.log(1 + spec.margin)
    fam = vd.decide_family("log tokens to target", logs({}), reference, alts, margin)
    early = {k: "lower" for k in alts} | {reference: "upper"}
    late = {k: "upper" for k in alts} | {reference: "lower"}
    for k in alts:
        d = fam.decisions[k]
        c = d.comparison
        lo_g, hi_g = logs(early), logs(late)
        lo = _bound(vd.decide_family("", _pair_groups(lo_g, k, reference), reference, [k], margin), k, "lo") \
            if not any(math.isinf(v) for v in lo_g[reference]) else -math.inf
        hi = _bound(vd.decide_family("", _pair_groups(hi_g, k, reference), reference, [k], margin), k, "hi") \
            if not any(math.isinf(v) for v in hi_g[k]) else math.inf
        lo, hi = (min(c.lo, lo), max(c.hi, hi)) if c.has_interval else (math.nan, math.nan)
        scale = flops[k] / flops[reference]
        ratio = (_exp(c.diff), _exp(lo), _exp(hi))
        rows[k] = replace(rows[k], tokens_ratio=ratio, tokens_ratio_interpolated=(_exp(c.diff), _exp(c.lo), _exp(c.hi)),
                          flops_ratio=(ratio[0] * scale, ratio[1] * scale, ratio[2] * scale), method=c.method,
                          mde80=d.mde80)
    return Convergence(target_loss=target, target_rule=rule, reference=reference, arms=rows, family=fam)


def _pair_groups(g: dict[str, list[float]], k: str, ref: str) -> dict[str, list[float]]:
    return {name: g[name] for name in (k, ref)}


def _bound(fam: vd.Family, k: str, side: str) -> float:
    c = fam.decisions[k].comparison
    return getattr(c, side) if c.has_interval else (-math.inf if side == "lo" else math.inf)


def _exp(v: float) -> float:
    if math.isnan(v):
        return math.nan
    if v > 709.0:  # past float range (an interval from very few degrees of freedom): unbounded
        return math.inf
    return math.exp(v) if v > -745.0 else 0.0


def verdict_convergence(conv: Convergence, arms: list[ArmStats], spec: SweepSpec,
                        claimed: float | None = None) -> ClaimVerdict:
    """"The reference reaches the target faster": tokens(alternative) / tokens(reference) >= the
    hypothesis's claimed speed-up (the seed note's 8%: 1.08), or, with none claimed, above 1 + the
    margin, for every alternative fixed in the spec
    (:func:`ffnlab.experiments.analysis.verdicts.threshold_claim`)."""
    threshold = claimed if claimed is not None else 1 + spec.margin
    fam = conv.family
    ref = conv.reference
    unit = f"tokens(alternative) / tokens({ref}) to loss {conv.target_loss:.4f}"
    if fam is None:
        return _missing("-", unit, "no alternative fixed in the spec to compare tokens to the target with")
    alts = list(fam.decisions)
    comparison = f"{', '.join(alts)} vs {ref} (fixed in the spec)"
    ratios = {k: _given(conv.arms[k].tokens_ratio) for k in alts}
    if all(math.isnan(r[1]) for r in ratios.values()):
        d = fam.decisions[alts[0]]
        return _verdict("inconclusive", "no interval (fewer than two seeds per arm or no spread)" + d.advice(),
                        comparison, ratios[alts[0]], unit, math.nan, "none", fam.choice.why)
    verdict, k = vd.threshold_claim(ratios, threshold)
    r = ratios[k]
    d = fam.decisions[k]
    flops = _given(conv.arms[k].flops_ratio)
    text = (f"tokens to reach val loss {conv.target_loss:.4f} ({conv.target_rule}): {k} / {ref} = "
            f"{fmt_iv(r[0], r[1], r[2], 3, signed=False)} ({d.comparison.method} on log tokens, widened by the "
            f"interpolation between evaluations); training FLOPs "
            f"{fmt_iv(flops[0], flops[1], flops[2], 3, signed=False)}; "
            "the claim "
            f"needs >= {threshold:.2f}; this design detects a {_exp(d.mde80) - 1:.1%} change with 80% power")
    if verdict == "inconclusive":
        text += f" (the interval straddles {threshold:.2f})" + d.advice()
    return _verdict(verdict, text, comparison, r, unit, d.mde80, d.comparison.method, fam.choice.why, against=k)


def _given(ratio: tuple[float, float, float] | None) -> tuple[float, float, float]:
    """An alternative's ratio (every alternative of the family has one)."""
    assert ratio is not None, "an alternative of the family without its ratio"
    return ratio


def kaplan_curve(arms: list[ArmStats], reference: str) -> list[KaplanPoint]:
    """Loss of each arm of the reference's FFN kind relative to the reference fixed in the spec,
    against the raw ratio (the form of Kaplan et al. 2020, Fig. 5): mean(arm) / mean(reference)
    - 1 with Fieller's interval for a ratio of two means (both arms' variances)."""
    ref = next(a for a in arms if a.name == reference)
    rows = []
    for a in arms:
        if a.kind != ref.kind or not a.runs:
            continue
        if a.name == reference:
            rows.append(KaplanPoint(arm=a.name, ratio_raw=a.ratio_raw, loss_increase=0.0, lo=math.nan, hi=math.nan,
                                    reference=True))
            continue
        r, lo, hi = ratio_of_means(a.losses, ref.losses)
        rows.append(KaplanPoint(arm=a.name, ratio_raw=a.ratio_raw, loss_increase=r - 1, lo=lo - 1, hi=hi - 1,
                                reference=False))
    return sorted(rows, key=lambda x: x.ratio_raw)


class PowerTable(TypedDict, total=False):
    """The deciding test's power (:func:`power_table`), as the JSON shows it; empty without a family
    of comparisons."""

    model: str
    sigma: float
    df: int
    power: float
    mde80: dict[str, float]
    power_for: dict[str, dict[str, float]]


def power_table(fam: vd.Family | None, effects: dict[str, float]) -> PowerTable:
    """The deciding test's power: minimum detectable difference at 80% per comparison and the
    power for named effect sizes."""
    if fam is None:
        return {}
    return {"model": fam.choice.why, "sigma": fam.model.sigma, "df": fam.model.df, "power": POWER,
            "mde80": {k: d.mde80 for k, d in fam.decisions.items()},
            "power_for": {name: {k: d.power_for(eff) for k, d in fam.decisions.items()}
                          for name, eff in effects.items()}}


@dataclass(frozen=True)
class CellAnalysis:
    """Every analysis of one cell (:func:`analyse_arms`): the loss model's family of comparisons,
    the power table, the convergence, the Kaplan curve, the verdicts and the runs' maturity."""

    loss_model: vd.FamilyJSON | None
    power: PowerTable
    convergence: Convergence
    kaplan: list[KaplanPoint]
    claims: dict[str, ClaimVerdict]
    maturity: mt.CellMaturity


def analyse_arms(spec: SweepSpec, arms: list[ArmStats], record: SweepRecord) -> CellAnalysis:
    """Every analysis of one set of arms against ``spec.reference`` (one cell): a verdict on each
    hypothesis the spec names (as the record saved them:
    :func:`ffnlab.experiments.sweep.spec.saved_spec`), under its own margin and arms, and none on
    anything else. Without a ratio_optimal hypothesis the reference's comparisons are still
    computed, for the tables, and decide nothing."""
    reference = spec.reference
    hyps = {h.comparison: h for h in spec.hypotheses}
    claims: dict[str, ClaimVerdict] = {}
    fam = None
    if "ratio_optimal" in hyps:
        seed = hyps["ratio_optimal"].id == SEED_CLAIM_OF["ratio_optimal"]  # "ratio 4 is best"
        claims["ratio_optimal"], fam = verdict_ratio_optimal(arms, _spec_for(spec, hyps["ratio_optimal"]), seed)
    else:
        fam = _reference_family(arms, spec)
    conv_h = hyps.get("convergence_speed")
    conv = convergence(arms, _spec_for(spec, conv_h) if conv_h else spec, reference,
                       vocab_size=record.get("vocab_size"))
    if conv_h is not None:
        claims["convergence_speed"] = verdict_convergence(conv, arms, _spec_for(spec, conv_h),
                                                          conv_h.claimed_effect)
    for key in ("glu_vs_plain", "gated_law"):
        found = verdict_pair(arms, _spec_for(spec, hyps[key]), key) if key in hyps else None
        if found is not None:
            claims[key] = found
    claims = {k: replace(v, hypothesis=_said(hyps[k])) for k, v in claims.items()}
    m = run_maturity(spec, arms)
    claims = {k: gated(v, m) if k in mt.OPTIMAL_RATIO_CLAIMS else replace(v, maturity=m) for k, v in claims.items()}
    ro = hyps.get("ratio_optimal")
    effects = ({f"{ro.claimed_effect:g} nats ({ro.effect_source or 'the effect ' + ro.id + ' claims'})":
                float(ro.claimed_effect)} if ro is not None and ro.claimed_effect else {})
    return CellAnalysis(loss_model=fam.as_dict() if fam else None, power=power_table(fam, effects), convergence=conv,
                        kaplan=kaplan_curve(arms, reference), claims=claims, maturity=m)


def _spec_for(spec: SweepSpec, hypothesis: Hypothesis) -> SweepSpec:
    """The spec as one hypothesis decides it: its margin, and its arms for its comparison."""
    out = spec
    if hypothesis.margin is not None:
        out = replace(out, margin=hypothesis.margin)
    if hypothesis.arms:
        prefix = spec.reference.rsplit(".", 1)[0] + "." if "." in spec.reference else ""
        arms = [a if a.startswith(prefix) else prefix + a for a in hypothesis.arms]
        out = replace(out, comparisons={**spec.comparisons, hypothesis.comparison: arms})
    return out


def _said(h: Hypothesis) -> StatedHypothesis:
    """A hypothesis as a verdict carries it: the spec's words, kept with the verdict."""
    return StatedHypothesis(id=h.id, sentence=h.sentence, claimed_effect=h.claimed_effect,
                            effect_source=h.effect_source, margin=h.margin)


def _reference_family(arms: list[ArmStats], spec: SweepSpec) -> vd.Family | None:
    """Each same-kind alternative against the reference, for the comparisons table of a spec with
    no ratio_optimal hypothesis (it decides no verdict)."""
    reference = spec.reference
    ref = next((a for a in arms if a.name == reference), None)
    alts = alternatives(spec, arms, "ratio_optimal") if ref is not None else []
    if ref is None or not alts or len(ref.losses) < 2:
        return None
    return vd.decide_family("final validation loss", groups(arms), reference, alts, margin_of(spec, ref.mean_loss))


def run_maturity(spec: SweepSpec, arms: list[ArmStats]) -> mt.CellMaturity:
    """The maturity of one cell's kept runs against the spec's (``maturity``, default 20)."""
    progress = [mt.RunProgress(tokens=int(r.summary.get("tokens") or 0), params=a.params_non_embedding,
                               steps=0, planned_steps=0, curve=tuple(zip(map(int, r.tokens), r.losses, strict=True)))
                for a in arms for r in a.runs]
    return mt.cell_maturity(progress, float(spec.maturity))


def cell_spec(spec: SweepSpec, name: str) -> SweepSpec:
    """The spec of one cell of a scale sweep: its reference and comparisons named "SCALE.ARM"."""
    prefix = f"{name}."
    return replace(spec, reference=prefix + spec.reference, scales=[],
                   comparisons={k: [prefix + x for x in v] for k, v in spec.comparisons.items()})


@dataclass(frozen=True)
class TrendVertex(Result):
    """One cell's best log2 ratio on a trend, with its standard error (the delta method)."""

    log2_axis: float
    log2_best_ratio: float
    se: float


@dataclass(frozen=True)
class Segment(Result):
    """The change of the best log2 ratio per doubling between two cells alone
    (:func:`ffnlab.experiments.analysis.trend.segment`)."""

    scales: tuple[str, str]
    slope: float
    lo: float
    hi: float
    no_minimum_share: float
    cells: int


@dataclass(frozen=True)
class EqualTokens(Result):
    """Two cells trained on the same tokens at different sizes, smaller first, and the segment
    between them along parameters (:func:`equal_token_pairs`)."""

    scales: tuple[str, str]
    tokens: int
    slope: float
    lo: float
    hi: float
    no_minimum_share: float
    cells: int


@dataclass(frozen=True)
class CellResult(tr.BestRatio):
    """One cell of a scale sweep: its best ratio (:func:`ffnlab.experiments.analysis.trend.best_ratio`),
    then its name, its verdicts (and the verdicts themselves), Kaplan curve, loss model and maturity."""

    scale: str
    verdicts: dict[str, Verdict]
    claims: dict[str, ClaimVerdict]
    kaplan: list[KaplanPoint]
    loss_model: vd.FamilyJSON | None
    maturity: mt.CellMaturity


@dataclass(frozen=True)
class TrendResult(Result):
    """One pre-registered trend decided (:func:`trends`): its name, axis and cells, the weighted
    trend (:class:`ffnlab.experiments.analysis.trend.WeightedTrend`), the verdict and its evidence,
    the slope margin, the unweighted joint fit (``joint``), the adjacent segments and whether they
    lie on one line, the maturity of its least trained cell and, where that made a decided verdict
    inconclusive, what it would say (``verdict_if_mature``, with the reason first in ``finding``)."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"verdict_if_mature", "finding"})

    name: str
    axis: str
    scales: tuple[str, ...]
    slope: float
    lo: float
    hi: float
    se: float
    cells: int
    homogeneity_q: float
    homogeneity_df: int
    homogeneity_p: float
    misfit_q: float
    misfit_df: int
    misfit_p: float
    widened: bool
    vertices: tuple[TrendVertex, ...]
    verdict: Verdict
    evidence: str
    margin: float
    joint: tr.Slope
    segments: tuple[Segment, ...]
    straight: bool | None
    maturity: mt.CellMaturity
    verdict_if_mature: Verdict | None = None
    finding: str | None = None


def _segment(scales: tuple[str, str], s: tr.Slope) -> Segment:
    return Segment(scales=scales, slope=s.slope, lo=s.lo, hi=s.hi, no_minimum_share=s.no_minimum_share,
                   cells=s.cells)


def _gated_trend(t: TrendResult) -> TrendResult:
    """A trend verdict under its maturity, as :func:`gated` gates a verdict on an optimal ratio."""
    m = t.maturity
    if m.mature or t.verdict in ("inconclusive", "needs-experiment"):
        return t
    reason = mt.immature_reason(m, t.verdict)
    return replace(t, verdict="inconclusive", verdict_if_mature=t.verdict, evidence=reason + t.evidence,
                   finding=reason + t.evidence)


def trends(spec: SweepSpec, cells: dict[str, CellResult], cell_arms: dict[str, list[ArmStats]]) -> list[TrendResult]:
    """Each trend of ``spec.trends``: whether the cells' best ratios are constant (homogeneity)
    and how they move per doubling of the axis (weighted slope, widened for misfit), with the
    verdict on "the best ratio does not change" (:func:`ffnlab.experiments.analysis.trend.trend_verdict`);
    the unweighted joint fit as a sensitivity analysis (``joint``) and, as a diagnostic, the slope
    between each pair of adjacent cells (``segments``)."""
    out = []
    for t in spec.trends:
        pts = [_trend_point(spec, cells, cell_arms, name, t.axis) for name in t.scales]
        w = tr.weighted_trend(pts)
        joint = tr.slope(pts)
        segments = tuple(_segment((a, b), tr.segment(pa, pb))
                         for (a, pa), (b, pb) in itertools.pairwise(zip(t.scales, pts, strict=True)))
        least = min((cells[n].maturity for n in t.scales), key=lambda m: m.tokens_per_param or 0.0)
        out.append(_gated_trend(TrendResult(
            name=t.name, axis=t.axis, scales=tuple(t.scales), slope=w.slope, lo=w.lo, hi=w.hi, se=w.se,
            cells=w.cells, homogeneity_q=w.homogeneity_q, homogeneity_df=w.homogeneity_df,
            homogeneity_p=w.homogeneity_p, misfit_q=w.misfit_q, misfit_df=w.misfit_df, misfit_p=w.misfit_p,
            widened=w.widened, vertices=tuple(TrendVertex(z, v, e) for z, v, e in w.vertices),
            verdict=tr.trend_verdict(w), evidence=trend_evidence(t, w, joint), margin=tr.SLOPE_MARGIN, joint=joint,
            segments=segments, straight=_on_one_line(segments),
            maturity=least)))
    return out


def trend_evidence(t: Trend, w: tr.WeightedTrend, joint: tr.Slope) -> str:
    """One sentence per finding of a trend: constant or not, the weighted slope, the sensitivity."""
    axis = AXIS_WORDS[t.axis]
    verts = ", ".join(f"{name} {v:+.2f} +/- {e:.2f}" if math.isfinite(v) and math.isfinite(e) else
                      f"{name} no significant minimum" for name, (_, v, e) in zip(t.scales, w.vertices, strict=True))
    if math.isfinite(w.homogeneity_p):
        constant = ("not constant" if w.homogeneity_p < tr.HOMOGENEITY_ALPHA else "not shown to differ")
        ev = (f"the cells' best log2 ratios ({verts}) are {constant} along {axis} (Cochran's Q = "
              f"{w.homogeneity_q:.1f} on {w.homogeneity_df} df, p = {w.homogeneity_p:.2g})")
    else:
        ev = f"the cells' best log2 ratios ({verts}): too few cells with a minimum to compare"
    ev += (f"; precision-weighted slope {fmt_iv(w.slope, w.lo, w.hi, 3)} per doubling of {axis}")
    if w.misfit_df > 0:
        ev += (f" (misfit about the line Q = {w.misfit_q:.1f} on {w.misfit_df} df, p = {w.misfit_p:.2g}"
               + (f": interval widened by sqrt(Q/df) = {math.sqrt(w.misfit_q / w.misfit_df):.2f}, t on "
                  f"{w.misfit_df} df)" if w.widened else ")"))
    ev += (f"; the claim needs the cells not to differ and the slope within +/-{tr.SLOPE_MARGIN} per doubling; "
           f"sensitivity, the unweighted joint fit of every run (global minimum): "
           f"{fmt_iv(joint.slope, joint.lo, joint.hi, 3)}")
    return ev


AXIS_WORDS = {"params": "parameters", "tokens_per_param": "tokens per parameter", "lr": "the learning rate"}


def _trend_point(spec: SweepSpec, cells: Mapping[str, tr.BestRatio], cell_arms: dict[str, list[ArmStats]],
                 name: str, axis: str) -> tuple[float, np.ndarray, np.ndarray]:
    c = cells[name]
    ref = next(a for a in cell_arms[name] if a.name == f"{name}.{spec.reference}")
    x, y = tr.cell_points(cell_arms[name], ref.kind)
    values: dict[str, Callable[[], float]] = {"params": lambda: c.params_non_embedding,
                                              "tokens_per_param": lambda: (c.tokens or 0) / c.params_non_embedding,
                                              "lr": lambda: _cell_lr(spec, name)}
    return float(values[axis]()), x, y


def _cell_lr(spec: SweepSpec, name: str) -> float:
    """A cell's peak learning rate: its scale's ``train.lr``, else the base's, else the default."""
    from ffnlab.training.runconfig import TrainSection

    scale = next(s for s in spec.scales if s.name == name)
    base = spec.base.get("train") or {}
    lr = scale.train.get("lr", base.get("lr", TrainSection.lr))
    assert isinstance(lr, (int, float)), f"scale {name}: train.lr {lr!r} is not a number"  # runconfig checked it
    return float(lr)


def _on_one_line(segments: Sequence[Segment]) -> bool | None:
    """False when two segments' intervals are disjoint (the vertices are not on one line), True
    when every pair overlaps, None with fewer than two bounded segments."""
    bounded = [s for s in segments if math.isfinite(s.lo) and math.isfinite(s.hi)]
    if len(bounded) < 2:
        return None
    return all(a.lo <= b.hi and b.lo <= a.hi for i, a in enumerate(bounded) for b in bounded[i + 1:])


def equal_token_pairs(spec: SweepSpec, cells: Mapping[str, tr.BestRatio],
                      cell_arms: dict[str, list[ArmStats]]) -> list[EqualTokens]:
    """Cells trained on the same tokens (hence the same steps) at different sizes, smaller first:
    the slope between them along parameters isolates size from training length. A diagnostic
    found in the data, not a pre-registered comparison."""
    out = []
    for a, b in itertools.combinations([s.name for s in spec.scales], 2):
        ca, cb = cells[a], cells[b]
        if ca.tokens and ca.tokens == cb.tokens and ca.params_non_embedding != cb.params_non_embedding:
            small_name, big_name = sorted((a, b), key=lambda n: cells[n].params_non_embedding)
            small, big = (_trend_point(spec, cells, cell_arms, n, "params") for n in (small_name, big_name))
            s = tr.segment(small, big)
            out.append(EqualTokens(scales=(small_name, big_name), tokens=ca.tokens, slope=s.slope, lo=s.lo, hi=s.hi,
                                   no_minimum_share=s.no_minimum_share, cells=s.cells))
    return out


def pair_decisions(claims: Mapping[str, ClaimVerdict]) -> list[vd.DecisionJSON]:
    """The deciding comparison of each planned pair among ``claims`` (glu_vs_plain, gated_law)."""
    return [v.numbers.decision for v in claims.values() if v.numbers is not None and v.numbers.decision is not None]


def decisions(loss_model: vd.FamilyJSON | None, claims: Mapping[str, ClaimVerdict]) -> list[vd.DecisionJSON]:
    """Every comparison that decided a claim of one cell: the loss model's family, then the pairs."""
    return [*(loss_model["comparisons"] if loss_model is not None else []), *pair_decisions(claims)]


@dataclass(frozen=True)
class Analysis(Result):
    """The whole analysis of a finished sweep (:func:`analyse`); ``as_dict()`` is ``results.json``
    less its provenance. The figures are typed results (frozen dataclasses; the loss model, the
    power table and the saved spec and record as the TypedDicts of their JSON objects); ``sweep``
    holds the spec as the analysis read it and ``arm_objects`` the arms themselves (for the
    figures), neither in the JSON.

    The headline figures (``loss_model`` to ``maturity``) are those of the deciding cell."""

    NOT_JSON: ClassVar[frozenset[str]] = frozenset({"sweep", "arm_objects"})

    spec: SavedSpec  # as the record saved it
    record: SweepRecord
    sweep: SweepSpec  # the spec as the analysis read it (:func:`ffnlab.experiments.sweep.spec.saved_spec`)
    reference: str  # the deciding cell's reference arm
    arms: list[ArmRow]  # :func:`arm_table`
    excluded: list[ExcludedRun]  # :func:`excluded_runs`
    arm_objects: tuple[ArmStats, ...]
    cells: list[CellResult]  # each cell's best ratio and verdicts (a scale sweep)
    trends: list[TrendResult]  # :func:`trends`
    equal_tokens: list[EqualTokens]  # :func:`equal_token_pairs`
    scale: SweepScale  # :func:`scale`
    loss_model: vd.FamilyJSON | None
    power: PowerTable
    convergence: Convergence
    kaplan: list[KaplanPoint]
    claims: dict[str, ClaimVerdict]
    maturity: mt.CellMaturity


def analyse(sweep_dir: str | Path) -> Analysis:
    """The whole analysis of a finished sweep. With ``scales`` in the spec, every cell is analysed
    on its own; the headline verdicts are those of ``decide_at`` (default: the last cell), ``cells``
    holds every cell's best ratio and verdicts, and ``trends`` the pre-registered trends."""
    record, arms = load(sweep_dir)
    spec = replace(saved_spec(record["spec"]), seeds=record_seeds(record))
    scales = spec.scales
    decide_at = str(spec.decide_at or (scales[-1].name if scales else ""))
    reference = f"{decide_at}.{spec.reference}" if scales else spec.reference
    if not scales:
        return _analysis(record, spec, arms, reference, analyse_arms(spec, arms, record),
                         scale(record, arms, reference))
    cells: dict[str, CellResult] = {}
    cell_arms: dict[str, list[ArmStats]] = {}
    decided: CellAnalysis | None = None
    for sc in scales:
        sub = cell_spec(spec, sc.name)
        sub_arms = [a for a in arms if a.name.startswith(f"{sc.name}.")]
        found = analyse_arms(sub, sub_arms, record)
        best = tr.best_ratio(sub_arms, sub.reference)
        cells[sc.name] = CellResult(
            params_non_embedding=best.params_non_embedding, d_model=best.d_model, tokens=best.tokens,
            best_ratio=best.best_ratio, lo=best.lo, hi=best.hi, shape=best.shape, runs=best.runs,
            lack_of_fit_p=best.lack_of_fit_p, lack_of_fit_df=best.lack_of_fit_df, tested=best.tested,
            inside_tested=best.inside_tested, scale=sc.name, verdicts={k: v.verdict for k, v in found.claims.items()},
            claims=found.claims, kaplan=found.kaplan, loss_model=found.loss_model, maturity=found.maturity)
        cell_arms[sc.name] = sub_arms
        if sc.name == decide_at:
            decided = found
    assert decided is not None, f"decide_at {decide_at!r} names no scale of the spec"  # checked when the spec was read
    return _analysis(record, spec, arms, reference, decided, scale(record, cell_arms[decide_at], reference),
                     cells=list(cells.values()), trends=trends(spec, cells, cell_arms),
                     equal_tokens=equal_token_pairs(spec, cells, cell_arms))


def _analysis(record: SweepRecord, spec: SweepSpec, arms: list[ArmStats], reference: str, headline: CellAnalysis,
              scale: SweepScale, *, cells: list[CellResult] | None = None,
              trends: list[TrendResult] | None = None,
              equal_tokens: list[EqualTokens] | None = None) -> Analysis:
    """The :class:`Analysis` of a sweep's arms, its headline figures those of the deciding cell."""
    return Analysis(spec=record["spec"], record=record, sweep=spec, reference=reference, arms=arm_table(arms),
                    excluded=excluded_runs(arms), arm_objects=tuple(arms), cells=cells or [], trends=trends or [],
                    equal_tokens=equal_tokens or [], scale=scale, loss_model=headline.loss_model,
                    power=headline.power, convergence=headline.convergence, kaplan=headline.kaplan,
                    claims=headline.claims, maturity=headline.maturity)


@dataclass(frozen=True)
class SweepScale(Result):
    """What a sweep's numbers are about (:func:`scale`): the reference arm's size, its training
    tokens per run and per non-embedding parameter, its bits per byte, the tokens between
    evaluations; where the corpus sizes are known (its prepared folder, or the sizes a report folder
    keeps), the split sizes and the epochs of the training split; where the runs evaluate a fixed
    number of tokens, the validation windows, their tokens and their share of the split. The keys
    of a part not known are absent from the JSON object."""

    CORPUS: ClassVar[frozenset[str]] = frozenset({"train_tokens", "val_tokens", "epochs"})
    EVALUATION: ClassVar[frozenset[str]] = frozenset({"eval_windows", "eval_tokens", "eval_share"})

    params_non_embedding: int
    params_total: int | None
    tokens_per_run: int | None
    tokens_per_param: float | None
    bits_per_byte: float | None
    eval_every_tokens: int | None
    train_tokens: int | None = None  # None: the corpus sizes are not known (nor the epochs)
    val_tokens: int | None = None
    epochs: float | None = None
    eval_windows: int | None = None  # None: no fixed evaluation (nor its tokens and share)
    eval_tokens: int | None = None
    eval_share: float | None = None

    def _shown(self, name: str) -> bool:
        if name in self.CORPUS:
            return self.train_tokens is not None
        if name in self.EVALUATION:
            return self.eval_windows is not None
        return True


def scale(record: SweepRecord, arms: list[ArmStats], reference: str) -> SweepScale:
    """What this sweep's numbers are about: model size, tokens per parameter, epochs, evaluation."""
    from ffnlab.errors import FfnlabError
    from ffnlab.training.corpus import eval_starts, load_prepared

    ref = next(a for a in arms if a.name == reference)
    first = ref.runs[0].summary if ref.runs else {}
    tokens = first.get("tokens")
    ref_run = next((r for r in record["runs"] if r["arm"] == reference), None)
    train = (ref_run["config"].get("train") if ref_run is not None else None) or record["spec"]["base"].get("train", {})
    out = SweepScale(params_non_embedding=ref.params_non_embedding,
                     params_total=(first.get("params") or {}).get("total"), tokens_per_run=tokens,
                     tokens_per_param=tokens / ref.params_non_embedding if tokens else None,
                     bits_per_byte=mean_ci(ref.values("final_val_bpb"))[0] if ref.runs else None,
                     eval_every_tokens=(train.get("eval_every", 0) * train.get("batch_size", 0)
                                        * train.get("seq_len", 0)) or None)
    kept = record.get("data_summary") or {}  # a report folder keeps the corpus sizes, not the corpus
    try:
        data = load_prepared(record.get("prepared_data", ""))
        train_tokens, val_tokens = data.train_tokens, data.val_tokens
    except (FfnlabError, OSError, KeyError, ValueError):
        if not {"train_tokens", "val_tokens"} <= set(kept):
            return out
        train_tokens, val_tokens = int(kept["train_tokens"]), int(kept["val_tokens"])
    seq, ev = int(train.get("seq_len", 0)), int(train.get("eval_tokens", 0))
    out = replace(out, train_tokens=train_tokens, val_tokens=val_tokens,
                  epochs=tokens / train_tokens if tokens else None)
    if seq and ev:
        n = len(eval_starts(val_tokens, seq, ev))
        out = replace(out, eval_windows=n, eval_tokens=n * seq, eval_share=n * seq / val_tokens)
    return out
