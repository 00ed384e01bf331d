"""Analyse a finished sweep: one statistical model, the comparisons the spec fixed, verdicts.

All figures come from the runs' ``metrics.jsonl``/``summary.json``; nothing is assumed. The
final validation loss (and, for convergence, log tokens-to-target) is modelled as one mean per
arm plus a within-arm variance pooled over all arms (homogeneity checked by Levene's and
Bartlett's tests). Every arm is compared with the reference by Dunnett's simultaneous 95%
intervals; Welch's t per pair (Bonferroni) is the sensitivity column and takes over when the
variances are not homogeneous. "No meaningful difference" is an equivalence test (TOST) within
the spec's margin. Each verdict carries its deciding interval, its comparison and the design's
minimum detectable effect at 80% power; see docs/experiments.md for the rules.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.experiments.stats import (
    POWER,
    Comparison,
    PooledModel,
    bootstrap_ci,
    comparison_mde,
    critical_value,
    dunnett_vs_reference,
    mean_ci,
    pair_interval,
    pair_se_df,
    pooled_model,
    power_at,
    tokens_to_target,
    tost,
    welch_vs_reference,
)
from ffnlab.experiments.sweep_spec import DEFAULT_MARGIN
from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.widths import param_matched_ratio
from ffnlab.training.runfiles import read_records

CLAIMED_SPEEDUP = 1.08  # the first seed's "8% faster"


@dataclass
class RunResult:
    run: str
    arm: str
    seed: int
    summary: dict[str, Any]
    tokens: list[float]
    losses: list[float]
    flops_per_token: float


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
    runs: list[RunResult] = field(default_factory=list)

    def values(self, key: str) -> list[float]:
        return [float(r.summary[key]) for r in self.runs]

    @property
    def mean_loss(self) -> float:
        """Mean final validation loss over seeds."""
        losses = self.values("final_val_loss")
        return sum(losses) / len(losses)


def load(sweep_dir: str | Path) -> tuple[dict[str, Any], list[ArmStats]]:
    root = Path(sweep_dir)
    require((root / "sweep.json").is_file(), f"{root} is not a sweep folder (no sweep.json)")
    try:
        record = json.loads((root / "sweep.json").read_text())
    except json.JSONDecodeError as e:
        raise FfnlabError(f"{root}/sweep.json is corrupt ({e})") from None
    arms: dict[str, ArmStats] = {}
    missing = []
    for r in record["runs"]:
        ffn = r["config"]["model"]["ffn"]
        kind = get_kind(ffn["kind"])
        arm = arms.setdefault(r["arm"], ArmStats(
            name=r["arm"], kind=ffn["kind"], gated=kind.gated, rule=ffn["rule"], d_model=r["d_model"], d_ff=r["d_ff"],
            ratio_raw=r["d_ff"] / r["d_model"], ratio_param_matched=float(param_matched_ratio(r["d_model"], r["d_ff"], kind.gated)),
            params_non_embedding=r["params_non_embedding"], train_flops_per_token=r["train_flops_per_token"]))
        run_dir = root / "runs" / r["run"]
        try:
            summary = json.loads((run_dir / "summary.json").read_text())
            records = read_records(run_dir / "metrics.jsonl", kinds=("eval",))
        except (OSError, json.JSONDecodeError):
            missing.append(r["run"])
            continue
        evals = [e for e in records if e["kind"] == "eval"]
        arm.runs.append(RunResult(r["run"], r["arm"], r["seed"], summary, [e["tokens"] for e in evals],
                                  [e["val_loss"] for e in evals], r["train_flops_per_token"]))
    require(not missing, f"{len(missing)} run(s) of {root} have not finished ({', '.join(missing[:4])}); "
                         "finish the sweep first (rerun 'ffnlab sweep' with the same --out)")
    return record, list(arms.values())


def arm_table(arms: list[ArmStats]) -> list[dict[str, Any]]:
    rows = []
    for a in arms:
        loss = mean_ci(a.values("final_val_loss"))
        ppl = mean_ci([math.exp(x) for x in a.values("final_val_loss")])
        bpb = mean_ci(a.values("final_val_bpb"))
        rows.append({
            "arm": a.name, "kind": a.kind, "gated": a.gated, "rule": a.rule, "d_model": a.d_model, "d_ff": a.d_ff,
            "ratio_raw": a.ratio_raw, "ratio_param_matched": a.ratio_param_matched,
            "params_non_embedding": a.params_non_embedding, "train_flops_per_token": a.train_flops_per_token,
            "n_seeds": len(a.runs), "val_loss": loss[0], "val_loss_lo": loss[1], "val_loss_hi": loss[2],
            "val_ppl": ppl[0], "val_ppl_lo": ppl[1], "val_ppl_hi": ppl[2],
            "val_bpb": bpb[0], "val_bpb_lo": bpb[1], "val_bpb_hi": bpb[2],
            "wall_s": sum(a.values("wall_s")), "seed_losses": a.values("final_val_loss"),
        })
    return rows


@dataclass
class Family:
    """One outcome analysed as one model: per-arm values, the pooled model, the comparisons with
    the reference (Dunnett; Welch-Bonferroni as sensitivity) and the design's power."""

    outcome: str
    reference: str
    model: PooledModel
    dunnett: dict[str, Comparison]
    welch: dict[str, Comparison]

    @property
    def deciding(self) -> dict[str, Comparison]:
        """The intervals verdicts use: Dunnett's, or Welch's when the variances differ."""
        return self.dunnett if self.model.homogeneous else self.welch

    @property
    def method(self) -> str:
        k = len(self.dunnett)
        if self.model.homogeneous:
            return (f"Dunnett, {k} arm(s) vs {self.reference}, pooled sigma {self.model.sigma:.4g} "
                    f"on {self.model.df} df")
        return (f"Welch per pair, Bonferroni over {k} (variances not homogeneous: Levene p = "
                f"{self.model.levene_p:.3g}, Bartlett p = {self.model.bartlett_p:.3g})")

    def mde(self, arm: str) -> float:
        """Minimum detectable difference (80% power) for ``arm`` vs the reference on this design."""
        c = self.dunnett.get(arm)
        return comparison_mde(c, self.model.df) if c else math.nan

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for k, d in self.dunnett.items():
            w = self.welch[k]
            out.append({"arm": k, "diff": d.diff, "dunnett": [d.lo, d.hi], "p_dunnett": d.p,
                        "welch_bonferroni": [w.lo, w.hi], "mde80": self.mde(k), "se": d.se,
                        "critical": critical_value(d)})
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "reference": self.reference, "method": self.method,
                "model": self.model.summary(), "comparisons": self.rows()}


