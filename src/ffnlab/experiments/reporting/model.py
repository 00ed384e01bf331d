"""The report model of a sweep (:mod:`ffnlab.experiments.reporting.pages` renders it): verdict cards, each
stating its deciding interval once; the tables of every comparison (deciding interval marked as
such, the others labelled sensitivity); convergence, the Kaplan form, perplexity and bits per byte,
the arms; for scale sweeps every cell's comparisons and the trends. A card states the hypothesis in
the spec's own words (its id and sentence); a spec that names none gets no cards."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ffnlab.experiments.analysis.analyse import (
    Analysis,
    ArmRow,
    CellResult,
    ClaimVerdict,
    Convergence,
    ExcludedRun,
    KaplanPoint,
    SweepScale,
    TrendResult,
    decisions,
    pair_decisions,
)
from ffnlab.experiments.analysis.trend import SLOPE_MARGIN
from ffnlab.experiments.analysis.verdicts import DecisionJSON
from ffnlab.experiments.fmt import bounds, interval, num
from ffnlab.experiments.reporting.pages import PageModel, Section, Table, section, table

if TYPE_CHECKING:
    from ffnlab.sizing.audit_row import AuditRow
    from ffnlab.sizing.claims import ClaimCheck

CLAIM_OF = {"ratio_optimal": "ratio-4-optimal", "convergence_speed": "golden-transformer-8pct",
            "glu_vs_plain": "glu-beats-plain", "gated_law": "gated-ratio-4",
            "trend_params": "best-ratio-any-size", "trend_tokens_per_param": "best-ratio-any-length",
            "trend_lr": "best-ratio-any-lr"}
# what a trend claims where the claims catalogue (data/claims.json) has no entry for its axis
TREND_CLAIMS = {"best-ratio-any-lr": "The best FFN ratio does not change with the learning rate (a check of the "
                                     "design, not a claim of the source note)."}


def trend_key(t: TrendResult, trends: Sequence[TrendResult]) -> str:
    """A trend's key in claims.json: ``trend_AXIS``, or ``trend_AXIS_NAME`` where several trends
    of a spec share the axis (two learning-rate checks)."""
    shared = sum(x.axis == t.axis for x in trends) > 1
    return f"trend_{t.axis}_{t.name}" if shared else f"trend_{t.axis}"
OUTCOME_WORDS = {"lower": "lower", "higher": "higher", "equivalent": "equivalent within the margin",
                 "negligible": "real but within the margin", "inconclusive": "inconclusive",
                 "no-interval": "no interval"}


def claim_texts() -> dict[str, str]:
    from ffnlab.sizing.claims import load_claims

    return {c["id"]: c["claim"] for c in load_claims()}


def card(key: str, v: ClaimVerdict, texts: dict[str, str]) -> dict[str, str]:
    said = v.hypothesis  # the spec's words (reports written before hypotheses: the catalogue's)
    cid = (said.id if said else "") or CLAIM_OF.get(key, key)
    point, lo, hi = v.interval or (math.nan,) * 3
    ratio = key == "convergence_speed"
    mde = v.mde80
    if isinstance(mde, (int, float)) and math.isfinite(mde):
        power = (f"detects a {math.exp(mde) - 1:.1%} change in tokens with 80% power" if ratio
                 else f"detects {mde:.4f} {v.unit.split(' ')[0]} with 80% power")
    else:
        power = "no power figure (no interval)"
    return {"id": cid, "analysis": key, "claim": (said.sentence if said else "") or texts.get(cid, ""),
            "verdict": v.verdict, "interval": interval(point, lo, hi, 3 if ratio else 4, signed=not ratio),
            "unit": v.unit, "comparison": v.comparison, "method": v.method, "model": v.model, "power": power,
            "evidence": v.finding or v.evidence, "maturity": v.maturity.text() if v.maturity else ""}


def leader(arms: Sequence[ArmRow], reference: str) -> str:
    """The arm with the lowest mean final loss among the reference's cell, in words, against the
    reference (the deciding interval above says whether the difference is shown)."""
    prefix = reference.rsplit(".", 1)[0] + "." if "." in reference else ""
    cell = [a for a in arms if a.arm.startswith(prefix) and isinstance(a.val_loss, (int, float))
            and math.isfinite(a.val_loss)]
    ref = next((a for a in cell if a.arm == reference), None)
    if not cell or ref is None:
        return ""
    best = min(cell, key=lambda a: a.val_loss)
    if best is ref:
        return f"the reference {reference} (raw ratio {ref.ratio_raw:.3g}), mean {ref.val_loss:.4f} nats"
    gap = ref.val_loss - best.val_loss
    return (f"{best.arm} (raw ratio {best.ratio_raw:.3g}), mean {best.val_loss:.4f} nats: {gap:.4f} nats "
            f"({gap / ref.val_loss:.2%}) below the reference {reference} (means over seeds; the deciding "
            "interval says whether the difference is shown)")


def trend_card(t: TrendResult, texts: dict[str, str], trends: Sequence[TrendResult] | None = None) -> dict[str, str]:
    cid = CLAIM_OF[f"trend_{t.axis}"]
    return {"id": cid, "analysis": trend_key(t, trends or [t]), "claim": texts.get(cid, TREND_CLAIMS.get(cid, "")),
            "verdict": t.verdict,
            "interval": interval(t.slope, t.lo, t.hi, 3),
            "unit": "log2(best ratio) per doubling", "comparison": f"cells {', '.join(t.scales)}",
            "method": "homogeneity of the cells' best ratios (Cochran's Q); their precision-weighted slope, "
                      "widened for misfit", "model": "",
            "power": f"margin +/-{SLOPE_MARGIN} per doubling", "evidence": t.evidence,
            "maturity": t.maturity.text() + " (its least trained cell)"}


def scale_rows(sc: SweepScale) -> list[tuple[str, str]]:
    rows = [("non-embedding parameters (reference)", f"{sc.params_non_embedding:,}")]
    if sc.tokens_per_run:
        rows.append(("training tokens per run", f"{sc.tokens_per_run:,}"))
        rows.append(("tokens per non-embedding parameter", num(sc.tokens_per_param, ".2f")))
    if sc.epochs is not None:
        rows.append(("epochs of the training split", num(sc.epochs, ".3f")))
    rows.append(("bits per byte (reference)", num(sc.bits_per_byte, ".3f")))
    if sc.eval_every_tokens:
        rows.append(("tokens between evaluations", f"{sc.eval_every_tokens:,}"))
    if sc.eval_windows:
        rows.append(("validation windows (spread over the split, fixed seed)",
                     f"{sc.eval_windows:,} = {sc.eval_tokens:,} tokens, "
                     f"{sc.eval_share:.1%} of {sc.val_tokens:,}"))
    return rows


def comparison_rows(decisions: Sequence[DecisionJSON], unit_digits: int = 4) -> list[list[str]]:
    """One row per decision: the difference, the deciding interval (its test named), the
    sensitivity intervals (labelled), TOST, the outcome, the test's power."""
    spec = f"+.{unit_digits}f"
    rows = []
    for d in decisions:
        sens = "; ".join(f"{s['method']}: {bounds(s['interval'][0], s['interval'][1], spec)}"
                         for s in d["sensitivity"]) or "-"
        rows.append([f"{d['first']} - {d['second']}", num(d["diff"], spec),
                     bounds(d["interval"][0], d["interval"][1], spec), d["method"],
                     sens, f"{num(d['tost_p'], '.3g')} (margin +/-{num(d['margin'], '.4f')})",
                     OUTCOME_WORDS.get(d["outcome"], d["outcome"]), num(d["mde80"], ".4f")])
    return rows


