"""The knowledge-capacity sweep: bits stored per parameter against the FFN ratio.

A capacity preset (``presets/capacity*.yaml``) is an ordinary sweep spec under ``sweep:``,
run once per parameter ``budgets`` entry (each overrides ``base.model``, e.g. d_model), on a
``facts:`` corpus, with ``train.max_steps`` set from ``exposures``: the steps that show every
training token that many times in expectation (see
:func:`ffnlab.training.capacity.steps_for_exposures`). Each budget is a sweep folder
``OUT/BUDGET`` that ``ffnlab sweep``'s machinery fills (resumable, the same iso-params control).

The analysis measures every run with :func:`ffnlab.training.capacity.measure_run` (Allen-Zhu &
Li 2024's lower bound on stored bits), gives each arm its mean and 95% t interval over seeds of
bits per non-embedding parameter, and decides the two capacity claims with the statistics of
the loss sweeps (:mod:`ffnlab.experiments.analysis`): one model per budget with the variance
pooled over its arms (Levene's test decides whether it may be), Dunnett's many-to-one intervals
or Welch's, and TOST against a margin of ``EQUIVALENCE`` of the reference's bits/param.
"""

from __future__ import annotations

import base64
import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ffnlab import escape
from ffnlab.errors import FfnlabError, require
from ffnlab.experiments.analysis import family, seeds_advice
from ffnlab.experiments.stats import (
    comparison_mde,
    mean_ci,
    pair_interval,
    pair_se_df,
    pooled_model,
    tost,
)
from ffnlab.experiments.sweep_record import load_sweep
from ffnlab.experiments.sweep_spec import PRESET_DIR, SweepSpec, spec_from_dict
from ffnlab.files import check_inside, make_dir, read_mapping, write_atomic
from ffnlab.render import Column, markdown_table
from ffnlab.sizing.kinds import get_kind
from ffnlab.training import runconfig
from ffnlab.training.capacity import REFERENCE_BITS_PER_PARAM, measure_run, steps_for_exposures
from ffnlab.validation import number, safe_name

EQUIVALENCE = 0.10  # equivalence margin: 10% of the reference arm's bits/param ("as much", "no peak")
PRESET_KEYS = {"name", "description", "exposures", "budgets", "sweep"}