def family(outcome: str, groups: dict[str, list[float]], reference: str) -> Family:
    model = pooled_model(groups)
    return Family(outcome, reference, model, dunnett_vs_reference(model, reference),
                  welch_vs_reference(model, reference))


def convergence(arms: list[ArmStats], reference: str, target: float | None = None,
                vocab_size: int | None = None) -> dict[str, Any]:
    """Tokens and training FLOPs to reach ``target`` (default: the worst run's final loss, which
    every run reaches). Log tokens are analysed like the loss (one pooled model, Dunnett vs the
    reference); ratios are exp of the differences. Curves start at (0 tokens, ln V), the loss of
    a model at chance."""
    if target is None:
        target = max(r.losses[-1] for a in arms for r in a.runs)
    start = (0.0, math.log(vocab_size)) if vocab_size else None
    per_arm = {}
    for a in arms:
        toks = [tokens_to_target(r.tokens, r.losses, target, start) for r in a.runs]
        per_arm[a.name] = [t for t in toks if t is not None and t > 0]
    reached = {k: v for k, v in per_arm.items() if v}
    out: dict[str, Any] = {"target_loss": target, "reference": reference, "arms": {}}
    fam = family("log tokens to target", {k: [math.log(t) for t in v] for k, v in reached.items()}, reference) \
        if reference in reached else None
    flops = {a.name: a.train_flops_per_token for a in arms}
    for a in arms:
        t = per_arm[a.name]
        row: dict[str, Any] = {"tokens": t, "tokens_mean": sum(t) / len(t) if t else None,
                               "flops_mean": sum(t) / len(t) * flops[a.name] if t else None,
                               "reached": len(t), "runs": len(a.runs)}
        if fam is not None and a.name in fam.dunnett:
            d, w = fam.dunnett[a.name], fam.welch[a.name]
            row["tokens_ratio"] = [math.exp(d.diff), math.exp(d.lo), math.exp(d.hi)] if d.lo == d.lo \
                else [math.exp(d.diff), math.nan, math.nan]
            row["tokens_ratio_welch"] = [math.exp(w.diff), math.exp(w.lo), math.exp(w.hi)] if w.lo == w.lo \
                else [math.exp(w.diff), math.nan, math.nan]
            row["tokens_ratio_bootstrap"] = list(bootstrap_ci(t, per_arm[reference], ratio=True))
            row["flops_ratio"] = row["tokens_ratio"][0] * flops[a.name] / flops[reference]
        out["arms"][a.name] = row
    out["family"] = fam
    return out