COMPARISON_HEADERS = ["difference", "estimate", "deciding 95% interval", "deciding test", "sensitivity (not deciding)",
                      "TOST p", "outcome", "detectable at 80% power"]


def _seeds(result: Analysis) -> Table:
    seeds = sorted({s for r in result.arms for s in r.seed_losses}, key=int)
    return table(["arm", *[f"seed {s}" for s in seeds]],
                 [[r.arm, *[num(r.seed_losses.get(s), ".4f") if s in r.seed_losses else "excluded"
                               if r.n_excluded else "-" for s in seeds]] for r in result.arms],
                 [False] + [True] * len(seeds))


def _ratio(r: Sequence[float]) -> str:
    return interval(r[0], r[1], r[2], 3, signed=False)


def _convergence(conv: Convergence, ref: str) -> Table:
    rows = []
    for name, row in conv.arms.items():
        ratio = row.tokens_ratio
        rows.append([name, f"{row.runs - row.censored}/{row.runs}",
                     "-" if row.tokens_mean is None else f"{row.tokens_mean:,.0f}",
                     "reference" if name == ref else "-" if ratio is None else _ratio(ratio),
                     "-" if row.tokens_ratio_interpolated is None else
                     bounds(row.tokens_ratio_interpolated[1], row.tokens_ratio_interpolated[2], ".3f"),
                     "-" if row.flops_ratio is None else _ratio(row.flops_ratio)])
    return table(["arm", "runs reaching the target", "mean tokens to target",
                  f"tokens vs {ref} (deciding 95%, interpolation error included)",
                  "interval at interpolated crossings (sensitivity)", "training FLOPs vs reference (95%)"],
                 rows, [False] + [True] * 5)


