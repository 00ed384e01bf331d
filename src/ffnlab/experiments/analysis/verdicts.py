"""The one verdict engine: every outcome (final loss, log tokens to a target, bits per parameter)
and every comparison goes through :func:`decide_family` (many arms against a reference) or
:func:`decide_pair` (one planned pair), then one claim rule.

**The model (fixed before any run).** The variance is pooled over the arms only when every arm
has at least :data:`MIN_SEEDS_TO_POOL` seeds, the arms' sample standard deviations lie within a
factor :data:`MAX_SD_RATIO` of each other, and Levene's test does not reject equal variances;
otherwise each comparison uses Welch's t on its own two arms (Bonferroni over a family). With
fewer seeds Levene's test cannot see even a 3:1 spread (it rejects 0% of the time at 3 seeds,
26% at 8, 73% at 10, simulated), so pooling there would lean on an untested assumption; Welch's
intervals hold their coverage whether or not the variances are equal. Simulated at 10 seeds
(2,000 sweeps per case, ``benchmarks/stats_coverage.py``, kept in
``benchmarks/results/stats-coverage.json``), the family's intervals cover the truth in 95.6% of
sweeps with equal spreads and 94.0-95.2% with one arm 1.5-3x as spread.

**The rule (one for every claim).** For each difference ``first - second`` with its deciding 95%
interval and the equivalence test (TOST) against the spec's margin:

* ``equivalent``: TOST shows |difference| < margin, and the interval includes 0;
* ``negligible``: TOST shows |difference| < margin, and the interval excludes 0 (real but
  smaller than the margin): the equivalence test runs before any difference is called real;
* ``lower`` / ``higher``: the interval excludes 0 and TOST does not show equivalence;
* ``inconclusive``: neither; the decision says how many seeds per arm would decide.

Each claim maps these outcomes to a verdict (true, false, misleading, inconclusive) in one
table (:data:`FIRST_BETTER`, :data:`AS_MUCH`, :func:`reference_best`); a negligible difference is
read with its sign: a real but negligible gain in the claimed direction is ``misleading``, a
negligible difference the other way is no gain (``false``). The power, minimum detectable effect
and seed advice of a decision come from the test that decided it (:mod:`ffnlab.experiments.analysis.power`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypedDict

from ffnlab.experiments.analysis import power as pw
from ffnlab.experiments.analysis.stats import (
    POWER,
    Comparison,
    Equivalence,
    PooledModel,
    dunnett_vs_reference,
    pooled_model,
    pooled_pair,
    tost,
    welch_pair,
    welch_vs_reference,
)
from ffnlab.experiments.fmt import interval as fmt_iv
from ffnlab.experiments.fmt import num
from ffnlab.sizing.verdicts import Verdict


class SensitivityJSON(TypedDict):
    """A sensitivity interval of a decision (the other variance model's), as the JSON shows it."""

    method: str
    interval: list[float]


class DecisionJSON(TypedDict):
    """A :class:`Decision` as ``results.json`` and ``claims.json`` show it (:meth:`Decision.as_dict`)."""

    first: str
    second: str
    diff: float
    interval: list[float]
    method: str
    se: float
    df: float
    critical: float
    p: float
    outcome: str
    margin: float
    tost_p: float
    tost_interval: list[float]
    mde80: float
    seeds_to_detect: int | None
    seeds_for_equivalence: int | None
    sensitivity: list[SensitivityJSON]


class FamilyJSON(TypedDict):
    """A :class:`Family` as the JSON shows it (:meth:`Family.as_dict`): the loss model of a cell."""

    outcome: str
    reference: str
    model: dict[str, float | int]
    pooled: bool
    why: str
    comparisons: list[DecisionJSON]

MIN_SEEDS_TO_POOL = 10  # the pre-registered pooling rule (module docstring)
MAX_SD_RATIO = 2.0  # ... and the arms' sample standard deviations within this factor of each other
ALPHA = 0.05


@dataclass(frozen=True)
class ModelChoice:
    """Which variance model decides, and why (the page prints ``why``)."""

    pooled: bool
    why: str
    levene_p: float
    bartlett_p: float


def _p(p: float) -> str:
    return "untestable (an arm has no spread)" if math.isnan(p) else f"{p:.3g}"


def choose_model(model: PooledModel, fewest: int | None = None) -> ModelChoice:
    """The pre-registered rule: pool only with >= MIN_SEEDS_TO_POOL seeds in every arm, the arms'
    sample standard deviations within MAX_SD_RATIO of each other, and no rejection by Levene's test.
    ``fewest``: the seeds of the arm with the fewest, named in the reason where ``model`` holds only
    the arms with two or more (the rule itself reads ``model``)."""
    n_min = min(model.counts.values()) if model.counts else 0
    lev, bart = model.levene_p, model.bartlett_p
    sds = [model.sd(k) for k in model.groups]
    ratio = max(sds) / min(sds) if sds and min(sds) > 0 else math.inf
    if n_min < 3:
        # the arm with the fewest seeds, which ``model`` may have set aside (one seed: no spread)
        why = (f"Welch: an arm has {n_min if fewest is None else fewest} seed(s), too few to test equal variances "
               f"(Levene's test needs "
               "3 per arm), so no variance is pooled")
    elif n_min < MIN_SEEDS_TO_POOL:
        why = (f"Welch: {n_min} seeds per arm are too few for Levene's test to detect unequal variances "
               f"(the rule pools only with >= {MIN_SEEDS_TO_POOL}); Levene p = {_p(lev)}")
    elif lev < 0.05:
        why = f"Welch: Levene's test rejects equal variances (p = {lev:.3g}; Bartlett p = {_p(bart)})"
    elif math.isnan(lev):
        why = "Welch: equal variances could not be tested (an arm has no spread)"
    elif ratio > MAX_SD_RATIO:
        why = (f"Welch: the arms' standard deviations differ {ratio:.2g}-fold (the rule pools only within "
               f"{MAX_SD_RATIO:g}x), although Levene's test does not reject (p = {lev:.3g})")
    else:
        why = (f"pooled: {n_min}+ seeds per arm and Levene's test finds no evidence against equal variances "
               f"(p = {lev:.3g}; Bartlett p = {_p(bart)})")
        return ModelChoice(True, why, lev, bart)
    return ModelChoice(False, why, lev, bart)


@dataclass
class Decision:
    """One difference ``first - second``: the deciding interval, the equivalence test, the outcome
    under the one rule, and the power of the deciding test (the seed counts are computed when
    first asked for: each is a search over n)."""

    first: str
    second: str
    comparison: Comparison
    equivalence: Equivalence
    margin: float
    alpha: float
    outcome: str  # lower, higher, equivalent, negligible, inconclusive, no-interval
    design: pw.TestDesign | None
    n: int
    sensitivity: tuple[Comparison, ...] = ()

    @property
    def interval(self) -> list[float]:
        return self.comparison.as_list()

    @cached_property
    def mde80(self) -> float:
        """The smallest true difference the deciding test detects with 80% power at this design."""
        return pw.mde(self.design, self.n) if self.design and self.n >= 2 else math.nan

    @cached_property
    def seeds_to_detect(self) -> int | None:
        """Seeds per arm at which the deciding test detects the observed difference with 80% power."""
        if self.design is None or self.outcome != "inconclusive":
            return None
        return pw.seeds_for(self.design, self.comparison.diff)

    @cached_property
    def seeds_for_equivalence(self) -> int | None:
        """Seeds per arm at which TOST shows equivalence with 80% power if the true difference is 0."""
        if self.design is None or self.outcome != "inconclusive":
            return None
        return pw.seeds_for_equivalence(self.design, self.margin, self.alpha)

    def power_for(self, effect: float) -> float:
        """Power of the deciding test at this design for a true difference ``effect``."""
        return pw.power(self.design, self.n, effect) if self.design else math.nan

    def advice(self) -> str:
        """What would decide it, by exact power at the new seed count with the same test."""
        if self.outcome not in ("inconclusive", "no-interval"):
            return ""
        parts = []
        if self.seeds_to_detect:
            parts.append(f"{self.seeds_to_detect} seeds per arm would detect the observed "
                         f"{abs(self.comparison.diff):.4g} with 80% power")
        if self.seeds_for_equivalence:
            parts.append(f"{self.seeds_for_equivalence}{'' if parts else ' seeds per arm'} would show equivalence "
                         f"within +/-{self.margin:.4g} with 80% power if the true difference is 0")
        if not parts:
            return "; run more seeds per arm"
        return "; " + " and ".join(parts) + " (exact power, same test)"

    def as_dict(self) -> DecisionJSON:
        c = self.comparison
        return {"first": self.first, "second": self.second, "diff": c.diff, "interval": [c.lo, c.hi],
                "method": c.method, "se": c.se, "df": c.df, "critical": c.critical, "p": c.p,
                "outcome": self.outcome, "margin": self.margin, "tost_p": self.equivalence.p,
                "tost_interval": [self.equivalence.lo, self.equivalence.hi], "mde80": self.mde80,
                "seeds_to_detect": self.seeds_to_detect, "seeds_for_equivalence": self.seeds_for_equivalence,
                "sensitivity": [{"method": s.method, "interval": [s.lo, s.hi]} for s in self.sensitivity]}


def outcome_of(c: Comparison, eq: Equivalence) -> str:
    """The one rule (module docstring)."""
    if not c.has_interval:
        return "no-interval"
    if eq.equivalent:
        return "negligible" if c.decided else "equivalent"
    if c.decided:
        return "lower" if c.hi < 0 else "higher"
    return "inconclusive"


def _design(c: Comparison, pooled: bool, sds: tuple[float, float], k: int, arms: int) -> pw.TestDesign | None:
    if not c.has_interval:
        return None
    if pooled:
        method = "dunnett" if k > 1 else "pooled-t"
        return pw.TestDesign(method, sds[0], sds[1], comparisons=k, arms=arms)
    return pw.TestDesign("welch", sds[0], sds[1], comparisons=k)


def _decide(first: str, second: str, c: Comparison, design: pw.TestDesign | None, n: int, margin: float,
            alpha: float, sensitivity: tuple[Comparison, ...]) -> Decision:
    eq = tost(c.diff, c.se, c.df, margin, alpha) if c.has_interval else tost(c.diff, math.nan, math.nan, margin)
    return Decision(first, second, c, eq, margin, alpha, outcome_of(c, eq), design, n, sensitivity)


@dataclass
class Family:
    """One outcome's comparisons of ``alternatives`` against ``reference``."""

    outcome: str
    reference: str
    model: PooledModel
    choice: ModelChoice
    decisions: dict[str, Decision] = field(default_factory=dict)

    @property
    def method(self) -> str:
        return self.choice.why

    def as_dict(self) -> FamilyJSON:
        return {"outcome": self.outcome, "reference": self.reference, "model": self.model.summary(),
                "pooled": self.choice.pooled, "why": self.choice.why,
                "comparisons": [d.as_dict() for d in self.decisions.values()]}


def decide_family(outcome: str, groups: Mapping[str, Sequence[float]], reference: str,
                  alternatives: Sequence[str], margin: float, sensitivity: bool = True) -> Family:
    """``alternatives`` against ``reference``: Dunnett on the pooled variance of those arms when the
    rule allows, else Welch with Bonferroni; TOST at alpha / k; outcome and power per arm. With
    ``sensitivity`` the interval of the other model is kept beside the deciding one."""
    used = [reference, *alternatives]
    usable = {k: groups[k] for k in used if len(groups[k]) >= 2}
    model = pooled_model(usable)
    choice = choose_model(model, min(len(groups[k]) for k in used))
    k = len(alternatives)
    alpha = ALPHA / max(1, k)
    dunnett = (dunnett_vs_reference(model, reference, [a for a in alternatives if a in usable])
               if reference in usable and (choice.pooled or sensitivity) else {})
    welch = welch_vs_reference(groups, reference, alternatives)
    fam = Family(outcome, reference, model, choice)
    for arm in alternatives:
        n = min(len(groups[arm]), len(groups[reference]))
        pooled_c = dunnett.get(arm, Comparison(arm, welch[arm].diff))
        sens: tuple[Comparison, ...]
        if choice.pooled:
            c, sens = pooled_c, (welch[arm],)
            sds = (model.sigma, model.sigma)
        else:
            c, sens = welch[arm], ((pooled_c,) if pooled_c.has_interval else ())
            sds = (model.sd(arm) if arm in usable else math.nan,
                   model.sd(reference) if reference in usable else math.nan)
        fam.decisions[arm] = _decide(arm, reference, c, _design(c, choice.pooled, sds, k, k + 1), n, margin,
                                     alpha, sens)
    return fam


def decide_pair(outcome: str, groups: Mapping[str, Sequence[float]], first: str, second: str,
                margin: float) -> tuple[Decision, ModelChoice]:
    """One planned comparison ``first - second``: a t interval on the variance pooled over every
    arm of ``groups`` when the rule allows, else Welch's on the pair; TOST at alpha."""
    usable = {k: v for k, v in groups.items() if len(v) >= 2}
    model = pooled_model(usable)
    choice = choose_model(model, min((len(v) for v in groups.values()), default=0))
    welch = welch_pair(groups[first], groups[second], name=first)
    n = min(len(groups[first]), len(groups[second]))
    pooled_c = (pooled_pair(model, first, second) if first in usable and second in usable
                else Comparison(first, welch.diff))
    sens: tuple[Comparison, ...]
    if choice.pooled:
        c, sens, sds = pooled_c, (welch,), (model.sigma, model.sigma)
    else:
        c, sens = welch, ((pooled_c,) if pooled_c.has_interval else ())
        sds = (model.sd(first) if first in usable else math.nan, model.sd(second) if second in usable else math.nan)
    return _decide(first, second, c, _design(c, choice.pooled, sds, 1, len(usable)), n, margin, ALPHA,
                   sens), choice


# -- claim rules: outcomes -> verdicts --------------------------------------------------------

def signed(d: Decision, higher_is_better: bool = False) -> str:
    """The outcome as "lower is better" reads it: a negligible difference is named by its sign
    ("negligible-lower" / "negligible-higher"), and with ``higher_is_better`` the sign flips."""
    out, diff = d.outcome, d.comparison.diff * (-1 if higher_is_better else 1)
    if higher_is_better:
        out = {"lower": "higher", "higher": "lower"}.get(out, out)
    if out == "negligible":
        return "negligible-lower" if diff < 0 else "negligible-higher"
    return out


# "first beats second": a real but negligible gain is misleading; a negligible loss is no gain
FIRST_BETTER: dict[str, Verdict] = {"lower": "true", "higher": "false", "equivalent": "false",
                                    "negligible-lower": "misleading", "negligible-higher": "false",
                                    "inconclusive": "inconclusive", "no-interval": "inconclusive"}
# "first is as good as second": within the margin either way is as good
AS_MUCH: dict[str, Verdict] = {"lower": "true", "higher": "false", "equivalent": "true", "negligible-lower": "true",
                               "negligible-higher": "true", "inconclusive": "inconclusive",
                               "no-interval": "inconclusive"}


def reference_best(decisions: Mapping[str, Decision], higher_is_better: bool = False) -> tuple[Verdict, str]:
    """"The reference beats every alternative" (decisions are alternative - reference): false if
    an alternative is better, equivalent, or better by a negligible amount; true if every one is
    worse; misleading if every one is worse and at least one only negligibly; otherwise
    inconclusive. Returns (verdict, the alternative that decides it)."""
    out = {k: signed(d, higher_is_better) for k, d in decisions.items()}
    diffs = {k: d.comparison.diff * (-1 if higher_is_better else 1) for k, d in decisions.items()}
    better = [k for k, o in out.items() if o == "lower"]
    if better:
        return "false", min(better, key=lambda k: diffs[k])
    equal = [k for k, o in out.items() if o in ("equivalent", "negligible-lower")]
    if equal:
        return "false", equal[0]
    if out and all(o in ("higher", "negligible-higher") for o in out.values()):
        tiny = [k for k, o in out.items() if o == "negligible-higher"]
        return ("misleading", tiny[0]) if tiny else ("true", min(out, key=lambda k: diffs[k]))
    open_ = [k for k, o in out.items() if o not in ("higher", "negligible-higher")]
    return "inconclusive", min(open_, key=lambda k: diffs[k]) if open_ else next(iter(out), "")


def first_better(decision: Decision, higher_is_better: bool = False) -> Verdict:
    """"first beats second" (lower is better unless ``higher_is_better``)."""
    return FIRST_BETTER[signed(decision, higher_is_better)]


def as_much(decision: Decision, higher_is_better: bool = True) -> Verdict:
    """"first is as good as second": equivalent within the margin, or better."""
    return AS_MUCH[signed(decision, higher_is_better)]


def threshold_claim(ratios: Mapping[str, Sequence[float]], threshold: float) -> tuple[Verdict, str]:
    """"Every alternative's ratio is >= threshold" on (point, lo, hi) intervals: false if some upper
    bound is below it, true if every lower bound is at or above it, else inconclusive."""
    below = [k for k, r in ratios.items() if r[2] < threshold]
    if below:
        return "false", min(below, key=lambda k: ratios[k][2])
    if ratios and all(r[1] >= threshold for r in ratios.values()):
        return "true", min(ratios, key=lambda k: ratios[k][1])
    open_ = [k for k, r in ratios.items() if not r[1] >= threshold]
    return "inconclusive", min(open_, key=lambda k: ratios[k][0]) if open_ else ""


def finding(d: Decision, digits: int = 4) -> str:
    """What a decision shows, without its interval: the outcome, the power, the seed advice."""
    tail = {"lower": "lower", "higher": "higher", "equivalent": f"equivalent within +/-{d.margin:.{digits}f} "
            f"(TOST p = {d.equivalence.p:.3g})", "negligible": f"real but smaller than the margin "
            f"+/-{d.margin:.{digits}f} (TOST p = {d.equivalence.p:.3g})",
            "inconclusive": f"neither significant nor equivalent within +/-{d.margin:.{digits}f}",
            "no-interval": "no interval (fewer than two seeds or no spread)"}[d.outcome]
    power = f"; detects {d.mde80:.{digits}f} with {POWER:.0%} power" if not math.isnan(d.mde80) else ""
    return f"{d.first} - {d.second}: {tail}{power}{d.advice()}"


def describe(d: Decision, unit: str, digits: int = 4) -> str:
    """One sentence for a decision: the deciding interval, its test, and :func:`finding`."""
    c = d.comparison
    head = (f"{d.first} - {d.second} = {fmt_iv(c.diff, c.lo, c.hi, digits)} {unit} ({c.method})" if c.has_interval
            else f"{d.first} - {d.second} = {num(c.diff, f'+.{digits}f')} {unit}")
    return f"{head}: {finding(d, digits).split(': ', 1)[1]}"