def kaplan_curve(arms: list[ArmStats], reference: str) -> list[dict[str, Any]]:
    """Loss increase over the best arm of the reference's FFN kind, against the raw ratio
    (the form of Kaplan et al. 2020, Fig. 5 middle), with each arm's 95% t interval."""
    kind = next(a.kind for a in arms if a.name == reference)
    same = [a for a in arms if a.kind == kind and a.runs]
    best = min(a.mean_loss for a in same)
    rows = []
    for a in same:
        m, lo, hi = mean_ci(a.values("final_val_loss"))
        rows.append({"arm": a.name, "ratio_raw": a.ratio_raw, "loss_increase": m / best - 1,
                     "lo": lo / best - 1, "hi": hi / best - 1})
    return sorted(rows, key=lambda r: r["ratio_raw"])


# -- verdicts ------------------------------------------------------------------------------

def _iv(c: Comparison | list[float], digits: int = 4) -> str:
    d, lo, hi = c.as_list() if isinstance(c, Comparison) else c
    if lo != lo:
        return f"{d:+.{digits}f} (no interval)"
    return f"{d:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def seeds_needed(n: int, mde_now: float, effect: float) -> int | None:
    """Seeds per arm at which the minimum detectable effect shrinks to ``effect`` (MDE ~ 1/sqrt n)."""
    if not (mde_now > 0 and abs(effect) > 0 and n > 0):
        return None
    return max(n + 1, math.ceil(n * (mde_now / abs(effect)) ** 2))


def seeds_for_equivalence(n: int, se: float, df: float, margin: float, alpha: float) -> int | None:
    """Seeds per arm at which TOST shows equivalence with 80% power if the true difference is 0
    (the (1 - alpha) one-sided bound plus the 90% quantile must fit inside the margin)."""
    if not (se > 0 and df > 0 and margin > 0 and n > 0):
        return None
    from scipy import stats

    half = (float(stats.t.ppf(1 - alpha, df)) + float(stats.t.ppf(0.9, df))) * se
    return max(n + 1, math.ceil(n * (half / margin) ** 2))


def seeds_advice(n: int, mde80: float, diff: float, se: float, df: float, margin: float, alpha: float) -> str:
    """What would decide an inconclusive comparison: seeds per arm to detect the observed
    difference, and to show equivalence within ``margin`` if there is none."""
    need = seeds_needed(n, mde80, diff)
    need_eq = seeds_for_equivalence(n, se, df, margin, alpha)
    return ((f"; about {need} seeds per arm would detect the observed {abs(diff):.4f}" if need else "")
            + (f"; about {need_eq} seeds per arm would show equivalence if there is no difference"
               if need_eq else ""))


def _verdict(verdict: str, evidence: str, comparison: str, interval: list[float], unit: str, mde80: float,
             method: str, **numbers: Any) -> dict[str, Any]:
    """One verdict as the report shows it: the deciding interval, what it compares, the power."""
    return {"verdict": verdict, "evidence": evidence, "comparison": comparison, "interval": interval,
            "unit": unit, "mde80": mde80, "power": POWER, "method": method,
            "numbers": {"interval": interval, "mde80": mde80, **numbers}}


def _no_interval(comparison: str, unit: str, why: str) -> dict[str, Any]:
    return _verdict("inconclusive", f"no interval: {why}; run more seeds per arm", comparison,
                    [math.nan, math.nan, math.nan], unit, math.nan, "none")


def alternatives(spec: dict[str, Any], arms: list[ArmStats], key: str) -> list[str]:
    """The arms the spec fixed for ``key``; by default every other arm of the reference's kind."""
    chosen = (spec.get("comparisons") or {}).get(key)
    if chosen:
        return list(chosen)
    ref = next(a for a in arms if a.name == spec["reference"])
    return [a.name for a in arms if a.name != ref.name and a.kind == ref.kind]