def _kaplan(rows: Sequence[KaplanPoint], ref: str) -> Table:
    return table(["arm", "raw ratio", f"loss relative to {ref}", "95% interval (Fieller, both arms' variances)"],
                 [[k.arm, f"{k.ratio_raw:.3f}", "0 (reference)" if k.reference else f"{k.loss_increase:+.2%}",
                   "-" if k.reference else bounds(k.lo, k.hi, "+.2%")] for k in rows],
                 [False, True, True, True])


def _hypothesis_id(cell: CellResult, key: str) -> str:
    """The id of the hypothesis a cell's verdict ``key`` decides (older reports: the catalogue's)."""
    claim = cell.claims.get(key)
    said = claim.hypothesis.id if claim is not None and claim.hypothesis is not None else None
    return str(said or CLAIM_OF.get(key, key))


def _cells(result: Analysis) -> list[Table]:
    rows = []
    for t in result.cells:
        tokens = t.tokens or 0
        best = ("no minimum (the fit curves down or is flat)" if math.isnan(t.best_ratio) else
                f"{t.best_ratio:.2f} {bounds(t.lo, t.hi, '.2f')}" if t.shape == "bounded" else
                f"{t.best_ratio:.2f}, interval unbounded")
        if not math.isnan(t.best_ratio) and not t.inside_tested and t.tested:
            best += f" (not inside the tested {t.tested[0]:g}-{t.tested[1]:g})"
        rows.append([t.scale, t.d_model, f"{t.params_non_embedding:,}", f"{tokens:,}",
                     num(tokens / t.params_non_embedding, ".2f") if tokens else "-", best,
                     num(t.lack_of_fit_p, ".3g"),
                     ", ".join(f"{_hypothesis_id(t, k)}: {v}" for k, v in t.verdicts.items())])
    return [table(["cell", "d_model (ratio 4)", "non-emb params", "tokens per run", "tokens per param",
                   "best raw ratio (Fieller 95%)", "lack-of-fit p", "verdicts in this cell"], rows,
                  [False, True, True, True, True, True, True, False])]