@dataclass
class CapacityPreset:
    name: str
    description: str
    exposures: float | None
    budgets: list[dict[str, Any]]
    sweep: dict[str, Any]


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def find_preset(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.is_file():
        return p
    cand = PRESET_DIR / f"{name_or_path}.yaml"
    require(cand.is_file(), f"no capacity preset {name_or_path!r}: not a file, and not a preset "
                            f"({', '.join(sorted(x.stem for x in PRESET_DIR.glob('capacity*.yaml')))})")
    return cand


def load_preset(name_or_path: str) -> CapacityPreset:
    data = runconfig.read_file(find_preset(name_or_path))
    unknown = sorted(set(data) - PRESET_KEYS)
    require(not unknown, f"capacity preset: unknown key(s) {', '.join(unknown)}")
    require("budgets" in data and "sweep" in data and "name" in data,
            "capacity preset: needs name, budgets and sweep (a sweep spec without a name)")
    budgets = data["budgets"]
    require(isinstance(budgets, list) and budgets and all(
        isinstance(b, dict) and isinstance(b.get("name"), str) and isinstance(b.get("model", {}), dict)
        for b in budgets), "capacity preset: budgets must be a list of {name, model: {...}}")
    for i, b in enumerate(budgets):  # each budget is a folder inside --out: a name, never . or a path
        safe_name(b["name"], f"capacity preset: budgets[{i}].name")
    require(len({b["name"] for b in budgets}) == len(budgets), "capacity preset: budget names must be unique")
    require(isinstance(data["sweep"], dict) and "name" not in data["sweep"],
            "capacity preset: sweep must be a mapping (a sweep spec; its name comes from the preset)")
    exposures = data.get("exposures")
    require(exposures is None or (isinstance(exposures, (int, float)) and not isinstance(exposures, bool)
                                  and math.isfinite(exposures) and exposures > 0),
            f"capacity preset: exposures must be a positive number, got {exposures!r}")
    return CapacityPreset(str(data["name"]), str(data.get("description", "")), exposures, budgets, data["sweep"])


def budget_spec(preset: CapacityPreset, budget: dict[str, Any]) -> SweepSpec:
    """The sweep spec of one budget, ``train.max_steps`` set from the exposures."""
    data = copy.deepcopy(preset.sweep)
    data["name"] = f"{preset.name}-{budget['name']}"
    data["description"] = f"{preset.description} (budget {budget['name']})".strip()
    base = _merge(data.get("base", {}), {"model": budget.get("model", {})})
    cfg = runconfig.from_dict(base)
    require(cfg.data.corpus.startswith("facts:") and cfg.data.tokenizer == "byte",
            "capacity preset: base.data must use a 'facts:...' corpus with the byte tokenizer")
    if preset.exposures is not None:
        data_prepared = runconfig.prepare_data(cfg.data, progress=False)
        steps = steps_for_exposures(preset.exposures, data_prepared.train_tokens, cfg.tokens_per_step())
        train = base.setdefault("train", {})
        train["max_steps"] = steps
        train["checkpoint_every"] = steps
        train["eval_every"] = min(int(train.get("eval_every", steps)), steps)
        train["warmup_steps"] = min(int(train.get("warmup_steps", 0)), steps // 10)
    data["base"] = base
    return spec_from_dict(data)


def run_preset(preset: CapacityPreset, out: Path, *, workers: int | None = None,
               backend: str = "local", address: str | None = None) -> dict[str, Any]:
    """Train every budget's sweep into ``out/BUDGET``; return the runs' statuses."""
    from ffnlab.experiments.sweep_run import execute

    status = {}
    for b in preset.budgets:
        spec = budget_spec(preset, b)
        status[b["name"]] = execute(spec, check_inside(out / b["name"], out), backend=backend, address=address,
                                    workers=workers)
    write_atomic(out / "capacity-preset.json", json.dumps(
        {"name": preset.name, "description": preset.description, "exposures": preset.exposures,
         "budgets": preset.budgets}, indent=1))
    return status


# ---------------------------------------------------------------- analysis


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
    runs: list[dict[str, Any]] = field(default_factory=list)

    def values(self, key: str) -> list[float]:
        return [float(r[key]) for r in self.runs]

    @property
    def mean(self) -> float:
        v = self.values("bits_per_param")
        return sum(v) / len(v)


def sweep_folders(root: Path) -> list[Path]:
    """The sweep folders under ``root`` (itself, or its budget sub-folders)."""
    if (root / "sweep.json").is_file():
        return [root]
    found = sorted(p for p in root.iterdir() if (p / "sweep.json").is_file()) if root.is_dir() else []
    require(found, f"{root} is neither a sweep folder nor a folder of capacity sweeps (no sweep.json)")
    return found


def _cached(path: Path, summary: Path) -> dict[str, Any] | None:
    """A run's ``capacity.json`` if it is newer than the run's summary and complete, else None (remeasure)."""
    try:
        if path.stat().st_mtime < summary.stat().st_mtime:
            return None
        r = read_mapping(path, "capacity cache", fmt="JSON")
        for v in (r["trained"]["bits"], r["trained"]["fraction"], r["trained"]["entropy_bits"], r["heldout"]["bits"],
                  r["bits_per_param"], r["bits_per_param_total"], r["exposures"]):
            number(v, str(path), 0, text_ok=False)
        return r
    except (OSError, FfnlabError, KeyError, TypeError):  # truncated by a kill, edited, absent: measured again
        return None


def measure_sweep(folder: Path, *, remeasure: bool = False, root: Path | None = None) -> list[ArmCapacity]:
    """Every run of one sweep folder measured (``capacity.json`` per run is reused)."""
    record = load_sweep(folder)  # the sweep record and every run's files validated (one error line)
    arms: dict[str, ArmCapacity] = {}
    missing = []
    for r in record["runs"]:
        run = folder / "runs" / r["run"]
        if not (run / "summary.json").is_file():
            missing.append(r["run"])
            continue
        check_inside(run, root or folder)  # its capacity.json is rewritten: never through a link out of the folder
        # reused unless the run finished (again) after it was measured, or the cache is damaged
        cached = None if remeasure else _cached(run / "capacity.json", run / "summary.json")
        result = cached or measure_run(run)
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


def arm_rows(arms: list[ArmCapacity]) -> list[dict[str, Any]]:
    rows = []
    for a in arms:
        bpp = mean_ci(a.values("bits_per_param"))
        rows.append({
            "budget": a.budget, "arm": a.arm, "kind": a.kind, "gated": a.gated, "d_model": a.d_model,
            "d_ff": a.d_ff, "ratio_raw": a.ratio_raw, "ratio_param_matched": a.ratio_param_matched,
            "params_non_embedding": a.params_non_embedding, "n_seeds": len(a.runs),
            "bits_per_param": bpp[0], "bits_per_param_lo": bpp[1], "bits_per_param_hi": bpp[2],
            "bits": mean_ci(a.values("bits"))[0], "entropy_bits": a.runs[0]["entropy_bits"],
            "fraction": mean_ci(a.values("fraction"))[0], "heldout_bits": mean_ci(a.values("heldout_bits"))[0],
            "bits_per_param_total": mean_ci(a.values("bits_per_param_total"))[0],
            "exposures": mean_ci(a.values("exposures"))[0],
        })
    return rows


def _iv(d: list[float]) -> str:
    return f"{d[0]:+.4f} [{d[1]:+.4f}, {d[2]:+.4f}]"


def _combine(per_budget: dict[str, dict[str, Any]], order: tuple[str, ...]) -> str:
    verdicts = [v["verdict"] for v in per_budget.values()]
    return next((v for v in order if v in verdicts), verdicts[0])


def _undecided(text: str, n: int, mde80: float, diff: float, se: float, df: float, margin: float,
               alpha: float) -> dict[str, Any]:
    return {"verdict": "inconclusive",
            "evidence": text + f", neither significant nor equivalent within +/-{margin:.4f}; this design "
                        f"detects {mde80:.4f} bits/param with 80% power"
                        + seeds_advice(n, mde80, diff, se, df, margin, alpha)}


def _stored_nothing(arms: list[ArmCapacity]) -> bool:
    return all(v == 0 for a in arms for v in a.values("bits_per_param"))


def _nothing(budget: str) -> dict[str, Any]:
    """The outcome when every compared run stored 0 bits: no interval exists, and none is needed to
    see that these models learned none of the facts."""
    return {"verdict": "inconclusive",
            "evidence": f"{budget}: every compared run stored 0 bits (the models learned none of the facts), "
                        "so the ratios cannot be told apart; train longer (raise exposures) or use larger models"}


def verdict_peak(by_budget: dict[str, list[ArmCapacity]]) -> dict[str, Any]:
    """"Capacity per parameter peaks at ratio 4": at each budget the plain ratio-4 arm against
    every other plain arm, as the loss sweeps judge ratio-4-optimal (:mod:`analysis`): one model of
    bits/param with the variance pooled over the arms, Dunnett's many-to-one intervals (Welch with
    Bonferroni when Levene rejects equal variances), TOST against a margin of ``EQUIVALENCE`` of
    ratio 4's figure. false if another ratio stores significantly more, or as much within the
    margin; true if every other ratio stores significantly less; misleading if so but one by less
    than the margin; otherwise inconclusive. false at either budget makes the claim false."""
    per: dict[str, dict[str, Any]] = {}
    for budget, arms in by_budget.items():
        plain = [a for a in arms if not a.gated]
        ref = next((a for a in plain if abs(a.ratio_raw - 4) < 1e-9), None)
        others = [a for a in plain if a is not ref]
        if ref is None or not others:
            per[budget] = {"verdict": "needs-experiment", "evidence": f"{budget}: no plain ratio-4 arm to compare"}
            continue
        if _stored_nothing([ref, *others]):
            per[budget] = _nothing(budget)
            continue
        if any(len(a.runs) < 2 for a in [ref, *others]):
            per[budget] = {"verdict": "inconclusive",
                           "evidence": f"{budget}: one seed per arm, no interval; run more seeds per arm"}
            continue
        fam = family("bits per parameter", {a.arm: a.values("bits_per_param") for a in [ref, *others]}, ref.arm)
        cmp = {a.arm: fam.deciding[a.arm] for a in others}  # arm - ratio 4
        margin = EQUIVALENCE * ref.mean
        alpha = 0.05 / len(others)
        se_df = {k: pair_se_df(fam.model, k, ref.arm) for k in cmp}
        equiv = {k: tost(c.diff, *se_df[k], margin, alpha).equivalent for k, c in cmp.items()}
        more = [k for k, c in cmp.items() if c.lo > 0]
        less = [k for k, c in cmp.items() if c.hi < 0]
        head = f"{budget} ({fam.method})"
        if more:
            k = max(more, key=lambda x: cmp[x].diff)
            per[budget] = {"verdict": "false", "evidence": f"{head}: {k} stores more than ratio 4: "
                                                           f"{_iv(cmp[k].as_list())} bits/param"}
        elif any(equiv[k] and k not in less for k in cmp):
            k = next(k for k in cmp if equiv[k] and k not in less)
            per[budget] = {"verdict": "false", "evidence": f"{head}: {k} stores as much as ratio 4 within "
                                                           f"+/-{margin:.4f}: {_iv(cmp[k].as_list())} bits/param"}
        elif len(less) == len(cmp):
            k = max(cmp, key=lambda x: cmp[x].diff)
            tiny = [x for x in cmp if equiv[x]]
            verdict = "misleading" if tiny else "true"
            note = f", by less than the margin +/-{margin:.4f} for {tiny[0]}" if tiny else ""
            per[budget] = {"verdict": verdict, "evidence": f"{head}: every other ratio stores less{note}; closest "
                                                           f"{k}: {_iv(cmp[k].as_list())} bits/param"}
        else:
            k = max((x for x in cmp if x not in less), key=lambda x: cmp[x].diff)
            per[budget] = _undecided(f"{head}: {k} - ratio 4 = {_iv(cmp[k].as_list())} bits/param",
                                     min(fam.model.counts[ref.arm], fam.model.counts[k]), fam.mde(k),
                                     cmp[k].diff, *se_df[k], margin, alpha)
    verdict = _combine(per, ("false", "needs-experiment", "inconclusive", "misleading", "true"))
    return {"verdict": verdict, "evidence": "; ".join(v["evidence"] for v in per.values()),
            "numbers": {"budgets": per, "margin_share": EQUIVALENCE}}


def verdict_gated(by_budget: dict[str, list[ArmCapacity]]) -> dict[str, Any]:
    """"Gated FFNs store as much per parameter as plain ones": at each budget the comparison fixed
    in advance, the gated arm at parameter-matched ratio 4 minus the plain ratio-4 arm (equal
    parameters, as Shazeer 2020 compared them), a t interval on the variance pooled over the
    budget's arms (Welch's on the pair when Levene rejects equal variances) and TOST against a
    margin of ``EQUIVALENCE`` of the plain figure. true if equivalent within the margin or gated
    stores significantly more; false if it stores significantly less by more than the margin;
    otherwise inconclusive. false at either budget makes the claim false."""
    per: dict[str, dict[str, Any]] = {}
    for budget, arms in by_budget.items():
        g = next((a for a in arms if a.gated and abs(a.ratio_param_matched - 4) < 0.05), None)
        p = next((a for a in arms if not a.gated and abs(a.ratio_raw - 4) < 1e-9), None)
        if g is None or p is None:
            per[budget] = {"verdict": "needs-experiment",
                           "evidence": f"{budget}: needs a gated arm at parameter-matched ratio 4 and a plain "
                                       "ratio-4 arm"}
            continue
        if _stored_nothing([g, p]):
            per[budget] = _nothing(budget)
            continue
        model = pooled_model({a.arm: a.values("bits_per_param") for a in arms if len(a.runs)})
        c, df = pair_interval(model, g.arm, p.arm)
        iv, diff, se = c.as_list(), c.diff, c.se
        text = f"{budget}: {g.arm} - {p.arm} = "
        if c.lo != c.lo:
            per[budget] = {"verdict": "inconclusive",
                           "evidence": text + f"{diff:+.4f} bits/param, no interval (one seed or no spread); "
                                              "run more seeds per arm"}
            continue
        margin = EQUIVALENCE * p.mean
        eq = tost(diff, se, df, margin)
        method = (f"pooled t, {model.df} df" if model.homogeneous
                  else f"Welch t, {df:.1f} df, variances differ: Levene p = {model.levene_p:.3g}")
        text += f"{_iv(iv)} bits/param ({method}; plain {p.mean:.4f}, margin +/-{margin:.4f})"
        if eq.equivalent:
            per[budget] = {"verdict": "true", "evidence": text + f", equivalent within the margin (TOST p = {eq.p:.3g})"}
        elif iv[1] > 0:
            per[budget] = {"verdict": "true", "evidence": text + ", gated stores more"}
        elif iv[2] < 0:
            per[budget] = {"verdict": "false", "evidence": text + ", gated stores less"}
        else:
            per[budget] = _undecided(text, min(len(g.runs), len(p.runs)), comparison_mde(c, df), diff, se, df,
                                     margin, 0.05)
    verdict = _combine(per, ("false", "needs-experiment", "inconclusive", "true"))
    return {"verdict": verdict, "evidence": "; ".join(v["evidence"] for v in per.values()),
            "numbers": {"budgets": per, "margin_share": EQUIVALENCE}}


def analyse(root: str | Path, *, remeasure: bool = False) -> dict[str, Any]:
    folders = sweep_folders(Path(root))
    by_budget = {f.name: measure_sweep(f, remeasure=remeasure, root=Path(root)) for f in folders}
    arms = [a for v in by_budget.values() for a in v]
    first = load_sweep(folders[0])
    return {"root": str(root), "corpus": first["spec"].get("base", {}).get("data", {}).get("corpus", "?"),
            "seeds": first["spec"]["seeds"], "arms": arm_rows(arms),
            "claims": {"capacity_peak": verdict_peak(by_budget), "capacity_gated": verdict_gated(by_budget)},
            "reference_bits_per_param": REFERENCE_BITS_PER_PARAM}


# ---------------------------------------------------------------- report


COLUMNS = [
    Column("budget", "budget", justify="left"), Column("arm", "arm", justify="left"),
    Column("ratio_raw", "raw ratio", lambda x: f"{x:.3f}"),
    Column("ratio_param_matched", "p-m ratio", lambda x: f"{x:.3f}"),
    Column("d_model", "d_model"), Column("d_ff", "d_ff"),
    Column("params_non_embedding", "non-emb params", lambda x: f"{x:,}"),
    Column("bits_per_param", "bits/param", lambda x: f"{x:.4f}"), Column("ci", "95% CI", justify="left"),
    Column("bits", "bits stored", lambda x: f"{x:,.0f}"), Column("fraction", "of entropy", lambda x: f"{x:.1%}"),
    Column("heldout_bits", "held-out bits", lambda x: f"{x:,.0f}"),
    Column("exposures", "exposures", lambda x: f"{x:.0f}"), Column("n_seeds", "seeds"),
]


def _figure(rows: list[dict[str, Any]]) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.set_title("Knowledge stored per parameter vs FFN ratio (95% CI over seeds)")
    ax.set_xlabel("parameter-matched FFN ratio")
    ax.set_ylabel("bits per non-embedding parameter")
    ax.grid(alpha=0.3)
    for budget in dict.fromkeys(r["budget"] for r in rows):
        for gated, marker in ((False, "o"), (True, "s")):
            sel = sorted((r for r in rows if r["budget"] == budget and r["gated"] == gated),
                         key=lambda r: r["ratio_param_matched"])
            if not sel:
                continue
            err = [[r["bits_per_param"] - r["bits_per_param_lo"] if r["bits_per_param_lo"] == r["bits_per_param_lo"]
                    else 0 for r in sel],
                   [r["bits_per_param_hi"] - r["bits_per_param"] if r["bits_per_param_hi"] == r["bits_per_param_hi"]
                    else 0 for r in sel]]
            ax.errorbar([r["ratio_param_matched"] for r in sel], [r["bits_per_param"] for r in sel], yerr=err,
                        marker=marker, capsize=3, ls="none" if gated else "-",
                        label=escape.visible(f"{budget}: {'gated' if gated else 'plain'}").replace("$", r"\$"))
    ax.axhline(REFERENCE_BITS_PER_PARAM, color="k", lw=0.8, ls=":",
               label="2 bits/param (Allen-Zhu & Li 2024, 1000 exposures)")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _ci_text(r: dict[str, Any]) -> str:
    lo, hi = r["bits_per_param_lo"], r["bits_per_param_hi"]
    return "n/a (1 seed)" if lo != lo else f"[{lo:.4f}, {hi:.4f}]"


def write_report(root: str | Path, out: str | Path | None = None, *, remeasure: bool = False) -> dict[str, Path]:
    """Measure, analyse and write ``capacity.json``, ``claims.json``, ``report.md``, ``index.html``."""
    top = Path(out) if out else Path(root)  # the folder the user named: nothing is written outside it
    out = Path(out) if out else Path(root) / "capacity-report"
    check_inside(out, top, "the report folder")
    result = analyse(root, remeasure=remeasure)
    if out.exists():
        require(out.is_dir(), f"{out} is a file; choose a folder for the report")
    make_dir(out, top)
    rows = [{**r, "ci": _ci_text(r)} for r in result["arms"]]
    png = _figure(result["arms"])
    write_atomic(out / "bits_vs_ratio.png", png, root=top)
    write_atomic(out / "capacity.json", json.dumps(result, indent=1), root=top)
    write_atomic(out / "claims.json", json.dumps(result["claims"], indent=1), root=top)
    claims = result["claims"]
    title = f"ffnlab capacity report: {Path(root).resolve().name}"
    intro = (f"Corpus `{result['corpus']}`, seeds {result['seeds']}. Bits: Allen-Zhu & Li (2024) lower bound, "
             "N x (log2 K - mean value loss in bits) per relation over the trained facts; held-out facts (never "
             "trained) are the control and should hold about none.")
    md = [f"# {escape.markdown(title)}", "", escape.markdown(intro), "", "## Verdicts", "",
          *[f"- **{escape.markdown(k)}**: `{escape.markdown(v['verdict'])}` — {escape.markdown(v['evidence'])}"
            for k, v in claims.items()], "",
          "## Arms (bits per non-embedding parameter, mean and 95% CI over seeds)", "",
          markdown_table(rows, COLUMNS), "", "![bits per parameter vs ratio](bits_vs_ratio.png)", ""]
    write_atomic(out / "report.md", "\n".join(md), root=top)
    head = "".join(f"<th>{escape.html(c.header)}</th>" for c in COLUMNS)
    body_rows = "".join("<tr>" + "".join(f"<td>{escape.html(c.fmt(r[c.key]) if r.get(c.key) is not None else '-')}</td>"
                                         for c in COLUMNS) + "</tr>" for r in rows)
    page = ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{escape.html(title)}</title><style>body{{font-family:system-ui,sans-serif;max-width:1100px;"
            "margin:2em auto}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
            f"padding:3px 7px}}</style></head><body><h1>{escape.html(title)}</h1><p>{escape.html(intro)}</p>"
            "<h2>Verdicts</h2><ul>" + "".join(f"<li><b>{escape.html(k)}</b>: {escape.html(v['verdict'])} — "
                                             f"{escape.html(v['evidence'])}</li>" for k, v in claims.items()) +
            f"</ul><h2>Arms</h2><table><tr>{head}</tr>{body_rows}</table>"
            f"<img alt='bits per parameter vs ratio' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
            "</body></html>")
    write_atomic(out / "index.html", page, root=top)
    return {"html": out / "index.html", "markdown": out / "report.md", "claims": out / "claims.json",
            "json": out / "capacity.json", "dir": out}


__all__ = ["FfnlabError", "analyse", "budget_spec", "load_preset", "run_preset", "write_report"]