def verdict_ratio_optimal(arms: list[ArmStats], spec: dict[str, Any], fam: Family) -> dict[str, Any]:
    """"Ratio 4 gives the best model; other ratios lose quality": the reference (raw ratio 4)
    against the spec's same-kind alternatives, Dunnett's simultaneous intervals.

    false if an alternative ends significantly lower, or is equivalent within the margin (TOST,
    Bonferroni) without being significantly higher: then it loses no quality; true if every
    alternative ends significantly higher; misleading if they all do but one by less than the
    margin (a real but negligible loss); otherwise inconclusive."""
    reference = spec["reference"]
    ref = next(a for a in arms if a.name == reference)
    alts = [k for k in alternatives(spec, arms, "ratio_optimal") if k in fam.deciding]
    unit = "nats (alternative - ratio 4)"
    if abs(ref.ratio_raw - 4) > 1e-9 or not alts:
        return {"verdict": "needs-experiment", "interval": [math.nan] * 3, "unit": unit, "comparison": "-",
                "evidence": "the sweep needs a raw-ratio-4 reference and alternatives of the same FFN kind"}
    comparison = f"{', '.join(alts)} vs {reference} (fixed in the spec)"
    cmp = {k: fam.deciding[k] for k in alts}
    if all(c.lo != c.lo for c in cmp.values()):
        return _no_interval(comparison, unit, "one seed per arm or no spread")
    margin = spec.get("margin", DEFAULT_MARGIN) * fam.model.means[reference]
    mdes = {k: fam.mde(k) for k in alts}
    better = [k for k, c in cmp.items() if c.hi < 0]
    alpha = 0.05 / len(alts)
    se_df = {k: pair_se_df(fam.model, k, reference) for k in alts}
    equiv = {k: tost(c.diff, *se_df[k], margin, alpha) for k, c in cmp.items()}
    worse = [k for k, c in cmp.items() if c.lo > 0]
    base = f"{fam.method}; margin {margin:.4f} nats"
    if better:
        k = min(better, key=lambda x: cmp[x].diff)
        return _verdict("false", f"{k} ends lower than ratio 4: {_iv(cmp[k])} nats ({base})", comparison,
                        cmp[k].as_list(), unit, mdes[k], fam.method, against=k)
    eq = [k for k in alts if equiv[k].equivalent and k not in worse]
    if eq:
        k = eq[0]
        e = equiv[k]
        return _verdict("false", f"{k} is equivalent to ratio 4 within +/-{margin:.4f} nats (TOST p = {e.p:.3g}, "
                        f"90% interval [{e.lo:+.4f}, {e.hi:+.4f}]): it loses no quality ({base})", comparison,
                        cmp[k].as_list(), unit, mdes[k], fam.method, against=k, tost_p=e.p)
    if len(worse) == len(alts):
        k = min(alts, key=lambda x: cmp[x].lo)
        tiny = [x for x in alts if equiv[x].equivalent]
        if tiny:  # significant, but smaller than the margin: true numbers, wrong reading
            k = tiny[0]
            return _verdict("misleading", f"every alternative ends higher, but {k} by less than the margin: "
                            f"{_iv(cmp[k])} nats, equivalent within +/-{margin:.4f} (TOST p = {equiv[k].p:.3g}); "
                            f"no meaningful quality is lost ({base})", comparison, cmp[k].as_list(), unit,
                            mdes[k], fam.method, against=k)
        return _verdict("true", f"every alternative ends higher; closest {k}: {_iv(cmp[k])} nats ({base})",
                        comparison, cmp[k].as_list(), unit, mdes[k], fam.method, against=k)
    k = min((x for x in alts if x not in worse), key=lambda x: cmp[x].diff)
    return _verdict("inconclusive", f"{k} vs ratio 4: {_iv(cmp[k])} nats, neither significant nor equivalent "
                    f"within +/-{margin:.4f}; this design detects {mdes[k]:.4f} nats with 80% power"
                    + seeds_advice(len(ref.runs), mdes[k], cmp[k].diff, *se_df[k], margin, alpha)
                    + f" ({base})", comparison, cmp[k].as_list(), unit, mdes[k], fam.method, against=k)


