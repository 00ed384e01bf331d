"""The capacity report: the same report model and templates as the loss sweeps
(:mod:`ffnlab.experiments.reporting.pages`): verdict cards, each budget's comparisons with the deciding
interval marked, the arms, and the figure of bits per parameter against the ratio. The report
folder keeps each budget's record and every run's summary and ``capacity.json``, so
``ffnlab capacity report REPORT_FOLDER`` rebuilds it without the checkpoints."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

from ffnlab.experiments.analysis.verdicts import DecisionJSON
from ffnlab.experiments.capacity.analysis import (
    EQUIVALENCE,
    CapacityArmRow,
    CapacityClaim,
    CapacityResult,
    analyse,
    sweep_folders,
)
from ffnlab.experiments.capacity.design import REPORT_DIR
from ffnlab.experiments.fmt import bounds, interval, num
from ffnlab.experiments.reporting.model import COMPARISON_HEADERS, claim_texts, comparison_rows
from ffnlab.experiments.reporting.pages import PageModel, Section, json_safe, section, table, write_page
from ffnlab.experiments.reporting.report import claim_report_dir
from ffnlab.files import make_dir, write_atomic
from ffnlab.training.capacity import REFERENCE_BITS_PER_PARAM

CLAIM_IDS = {"capacity_peak": "capacity-peaks-at-ratio-4", "capacity_gated": "gated-stores-as-much"}
TITLES = {"bits_vs_ratio.png": "Bits stored per non-embedding parameter against the parameter-matched ratio, mean "
                               "and 95% t interval over seeds (an interval's lower end below 0 is drawn at 0: a "
                               "model cannot store fewer than 0 bits, and the bound is clipped there)"}


def figure(rows: list[CapacityArmRow]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ffnlab.experiments.reporting.plots import FONT, colour, legend, plain_text

    plt.rcParams.update({"font.size": FONT})
    fig, ax = plt.subplots(figsize=(8.0, 4.6))
    ax.set_title("Knowledge stored per parameter vs FFN ratio (95% CI over seeds)")
    ax.set_xlabel("parameter-matched FFN ratio")
    ax.set_ylabel("bits per non-embedding parameter")
    ax.grid(alpha=0.3)
    budgets = list(dict.fromkeys(r.budget for r in rows))
    markers = "os^Dv"
    top = 0.0
    for bi, budget in enumerate(budgets):
        for gated in (False, True):
            sel = sorted((r for r in rows if r.budget == budget and r.gated == gated),
                         key=lambda r: r.ratio_param_matched)
            for r in sel:
                m, lo, hi = r.bits_per_param, r.bits_per_param_lo, r.bits_per_param_hi
                has = not math.isnan(lo)
                top = max(top, hi if has else m)
                ax.errorbar([r.ratio_param_matched * (1 + 0.03 * bi)], [m],
                            yerr=[[m - max(lo, 0.0)], [hi - m]] if has else None, marker=markers[bi % 5], capsize=3,
                            color=colour(r.gated, r.ratio_raw), ls="none",
                            label=f"{budget}: {'gated' if gated else 'plain'}" if r is sel[0] else None)
            if sel and not gated:
                ax.plot([r.ratio_param_matched * (1 + 0.03 * bi) for r in sel], [r.bits_per_param for r in sel],
                        color="#999", lw=0.8, zorder=0)
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, max(top * 1.1, 0.05))
    note = f"the published {REFERENCE_BITS_PER_PARAM:g} bits/param (Allen-Zhu & Li 2024, 1000 exposures)"
    if top * 1.1 >= REFERENCE_BITS_PER_PARAM:
        ax.axhline(REFERENCE_BITS_PER_PARAM, color="k", lw=0.8, ls=":", label=note)
    else:
        ax.text(0.99, 0.98, f"off the axis: {note}", transform=ax.transAxes, ha="right", va="top", fontsize=FONT - 1)
    legend(ax, fontsize=FONT - 1, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    plain_text(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _card(key: str, v: CapacityClaim, texts: dict[str, str]) -> dict[str, str]:
    cid = CLAIM_IDS[key]
    budgets = v.numbers.budgets
    lines = [f"{b}: {interval(*x.interval)}" for b, x in budgets.items() if x.interval is not None]
    return {"id": cid, "analysis": key, "claim": texts.get(cid, ""), "verdict": v.verdict,
            "interval": "; ".join(lines) or "no interval", "unit": "bits/param",
            "comparison": "at each budget (false at either makes the claim false)",
            "method": "; ".join(f"{b}: {x.method or '-'}" for b, x in budgets.items()), "model": "",
            "power": "; ".join(f"{b}: detects {num(x.mde80, '.4f')} bits/param" for b, x in budgets.items()),
            "evidence": v.evidence}


def report_model(result: CapacityResult, title: str) -> PageModel:
    texts = claim_texts()
    rows = result.arms
    sections: list[Section] = []
    for budget in dict.fromkeys(r.budget for r in rows):
        decisions: list[DecisionJSON] = []
        why = ""
        for v in result.claims.values():
            b = v.numbers.budgets.get(budget)
            if b is None:
                continue
            decisions += (b.family["comparisons"] if b.family is not None else []) + (
                [b.decision] if b.decision is not None else [])
            why = why or b.model or ""
        sections.append(section(f"budget-{budget}", f"Comparisons at budget {budget} (bits per parameter)",
                                [why, f"Equivalence margin: {EQUIVALENCE:.0%} of the reference arm's bits per "
                                      "parameter; more is better."],
                                [table(COMPARISON_HEADERS, comparison_rows(decisions))]))
    sections.append(section("arms", "Arms (bits per non-embedding parameter, mean and 95% CI over seeds)", [], [table(
        ["budget", "arm", "raw ratio", "p-m ratio", "d_model", "d_ff", "non-emb params", "bits/param", "95% CI",
         "bits stored", "of entropy", "held-out bits", "exposures", "seeds"],
        [[r.budget, r.arm, f"{r.ratio_raw:.3f}", f"{r.ratio_param_matched:.3f}", r.d_model, r.d_ff,
          f"{r.params_non_embedding:,}", num(r.bits_per_param, ".4f"),
          bounds(r.bits_per_param_lo, r.bits_per_param_hi, ".4f"), num(r.bits, ",.0f"),
          num(r.fraction, ".1%"), num(r.heldout_bits, ",.0f"), num(r.exposures, ".0f"), r.n_seeds]
         for r in rows], [False, False] + [True] * 12)], ["bits_vs_ratio.png"]))
    sections.append(section("seeds", "Bits per parameter per seed", [], [table(
        ["budget", "arm", *[f"seed {s}" for s in result.seeds]],
        [[r.budget, r.arm, *[num(r.seeds.get(str(s)), ".4f") for s in result.seeds]] for r in rows],
        [False, False] + [True] * len(result.seeds))]))
    return {"title": title, "warnings": [], "setup": "",
            "description": (f"Corpus {result.corpus}, seeds {', '.join(map(str, result.seeds))}. "
                            "Bits: Allen-Zhu & Li (2024) lower bound, N x (log2 K - mean value loss in bits) per "
                            "relation over the trained facts; held-out facts (never trained) are the control and "
                            "should hold about none."),
            "cards": [_card(k, v, texts) for k, v in result.claims.items()], "scale": [],
            "sections": sections, "provenance": [("measured from", str(result.root))]}


def keep_runs(root: Path, out: Path, base: Path) -> None:
    """Each budget's record and every run's summary and capacity measure, inside the report
    (never written through a link out of ``base``, the folder the user named)."""
    for folder in sweep_folders(root):
        dst = out if folder == root else out / folder.name
        if folder.resolve() == dst.resolve():
            continue
        make_dir(dst, base)
        write_atomic(dst / "sweep.json", (folder / "sweep.json").read_bytes(), root=base)
        for run in sorted((folder / "runs").iterdir()) if (folder / "runs").is_dir() else []:
            for name in ("summary.json", "capacity.json"):
                if (run / name).is_file():
                    make_dir(dst / "runs" / run.name, base)
                    write_atomic(dst / "runs" / run.name / name, (run / name).read_bytes(), root=base)


def write_report(root: str | Path, out: str | Path | None = None, *, remeasure: bool = False) -> dict[str, Path]:
    """Measure, analyse and write ``capacity.json``, ``claims.json``, ``report.md``, ``index.html``."""
    root = Path(root)
    result = analyse(root, remeasure=remeasure)
    base = Path(out) if out else root  # the folder the user named: nothing is written outside it
    out = Path(out) if out else root / REPORT_DIR
    claim_report_dir(out, base)
    model = report_model(result, f"ffnlab capacity report: {root.name}")
    paths = write_page(out, model, {"bits_vs_ratio.png": figure(result.arms)}, TITLES, root=base)
    write_atomic(out / "capacity.json", json.dumps(json_safe(result), indent=1), root=base)
    write_atomic(out / "claims.json", json.dumps(json_safe(result.claims), indent=1), root=base)
    keep_runs(root, out, base)
    return {**paths, "claims": out / "claims.json", "json": out / "capacity.json", "dir": out}


__all__ = ["analyse", "write_report"]