def _trends(result: Analysis) -> Table:
    def homogeneity(t: TrendResult) -> str:
        return f"Q {t.homogeneity_q:.1f} on {t.homogeneity_df} df, p {t.homogeneity_p:.2g}"

    def joint(t: TrendResult) -> str:
        j = t.joint
        return interval(j.slope, j.lo, j.hi, 3)

    return table(["trend", "axis", "cells", "best ratios constant? (Cochran)",
                  "weighted change in log2(best ratio) per doubling (95%)", "unweighted joint fit (sensitivity)",
                  "verdict"],
                 [[t.name, t.axis, ", ".join(t.scales), homogeneity(t),
                   interval(t.slope, t.lo, t.hi, 3), joint(t), t.verdict] for t in result.trends],
                 [False, False, False, False, True, True, False])


def _diagnostics(result: Analysis) -> tuple[list[str], list[Table]]:
    """Not pre-registered: the slope between adjacent cells of each trend, and between cells
    trained on the same tokens at different sizes."""
    rows = [[f"{t.name}: {a} to {b}", t.axis, interval(s.slope, s.lo, s.hi, 3)]
            for t in result.trends for s in t.segments for a, b in [s.scales]]
    rows += [[f"same tokens ({e.tokens:,}): {a} to {b}", "params", interval(e.slope, e.lo, e.hi, 3)]
             for e in result.equal_tokens for a, b in [e.scales]]
    if not rows:
        return [], []
    text = ["Diagnostics, not pre-registered (they do not change a verdict): the change in log2(best ratio) per "
            "doubling between each pair of adjacent cells of a trend (each cell's own parabola, the same "
            "bootstrap), and between cells trained on the same tokens and steps at different sizes, which "
            "separates size from training length."]
    text += [f"The {t.name} trend's adjacent segments have disjoint intervals: its best ratios do not lie on "
             f"one line in log2({t.axis}), so its single slope summarises a bent path and predicts nothing "
             "between or beyond its cells." for t in result.trends if t.straight is False]
    return text, [table(["between cells", "axis", "change in log2(best ratio) per doubling (95%)"], rows,
                        [False, False, True])]


def excluded_table(rows: Sequence[ExcludedRun]) -> Table:
    return table(["run", "arm", "seed", "why it is left out"], [[r.run, r.arm, r.seed, r.reason] for r in rows])