def verdict_convergence(conv: dict[str, Any], arms: list[ArmStats], spec: dict[str, Any]) -> dict[str, Any]:
    """"Enforcing ratio 4 converges 8% faster": tokens(alternative) / tokens(ratio 4) >= 1.08 for
    the spec's alternatives. Dunnett's simultaneous intervals on log tokens cover every alternative
    at once, so the fastest one's interval stays valid after it is picked. false if some
    alternative's upper end < 1.08; true if every lower end >= 1.08; otherwise inconclusive."""
    fam: Family | None = conv["family"]
    ref = conv["reference"]
    unit = f"tokens(alternative) / tokens({ref}) to loss {conv['target_loss']:.4f}"
    alts = [k for k in alternatives(spec, arms, "convergence_speed") if fam is not None and k in fam.deciding]
    if fam is None or not alts:
        return {"verdict": "needs-experiment", "interval": [math.nan] * 3, "unit": unit, "comparison": "-",
                "evidence": "no alternative arm reached the target loss alongside the reference"}
    comparison = f"{', '.join(alts)} vs {ref} (fixed in the spec)"
    ratio = {k: [math.exp(v) for v in fam.deciding[k].as_list()] if fam.deciding[k].lo == fam.deciding[k].lo
             else [math.exp(fam.deciding[k].diff), math.nan, math.nan] for k in alts}
    if all(r[1] != r[1] for r in ratio.values()):
        return _no_interval(comparison, unit, "one seed per arm or no spread")
    fastest = min(alts, key=lambda k: ratio[k][0])
    r = ratio[fastest]
    mde_log = fam.mde(fastest)
    mde_text = f"this design detects a {math.exp(mde_log) - 1:.1%} change in tokens with 80% power"
    text = (f"tokens to reach val loss {conv['target_loss']:.4f}: {fastest} / {ref} = {r[0]:.3f} "
            f"[{r[1]:.3f}, {r[2]:.3f}] ({fam.method} on log tokens; simultaneous over {len(alts)} "
            f"alternatives, so valid for the fastest); the claim needs >= {CLAIMED_SPEEDUP:.2f}; {mde_text}")
    slow = [k for k in alts if ratio[k][2] < CLAIMED_SPEEDUP]
    if slow:
        k = min(slow, key=lambda x: ratio[x][2])
        r = ratio[k]
        text = text if k == fastest else text + f"; decided by {k}: {r[0]:.3f} [{r[1]:.3f}, {r[2]:.3f}]"
        return _verdict("false", text, comparison, r, unit, mde_log, fam.method, against=k)
    if all(ratio[k][1] >= CLAIMED_SPEEDUP for k in alts):
        return _verdict("true", text, comparison, r, unit, mde_log, fam.method, against=fastest)
    return _verdict("inconclusive", text + " (the interval straddles 1.08)", comparison, r, unit, mde_log,
                    fam.method, against=fastest)


def _pair(spec: dict[str, Any], arms: list[ArmStats], key: str) -> tuple[ArmStats, ArmStats] | None:
    chosen = (spec.get("comparisons") or {}).get(key)
    by_name = {a.name: a for a in arms if a.runs}
    if chosen:
        first, second = chosen
        return (by_name[first], by_name[second]) if first in by_name and second in by_name else None
    if key != "glu_vs_plain":
        return None
    ref = by_name.get(spec["reference"])  # default: a gated arm of the reference's d_model and size
    gated = [a for a in by_name.values() if a.gated and ref is not None and a.d_model == ref.d_model
             and abs(a.params_non_embedding / ref.params_non_embedding - 1) <= 0.05]
    return (gated[0], ref) if gated and ref is not None and not ref.gated else None


