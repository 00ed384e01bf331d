"""Analyse a finished sweep: per-arm statistics, convergence speed, and verdicts on the claims.

All figures come from the runs' ``metrics.jsonl``/``summary.json``; nothing is assumed.
Confidence intervals (95%): Student t over seeds for an arm's mean; Welch's t for the
difference of two arms' final losses; percentile bootstrap (resampling seeds within each arm)
for convergence-speed ratios. With few seeds the intervals are wide, and a verdict only calls
a difference significant when its interval excludes zero; NaN bounds (one seed) never do.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.experiments.stats import (
    bootstrap_ci,
    log_ratio_ci,
    mean_ci,
    ratio_of_means,
    tokens_to_target,
    welch_ci,
)
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
            records = read_records(run_dir / "metrics.jsonl")
        except (OSError, json.JSONDecodeError):
            missing.append(r["run"])
            continue
        evals = [e for e in records if e["kind"] == "eval"]
        arm.runs.append(RunResult(r["run"], r["arm"], r["seed"], summary, [e["tokens"] for e in evals],
                                  [e["val_loss"] for e in evals], r["train_flops_per_token"]))
    require(not missing, f"{len(missing)} run(s) of {root} have not finished ({', '.join(missing[:4])}); "
                         "finish the sweep first (rerun 'ffnlab sweep' with the same --out)")
    return record, list(arms.values())


def _ci_text(point: float, lo: float, hi: float, pct: bool = False) -> str:
    if pct:
        return f"{point:+.2%} (95% CI [{lo:+.2%}, {hi:+.2%}])"
    return f"{point:+.4f} (95% CI [{lo:+.4f}, {hi:+.4f}])"


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
            "wall_s": sum(a.values("wall_s")),
        })
    return rows


def convergence(arms: list[ArmStats], reference: str, target: float | None = None,
                vocab_size: int | None = None) -> dict[str, Any]:
    """Tokens and training FLOPs to reach ``target`` (default: the worst run's final loss, which
    every run reaches), and each arm's ratio to the reference arm: a percentile-bootstrap CI and a
    Welch t interval on log tokens (the latter, conservative with few seeds, decides verdicts).
    Curves start at (0 tokens, ln V), the loss of a model at chance."""
    if target is None:
        target = max(r.losses[-1] for a in arms for r in a.runs)
    ref = next(a for a in arms if a.name == reference)
    start = (0.0, math.log(vocab_size)) if vocab_size else None
    per_arm = {}
    for a in arms:
        toks = [tokens_to_target(r.tokens, r.losses, target, start) for r in a.runs]
        reached = [t for t in toks if t is not None]
        per_arm[a.name] = {"tokens": reached, "flops": [t * a.train_flops_per_token for t in reached],
                           "reached": len(reached), "runs": len(toks)}
    out: dict[str, Any] = {"target_loss": target, "reference": reference, "arms": {}}
    ref_t, ref_f = per_arm[ref.name]["tokens"], per_arm[ref.name]["flops"]
    for a in arms:
        t, f = per_arm[a.name]["tokens"], per_arm[a.name]["flops"]
        row: dict[str, Any] = {"tokens_mean": sum(t) / len(t) if t else None,
                               "flops_mean": sum(f) / len(f) if f else None, "reached": per_arm[a.name]["reached"]}
        if t and ref_t:
            row["tokens_ratio"] = bootstrap_ci(t, ref_t, ratio_of_means)
            row["flops_ratio"] = bootstrap_ci(f, ref_f, ratio_of_means)
            row["tokens_ratio_t"] = log_ratio_ci(t, ref_t)
        out["arms"][a.name] = row
    return out


def kaplan_curve(arms: list[ArmStats], reference: str) -> list[dict[str, Any]]:
    """Loss increase over the best arm of the reference's FFN kind, against the raw ratio
    (the form of Kaplan et al. 2020, Fig. 5 middle)."""
    kind = next(a.kind for a in arms if a.name == reference)
    same = [a for a in arms if a.kind == kind]
    means = {a.name: mean_ci(a.values("final_val_loss"))[0] for a in same}
    best = min(means.values())
    return sorted(({"arm": a.name, "ratio_raw": a.ratio_raw, "loss_increase": means[a.name] / best - 1}
                   for a in same), key=lambda r: r["ratio_raw"])


def verdict_ratio_optimal(arms: list[ArmStats], reference: str) -> dict[str, Any]:
    """Ratio 4 against the other ratios of the same FFN kind (gating is a separate question),
    with Bonferroni-corrected Welch intervals (family-wise 95%)."""
    ref = next(a for a in arms if a.name == reference)
    others = [a for a in arms if a.name != reference and a.kind == ref.kind]
    if abs(ref.ratio_raw - 4) > 1e-9 or not others or len(ref.runs) == 0:
        return {"verdict": "needs-experiment",
                "evidence": "the sweep needs a ratio-4 reference arm and other ratios of the same FFN kind"}
    level = 1 - 0.05 / len(others)
    deltas = {a.name: welch_ci(ref.values("final_val_loss"), a.values("final_val_loss"), level) for a in others}
    best = min(others, key=lambda a: a.mean_loss)
    n = len(ref.runs)
    worse = [k for k, (_, lo, _) in deltas.items() if lo > 0]  # NaN compares False: never significant
    if worse:
        name = min(worse, key=lambda k: -deltas[k][0])
        d = deltas[name]
        return {"verdict": "false", "numbers": {"delta": d, "against": name, "seeds": n},
                "evidence": f"ratio {ref.ratio_raw:.3g} ({reference}) ends with a higher validation loss than "
                            f"{name} (raw ratio {next(a.ratio_raw for a in arms if a.name == name):.3g}): "
                            f"delta = {_ci_text(*d)} nats (Bonferroni over {len(others)} comparisons), "
                            f"{n} seeds per arm"}
    if all(hi < 0 for _, _, hi in deltas.values()):
        d = deltas[best.name]
        return {"verdict": "true", "numbers": {"delta": d, "against": best.name, "seeds": n},
                "evidence": f"ratio {ref.ratio_raw:.3g} beats every other arm; closest {best.name}: delta = {_ci_text(*d)} nats"}
    d = deltas[best.name]
    return {"verdict": "misleading", "numbers": {"delta": d, "against": best.name, "seeds": n},
            "evidence": f"ratio {ref.ratio_raw:.3g} is not significantly better than {best.name} (raw ratio "
                        f"{best.ratio_raw:.3g}): delta = {_ci_text(*d)} nats, {n} seeds per arm "
                        f"(Bonferroni over {len(others)} comparisons); nothing singles out ratio 4"}


def verdict_convergence(conv: dict[str, Any], arms: list[ArmStats]) -> dict[str, Any]:
    ref = conv["reference"]
    ratios = {k: v["tokens_ratio_t"] for k, v in conv["arms"].items() if k != ref and "tokens_ratio_t" in v}
    if not ratios:
        return {"verdict": "needs-experiment", "evidence": "no arm reached the target loss alongside the reference"}
    fastest = min(ratios, key=lambda k: ratios[k][0])
    r, lo, hi = ratios[fastest]
    gated = [a.name for a in arms if a.gated and a.name in ratios]
    extra = ""
    if gated:
        g = gated[0]
        extra = f"; vs the gated arm {g}: {ratios[g][0]:.3f} [{ratios[g][1]:.3f}, {ratios[g][2]:.3f}]"
    boot = conv["arms"][fastest]["tokens_ratio"]
    text = (f"tokens to reach val loss {conv['target_loss']:.4f}: {fastest} / {ref} = {r:.3f} (95% CI "
            f"[{lo:.3f}, {hi:.3f}], Welch t on log tokens; bootstrap [{boot[1]:.3f}, {boot[2]:.3f}]){extra}. "
            f"An 8% speed-up of ratio 4 would need >= {CLAIMED_SPEEDUP:.2f}")
    if math.isnan(hi):  # one seed (or no spread): no interval
        verdict = "unverifiable"
        text += " (no interval: one seed or no spread)"
    elif hi < CLAIMED_SPEEDUP:
        verdict = "false"
    elif lo >= CLAIMED_SPEEDUP:
        verdict = "true"
    else:
        verdict = "unverifiable"
        text += " (the CI is too wide to decide at this scale)"
    return {"verdict": verdict, "evidence": text, "numbers": {"fastest_other": fastest, "ratio": [r, lo, hi]}}


def verdict_glu(arms: list[ArmStats], reference: str) -> dict[str, Any] | None:
    gated = [a for a in arms if a.gated and a.runs]
    plain = [a for a in arms if not a.gated and a.runs]
    if not gated or not plain:
        return None
    best_g = min(gated, key=lambda a: a.mean_loss)
    pm = [a for a in plain if abs(a.params_non_embedding / best_g.params_non_embedding - 1) <= 0.05]
    if not pm:  # the claim is about equal parameters
        return None
    ref = min(pm, key=lambda a: a.mean_loss)  # the best plain arm
    d = welch_ci(best_g.values("final_val_loss"), ref.values("final_val_loss"))
    text = (f"{best_g.name} - {ref.name} (non-embedding params {best_g.params_non_embedding:,} vs "
            f"{ref.params_non_embedding:,}): delta = {_ci_text(*d)} nats")
    if d[2] < 0:
        return {"verdict": "true", "evidence": text, "numbers": {"delta": d}}
    if d[1] > 0:
        return {"verdict": "false", "evidence": text, "numbers": {"delta": d}}
    return {"verdict": "misleading", "evidence": text + " (not significantly different)", "numbers": {"delta": d}}


def analyse(sweep_dir: str | Path) -> dict[str, Any]:
    record, arms = load(sweep_dir)
    spec = record["spec"]
    reference = spec["reference"]
    conv = convergence(arms, reference, vocab_size=record.get("vocab_size"))
    wanted = spec.get("claims") or ["ratio_optimal", "convergence_speed", "glu_vs_plain"]
    claims: dict[str, Any] = {}
    if "ratio_optimal" in wanted:
        claims["ratio_optimal"] = verdict_ratio_optimal(arms, reference)
    if "convergence_speed" in wanted:
        claims["convergence_speed"] = verdict_convergence(conv, arms)
    glu = verdict_glu(arms, reference) if "glu_vs_plain" in wanted else None
    if glu is not None:
        claims["glu_vs_plain"] = glu
    return {"spec": spec, "record": record, "arms": arm_table(arms), "convergence": conv,
            "kaplan": kaplan_curve(arms, reference), "claims": claims, "arm_objects": arms}