def report_model(result: Analysis, prov: list[tuple[str, str]], *, title: str, warnings: list[str],
                 claim_rows: Sequence[ClaimCheck] | None = None,
                 audit_rows: Sequence[AuditRow] | None = None) -> PageModel:
    """Everything the templates show, as strings and tables: one structure, two renderings."""
    spec, ref, arms = result.sweep, result.reference, result.arms
    texts = claim_texts()
    cards = [card(k, v, texts) for k, v in result.claims.items()]
    for c in cards:  # the ratio claim's card names the arm with the lowest loss and by how much
        if c["analysis"] == "ratio_optimal":
            c["leader"] = leader(arms, ref)
    cards += [trend_card(t, texts, result.trends) for t in result.trends]
    margin = spec.margin
    sections: list[Section] = []
    if result.trends or result.cells:
        diag_text, diag_tables = _diagnostics(result)
        sections.append(section("trends", "How the best ratio moves", [
            "Each cell's best raw ratio is the minimum of a parabola in log2(ratio) fitted to every run's final "
            "loss, with Fieller's 95% interval (unbounded when the curvature is not significant) and the "
            "lack-of-fit test of the parabola against the ratio means. Each trend asks whether the cells' best "
            "log2 ratios (each with its delta-method error, where its curvature is significant) are constant "
            "(Cochran's Q) and how they move per doubling of the axis (their precision-weighted slope, widened "
            "when they scatter about the line more than their errors allow); the claim that the best ratio does "
            f"not change is false when the cells differ and true when they do not and the slope lies within "
            f"+/-{SLOPE_MARGIN} per doubling. The unweighted joint fit of every run is shown as a sensitivity. "
            "A trend is as mature as its least trained cell. The verdict cards above come from "
            f"cell {ref.split('.')[0]}.", *diag_text], ([_trends(result)] if result.trends else []) + diag_tables
            + _cells(result), ["scale_trend.png"]))
        for t in result.cells:
            cell_dec = decisions(t.loss_model, t.claims)
            if cell_dec:
                sections.append(section(f"cell-{t.scale}", f"Comparisons in cell {t.scale}",
                                        [t.loss_model["why"] if t.loss_model is not None else ""],
                                        [table(COMPARISON_HEADERS, comparison_rows(cell_dec))]))
    deciding = decisions(result.loss_model, result.claims)
    why = (result.loss_model["why"] if result.loss_model is not None else "") or next(
        (v.model for v in result.claims.values() if v.model), "")
    power_text = [f"Power of the deciding test to detect {effect}: "
                  + ", ".join(f"{arm} vs {ref} {num(p, '.0%')}" for arm, p in by_arm.items()) + "."
                  for effect, by_arm in result.power.get("power_for", {}).items()]
    sections.append(section("comparisons", "Comparisons (final validation loss)", [
        f"Model: {why}." if why else "",
        "Rule: a difference is called real only after the equivalence test (TOST against the margin, "
        f"{margin:.1%} of the second arm's loss) has run; significant and within the margin reads "
        "'real but within the margin'. Power figures are those of the deciding test.",
        *power_text], [table(COMPARISON_HEADERS, comparison_rows(deciding), [False, True, True, False, False, True,
                                                                            False, True])],
        ["forest.png", *(["pairs.png"] if pair_decisions(result.claims) else [])]))
    if result.excluded:
        sections.append(section("excluded", "Runs left out", [
            "The pre-registered rule: a run with a non-finite loss, a final loss no better than chance, or a final "
            "loss more than 10% above its own best evaluation (it diverged) is left out of every comparison."],
            [excluded_table(result.excluded)]))
    conv = result.convergence
    conv_claim = result.claims.get("convergence_speed")
    said = conv_claim.hypothesis if conv_claim is not None else None
    claimed = (f"Hypothesis {said.id} claims a speed-up of {said.claimed_effect:.2f}"
               + (f" ({said.effect_source}). " if said.effect_source else ". ")
               if said is not None and said.claimed_effect else "")
    sections.append(section("convergence", f"Convergence speed (target loss {num(conv.target_loss, '.4f')}: "
                                           f"{conv.target_rule})", [
        f"{claimed}A run's crossing lies between two evaluations; the deciding "
        "interval includes that interpolation error. A run that never reaches the target is censored at its last "
        "evaluation (its arm's interval then has no upper end)."], [_convergence(conv, ref)],
        ["tokens_to_target.png", "loss_curves.png"]))
    sections.append(section("kaplan", "Loss relative to the reference (Kaplan et al. 2020, Fig. 5 form)", [],
                            [_kaplan(result.kaplan, ref)], ["kaplan.png", "frontier.png"]))
    sections.append(section("seeds", "Final loss per seed", [], [_seeds(result)]))
    sections.append(section("seed-table", "Perplexity and bits per byte per arm", [
        "Perplexity and bits per byte on the held-out split, mean and 95% t interval over seeds; training FLOPs per "
        "token from ffnlab's exact count."], [table(
            ["arm", "FFN ratio (raw / param-matched)", "training FLOPs/token", "perplexity (95% CI)",
             "bits per byte (95% CI)"],
            [[r.arm, f"{r.ratio_raw:.3f} / {r.ratio_param_matched:.3f}", f"{r.train_flops_per_token:,.0f}",
              interval(r.val_ppl, r.val_ppl_lo, r.val_ppl_hi, 3, signed=False),
              interval(r.val_bpb, r.val_bpb_lo, r.val_bpb_hi, 4, signed=False)] for r in arms],
            [False, True, True, True, True])]))
    sections.append(section("arms", "Arms", [], [table(
        ["arm", "FFN", "raw ratio", "p-m ratio", "d_model", "d_ff", "non-emb params", "FLOPs/token", "val loss",
         "95% CI", "seeds"],
        [[r.arm, r.kind, f"{r.ratio_raw:.3f}", f"{r.ratio_param_matched:.3f}", r.d_model, r.d_ff,
          f"{r.params_non_embedding:,}", f"{r.train_flops_per_token / 1e6:.2f}M", num(r.val_loss, ".4f"),
          bounds(r.val_loss_lo, r.val_loss_hi, ".4f"),
          f"{r.n_seeds}" + (f" (+{r.n_excluded} left out)" if r.n_excluded else "")] for r in arms],
        [False, False] + [True] * 9)]))
    if claim_rows is not None:
        sections.append(section("claims", "Every claim checked (the two source documents, paraphrased)", [
            "ffnlab started from two texts: one asserts that d_ff/d_model must be exactly 4 because of a "
            "golden-ratio identity and that LLaMA and Mistral are suboptimal; the other explains FFNs (4x for plain "
            "MLPs, 8/3x for SwiGLU at equal parameters). Experiment verdicts come from this run; the evidence column "
            "says where the others live."], [table(["claim", "verdict", "what the source says", "evidence"],
                                                 [[c.id, c.verdict, c.claim, c.evidence]
                                                  for c in claim_rows])]))
    if audit_rows is not None:
        sections.append(section("audit", "Zoo audit", [], [table(
            ["model", "kind", "raw ratio", "p-m ratio", "FFN share", "params"],
            [[a.name, a.ffn_kind or "-", num(a.ratio_raw, ".2f"), num(a.ratio_param_matched, ".2f"),
              "-" if a.ffn_share is None else f"{a.ffn_share:.0%}",
              "-" if a.params_total is None else f"{a.params_total / 1e9:.2f}B"] for a in audit_rows],
            [False, False, True, True, True, True])]))
    if not cards:
        warnings = [*warnings, "This sweep's spec names no hypotheses, so the report decides none: the tables show "
                               "each comparison with the reference, and a hypotheses block in the spec (id, "
                               "sentence, comparison, margin, claimed effect; docs/experiments.md) turns them "
                               "into verdicts."]
    # the tolerance bounds the d_model search of iso-params and iso-flops (sweep.spec.resolve);
    # fixed-d-model searches nothing, so a tolerance there would describe nothing
    tolerance = "" if spec.control == "fixed-d-model" else f" (tolerance {spec.tolerance:.0%})"
    return {"title": title, "description": spec.description, "warnings": warnings,
            "setup": (f"Control {spec.control}{tolerance}, reference arm {ref}, seeds "
                      f"{', '.join(map(str, spec.seeds))}; equivalence margin {margin:.1%} of the loss."),
            "cards": cards, "scale": scale_rows(result.scale), "sections": sections, "provenance": prov}


FIGURE_TITLES = {
    "forest.png": "Each arm minus the reference: the deciding 95% interval (thick, its test named in the legend), "
                  "the sensitivity interval (thin), every seed (dots) and the equivalence margin (shaded)",
    "pairs.png": "The planned pairs: the deciding interval of each (thick), sensitivity (thin), the margin (shaded)",
    "tokens_to_target.png": "Tokens to the target loss relative to the reference (deciding interval with the "
                            "interpolation error), every seed, and the claimed speed-up, if a hypothesis claims one",
    "kaplan.png": "Loss relative to the reference against the ratio (Kaplan et al. 2020, Fig. 5 form), Fieller 95%",
    "loss_curves.png": "Validation loss over the last half of training (thin: seeds)",
    "frontier.png": "Loss against training compute (mean over seeds)",
    "scale_trend.png": "Left: loss relative to each cell's ratio-4 arm with 95% intervals and the fitted parabola with "
                       "its band; right: each cell's best ratio with Fieller's interval (hollow: no bounded minimum "
                       "inside the tested ratios)",
}