def verdict_pair(arms: list[ArmStats], spec: dict[str, Any], fam: Family, key: str) -> dict[str, Any] | None:
    """A comparison of two arms fixed in the spec: ``first`` should end lower than ``second``.

    glu_vs_plain: (gated, plain) at equal d_model and parameters, as Shazeer (2020, Table 1);
    gated_law: (gated at raw ratio 4, gated at 8/3) at equal parameters, the seed's law inside the
    gated family. One planned comparison: a t interval on the pooled variance, or Welch's on the
    two arms alone when Levene's test finds the variances unequal. true if first - second < 0
    significantly; false if > 0 significantly or equivalent within the margin (TOST); otherwise
    inconclusive, saying how many seeds per arm would decide."""
    pair = _pair(spec, arms, key)
    if pair is None:
        return None
    a, b = pair
    model = fam.model
    unit = f"nats ({a.name} - {b.name})"
    comparison = (f"{a.name} vs {b.name}: d_model {a.d_model} vs {b.d_model}, non-embedding params "
                  f"{a.params_non_embedding:,} vs {b.params_non_embedding:,}")
    c, df = pair_interval(model, a.name, b.name)
    if c.lo != c.lo:
        return _no_interval(comparison, unit, "one seed per arm or no spread")
    iv, diff, se = c.as_list(), c.diff, c.se
    margin = spec.get("margin", DEFAULT_MARGIN) * model.means[b.name]
    eq = tost(diff, se, df, margin)
    power_mde = comparison_mde(c, df)
    if model.homogeneous:
        method = f"pooled-variance t, {model.df} df"
        basis = f"pooled sigma {model.sigma:.4g} on {model.df} df"
    else:
        method = f"Welch t, {df:.1f} df"
        basis = (f"Welch t on the two arms, {df:.1f} df: variances differ across arms, Levene p = "
                 f"{model.levene_p:.3g}; sd {float(model.groups[a.name].std(ddof=1)):.4g} vs "
                 f"{float(model.groups[b.name].std(ddof=1)):.4g}")
    text = (f"{a.name} - {b.name} = {_iv(iv)} nats ({basis}; one planned comparison); "
            f"margin +/-{margin:.4f}; detectable with 80% power: {power_mde:.4f}")
    if iv[2] < 0:
        return _verdict("true", text, comparison, iv, unit, power_mde, method)
    if iv[1] > 0:
        return _verdict("false", text, comparison, iv, unit, power_mde, method)
    if eq.equivalent:
        return _verdict("false", text + f"; equivalent within the margin (TOST p = {eq.p:.3g})", comparison, iv,
                        unit, power_mde, method, tost_p=eq.p)
    return _verdict("inconclusive", text + "; neither significant nor equivalent"
                    + seeds_advice(min(len(a.runs), len(b.runs)), power_mde, diff, se, df, margin, 0.05),
                    comparison, iv, unit, power_mde, method)


def power_table(fam: Family, effects: dict[str, float]) -> dict[str, Any]:
    """The design's power: minimum detectable difference at 80% per comparison, and the power
    for named effect sizes (e.g. the ones the hour-long preset measured)."""
    rows = fam.rows()
    first = rows[0] if rows else None
    out: dict[str, Any] = {"sigma": fam.model.sigma, "df": fam.model.df, "power": POWER,
                           "mde80": {r["arm"]: r["mde80"] for r in rows}}
    if first is not None:
        out["power_for"] = {name: power_at(eff, first["se"], fam.model.df, first["critical"])
                            for name, eff in effects.items()}
    return out


def scale(record: dict[str, Any], arms: list[ArmStats], reference: str) -> dict[str, Any]:
    """What this sweep's numbers are about: model size, tokens per parameter, epochs, evaluation."""
    from ffnlab.training.corpus import eval_starts, load_prepared

    ref = next(a for a in arms if a.name == reference)
    first = ref.runs[0].summary if ref.runs else {}
    tokens = first.get("tokens")
    ref_run = next((r for r in record["runs"] if r["arm"] == reference), {})
    train = ref_run.get("config", {}).get("train") or record["spec"]["base"].get("train", {})
    out: dict[str, Any] = {"params_non_embedding": ref.params_non_embedding,
                           "params_total": (first.get("params") or {}).get("total"), "tokens_per_run": tokens,
                           "tokens_per_param": tokens / ref.params_non_embedding if tokens else None,
                           "bits_per_byte": ref.values("final_val_bpb") and mean_ci(ref.values("final_val_bpb"))[0]}
    try:
        data = load_prepared(record.get("prepared_data", ""))
    except (FfnlabError, OSError, KeyError, ValueError):
        return out
    seq, ev = int(train.get("seq_len", 0)), int(train.get("eval_tokens", 0))
    out.update(train_tokens=data.train_tokens, val_tokens=data.val_tokens,
               epochs=tokens / data.train_tokens if tokens else None)
    if seq and ev:
        n = len(eval_starts(data.val_tokens, seq, ev))
        out.update(eval_windows=n, eval_tokens=n * seq, eval_share=n * seq / data.val_tokens)
    return out


GOLDEN_EFFECTS = {"0.021 nats (golden: ratio 4 - ratio 2)": 0.0214}  # README, `golden` preset


def analyse_arms(spec: dict[str, Any], arms: list[ArmStats], record: dict[str, Any]) -> dict[str, Any]:
    """Every analysis of one set of arms against ``spec["reference"]`` (one model size)."""
    reference = spec["reference"]
    loss = family("final validation loss", {a.name: a.values("final_val_loss") for a in arms if a.runs},
                  reference)
    conv = convergence(arms, reference, vocab_size=record.get("vocab_size"))
    wanted = spec.get("claims") or ["ratio_optimal", "convergence_speed", "glu_vs_plain"]
    claims: dict[str, Any] = {}
    if "ratio_optimal" in wanted:
        claims["ratio_optimal"] = verdict_ratio_optimal(arms, spec, loss)
    if "convergence_speed" in wanted:
        claims["convergence_speed"] = verdict_convergence(conv, arms, spec)
    for key in ("glu_vs_plain", "gated_law"):
        found = verdict_pair(arms, spec, loss, key) if key in wanted else None
        if found is not None:
            claims[key] = found
    conv_out = {k: v for k, v in conv.items() if k != "family"}
    if conv["family"] is not None:
        conv_out["family"] = conv["family"].as_dict()
    return {"loss_model": loss.as_dict(), "power": power_table(loss, GOLDEN_EFFECTS), "convergence": conv_out,
            "kaplan": kaplan_curve(arms, reference), "claims": claims}


def best_ratio(arms: list[ArmStats], reference: str) -> dict[str, Any]:
    """The raw ratio with the lowest loss for the reference's FFN kind: a parabola in log2(ratio)
    fitted to every run's final loss, its minimum with a delta-method 95% interval."""
    from ffnlab.experiments.stats import quadratic_minimum

    kind = next(a.kind for a in arms if a.name == reference)
    same = [a for a in arms if a.kind == kind]
    xs = [math.log2(a.ratio_raw) for a in same for _ in a.runs]
    ys = [v for a in same for v in a.values("final_val_loss")]
    q = quadratic_minimum(xs, ys)
    tested = sorted(a.ratio_raw for a in same)
    ref = next(a for a in arms if a.name == reference)
    return {"params_non_embedding": ref.params_non_embedding, "d_model": ref.d_model,
            "tokens": ref.runs[0].summary.get("tokens") if ref.runs else None,
            "best_ratio": 2 ** q.x_min if q.x_min == q.x_min else math.nan,
            "lo": 2 ** q.lo if q.lo == q.lo else math.nan, "hi": 2 ** q.hi if q.hi == q.hi else math.nan,
            "runs": q.n, "tested": [min(tested), max(tested)] if tested else [],
            "inside_tested": bool(q.lo == q.lo and tested and min(tested) <= 2 ** q.lo and 2 ** q.hi <= max(tested))}


def analyse(sweep_dir: str | Path) -> dict[str, Any]:
    """The whole analysis of a finished sweep. With ``scales`` in the spec, every model size is
    analysed on its own; the verdicts are the largest size's, and ``scale_trend`` holds each size's
    best ratio (the form of Kaplan et al. 2020, Fig. 5, across sizes)."""
    record, arms = load(sweep_dir)
    spec = record["spec"]
    scales = spec.get("scales") or []
    reference = f"{scales[-1]['name']}.{spec['reference']}" if scales else spec["reference"]
    out: dict[str, Any] = {"spec": spec, "record": record, "reference": reference, "arms": arm_table(arms),
                           "scale": scale(record, arms, reference), "arm_objects": arms, "scale_trend": []}
    if not scales:
        return {**out, **analyse_arms(spec, arms, record)}
    for sc in scales:
        prefix = f"{sc['name']}."
        sub = {**spec, "reference": prefix + spec["reference"], "scales": [],
               "comparisons": {k: [prefix + x for x in v] for k, v in (spec.get("comparisons") or {}).items()}}
        sub_arms = [a for a in arms if a.name.startswith(prefix)]
        found = analyse_arms(sub, sub_arms, record)
        trend = best_ratio(sub_arms, sub["reference"])
        trend.update(scale=sc["name"], verdicts={k: v["verdict"] for k, v in found["claims"].items()},
                     kaplan=found["kaplan"])
        out["scale_trend"].append(trend)
    out.update(found)  # the largest size decides the claims
    out["arm_objects"] = sub_arms
    return out
