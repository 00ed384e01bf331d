"""Write a sweep's report: one report model (:func:`report_model`) rendered by two Jinja2
templates (``templates/report.html.j2``, autoescaped, and ``templates/report.md.j2``), so the HTML
and Markdown pages cannot drift; plus CSV/JSON of every number, ``claims.json`` (for ``ffnlab
claims --evidence``) and the figures."""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import os
import platform
from pathlib import Path
from typing import Any

from ffnlab import escape
from ffnlab.errors import require
from ffnlab.experiments import plots
from ffnlab.experiments.analysis import CLAIMED_SPEEDUP, analyse
from ffnlab.experiments.sweep_record import load_sweep
from ffnlab.experiments.sweep_spec import DEFAULT_MARGIN
from ffnlab.files import check_inside, make_dir, remove_stale, write_atomic
from ffnlab.provenance import git_commit

Table = dict[str, Any]  # {"headers": [...], "rows": [[str, ...]], "right": [bool per column]}


def provenance(result: dict[str, Any]) -> dict[str, Any]:
    import torch

    runs = [r for a in result["arm_objects"] for r in a.runs]
    first = runs[0].summary if runs else {}
    return {
        "ffnlab_commit_report": git_commit(),
        "ffnlab_commits_training": sorted({r.summary.get("ffnlab_commit", "unknown") for r in runs}),
        "torch": torch.__version__, "python": platform.python_version(),
        "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(), "device": first.get("device"),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "runs": len(runs), "train_wall_s_total": sum(r.summary.get("wall_s", 0.0) for r in runs),
        "corpus": result["spec"]["base"].get("data", {}).get("corpus", "shakespeare"),
        "tokenizer": first.get("tokenizer"), "tokens_per_run": first.get("tokens"),
    }


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not (isinstance(x, float) and math.isnan(x))


def _num(x: Any, fmt: str = ".4f") -> str:
    return f"{x:{fmt}}" if _finite(x) else "n/a"


def _iv(lo: Any, hi: Any, fmt: str = ".4f") -> str:
    return f"[{lo:{fmt}}, {hi:{fmt}}]" if _finite(lo) and _finite(hi) else "no interval"


def table(headers: list[str], rows: list[list[Any]], right: list[bool] | None = None) -> Table:
    """A table for the templates: every cell a string."""
    return {"headers": headers, "rows": [[str(c) for c in r] for r in rows],
            "right": right or [False] * len(headers)}


CLAIM_OF = {"ratio_optimal": "ratio-4-optimal", "convergence_speed": "golden-transformer-8pct",
            "glu_vs_plain": "glu-beats-plain", "gated_law": "gated-ratio-4"}


def _cards(result: dict[str, Any]) -> list[dict[str, str]]:
    from ffnlab.sizing.claims import load_claims

    texts = {c["id"]: c["claim"] for c in load_claims()}
    cards = []
    for key, v in result["claims"].items():
        cid = CLAIM_OF.get(key, key)
        point, lo, hi = (v.get("interval") or [math.nan] * 3)
        ratio = key == "convergence_speed"
        fmt = ".3f" if ratio else "+.4f"
        mde = v.get("mde80", math.nan)
        power = ("n/a" if not _finite(mde) else
                 f"detects a {math.exp(mde) - 1:.1%} change in tokens" if ratio else f"detects {mde:.4f} nats")
        cards.append({"id": cid, "analysis": key, "claim": texts.get(cid, ""), "verdict": v["verdict"],
                      "interval": f"{_num(point, fmt)} {_iv(lo, hi, fmt)}", "unit": v.get("unit", ""),
                      "comparison": v.get("comparison", ""), "method": v.get("method", ""),
                      "power": f"{power} with 80% power" if _finite(mde) else "n/a (no interval)",
                      "evidence": v["evidence"]})
    return cards


def _scale_rows(sc: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("non-embedding parameters (reference)", f"{sc['params_non_embedding']:,}")]
    if sc.get("tokens_per_run"):
        rows.append(("training tokens per run", f"{sc['tokens_per_run']:,}"))
        rows.append(("tokens per non-embedding parameter", _num(sc.get("tokens_per_param"), ".2f")))
    if sc.get("epochs") is not None:
        rows.append(("epochs of the training split", _num(sc["epochs"], ".3f")))
    rows.append(("bits per byte (reference)", _num(sc.get("bits_per_byte"), ".3f")))
    if sc.get("eval_windows"):
        rows.append(("validation windows (spread over the split, fixed seed)",
                     f"{sc['eval_windows']:,} = {sc['eval_tokens']:,} tokens, "
                     f"{sc['eval_share']:.1%} of {sc['val_tokens']:,}"))
    return rows


SEED_HEADERS = ["arm", "FFN ratio (raw / param-matched)", "training FLOPs/token", "perplexity (95% CI)",
                "bits per byte (95% CI)"]
ARM_HEADERS = ["arm", "FFN", "raw ratio", "p-m ratio", "d_model", "d_ff", "non-emb params", "FLOPs/token",
               "val loss", "95% CI", "seeds"]


def report_model(result: dict[str, Any], prov: dict[str, Any], *, title: str,
                 claim_rows: list[dict[str, Any]] | None = None,
                 audit_rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Everything the two templates show, as strings and tables: one structure, two renderings."""
    spec = result["spec"]
    ref = result["reference"]
    arms = result["arms"]
    lm = result["loss_model"]
    m = lm["model"]
    seed_table = table(SEED_HEADERS, [[
        r["arm"], f"{r['ratio_raw']:.3f} / {r['ratio_param_matched']:.3f}", f"{r['train_flops_per_token']:,.0f}",
        f"{r['val_ppl']:.3f} {_iv(r['val_ppl_lo'], r['val_ppl_hi'], '.3f')}",
        f"{r['val_bpb']:.4f} {_iv(r['val_bpb_lo'], r['val_bpb_hi'])}"] for r in arms], [False, True, True, True, True])
    arm_table = table(ARM_HEADERS, [[
        r["arm"], r["kind"], f"{r['ratio_raw']:.3f}", f"{r['ratio_param_matched']:.3f}", r["d_model"], r["d_ff"],
        f"{r['params_non_embedding']:,}", f"{r['train_flops_per_token'] / 1e6:.2f}M", f"{r['val_loss']:.4f}",
        _iv(r["val_loss_lo"], r["val_loss_hi"]), r["n_seeds"]] for r in arms], [False, False] + [True] * 9)
    seeds_table = table(["arm", *[f"seed {s}" for s in spec["seeds"]]],
                        [[r["arm"], *[f"{v:.4f}" for v in r["seed_losses"]]] for r in arms],
                        [False] + [True] * len(spec["seeds"]))
    comp_table = table(["arm", f"arm - {ref} (nats)", "Dunnett 95% (simultaneous)", "Dunnett p",
                        "Welch, Bonferroni (sensitivity)", "detectable at 80% power"],
                       [[c["arm"], f"{c['diff']:+.4f}", _iv(*c["dunnett"], "+.4f"), _num(c["p_dunnett"], ".3g"),
                         _iv(*c["welch_bonferroni"], "+.4f"), _num(c["mde80"])] for c in lm["comparisons"]],
                       [False] + [True] * 5)
    conv = result["convergence"]
    conv_table = table(["arm", "runs reaching target", "mean tokens to target", "tokens vs reference (Dunnett 95%)",
                        "Welch, Bonferroni", "bootstrap (descriptive)", "training FLOPs vs reference"],
                       [[name, f"{row['reached']}/{row['runs']}",
                         "-" if row["tokens_mean"] is None else f"{row['tokens_mean']:,.0f}",
                         "1 (reference)" if name == ref else
                         "-" if "tokens_ratio" not in row else f"{row['tokens_ratio'][0]:.3f} "
                         f"{_iv(*row['tokens_ratio'][1:], '.3f')}",
                         "-" if "tokens_ratio_welch" not in row else _iv(*row["tokens_ratio_welch"][1:], ".3f"),
                         "-" if "tokens_ratio_bootstrap" not in row else _iv(*row["tokens_ratio_bootstrap"][1:], ".3f"),
                         "-" if "flops_ratio" not in row else f"{row['flops_ratio']:.3f}"]
                        for name, row in conv["arms"].items()], [False] + [True] * 6)
    kaplan_table = table(["arm", "raw ratio", "loss increase over the best", "95% CI"],
                         [[k["arm"], f"{k['ratio_raw']:.3f}", f"{k['loss_increase']:+.2%}",
                           _iv(k["lo"], k["hi"], "+.2%")] for k in result["kaplan"]], [False, True, True, True])
    power = result["power"]
    power_lines = [f"pooled within-arm sigma {_num(power['sigma'])} nats on {power['df']} degrees of freedom"]
    power_lines += [f"{arm} vs {ref}: minimum detectable difference at 80% power {_num(v)} nats"
                    for arm, v in power["mde80"].items()]
    power_lines += [f"power for a true difference of {name}: {_num(p, '.0%')}"
                    for name, p in power.get("power_for", {}).items()]
    homog = (f"Levene (median) p = {_num(m['levene_p'], '.3g')}, Bartlett p = {_num(m['bartlett_p'], '.3g')}: "
             + ("no evidence against equal variances, so the pooled model and Dunnett's intervals decide"
                if m["homogeneous"] else "variances differ, so Welch's intervals (Bonferroni) decide"))
    out: dict[str, Any] = {
        "title": title, "description": spec.get("description", ""), "reference": ref,
        "setup": (f"Control {spec['control']} (tolerance {spec['tolerance']:.0%}), reference arm {ref}, seeds "
                  f"{', '.join(map(str, spec['seeds']))}, corpus {prov['corpus']} ({prov['tokenizer']} tokenizer), "
                  f"equivalence margin {spec.get('margin', DEFAULT_MARGIN):.1%} of the loss, "
                  f"claimed speed-up {CLAIMED_SPEEDUP:.2f}."),
        "cards": _cards(result), "scale": _scale_rows(result["scale"]), "power": power_lines,
        "model": f"{lm['method']}. Homogeneity: {homog}.",
        "comparisons": comp_table, "seed_table": seed_table, "arm_table": arm_table, "seeds_table": seeds_table,
        "target": f"{conv['target_loss']:.4f}", "conv_table": conv_table, "kaplan_table": kaplan_table,
        "claims_table": None, "audit_table": None, "trend_table": None,
        "provenance": [(k, str(v)) for k, v in prov.items()],
    }
    if result.get("scale_trend"):
        out["trend_table"] = table(
            ["size", "d_model", "non-emb params", "tokens per run", "best raw ratio (95% CI)", "inside the tested range",
             "verdicts at this size"],
            [[t["scale"], t["d_model"], f"{t['params_non_embedding']:,}", f"{t['tokens']:,}" if t["tokens"] else "-",
              f"{_num(t['best_ratio'], '.2f')} {_iv(t['lo'], t['hi'], '.2f')}" if _finite(t["best_ratio"])
              else "no interior minimum", "yes" if t["inside_tested"] else "no",
              ", ".join(f"{CLAIM_OF.get(k, k)}: {v}" for k, v in t["verdicts"].items())]
             for t in result["scale_trend"]], [False, True, True, True, True, False, False])
    if claim_rows is not None:
        out["claims_table"] = table(["claim", "verdict", "what the seed says", "evidence"],
                                    [[c["id"], c["verdict"], c["claim"], c["evidence"]] for c in claim_rows])
    if audit_rows is not None:
        out["audit_table"] = table(
            ["model", "kind", "raw ratio", "p-m ratio", "FFN share", "params"],
            [[a["name"], a.get("ffn_kind") or "-", _num(a.get("ratio_raw"), ".2f"),
              _num(a.get("ratio_param_matched"), ".2f"),
              "-" if a.get("ffn_share") is None else f"{a['ffn_share']:.0%}",
              "-" if a.get("params_total") is None else f"{a['params_total'] / 1e9:.2f}B"] for a in audit_rows],
            [False, False, True, True, True, True])
    return out


FIGURES = (("forest.png", "Each arm minus the reference, with the deciding intervals and every seed"),
           ("tokens_to_target.png", "Tokens to the target loss, relative to the reference"),
           ("kaplan.png", "Loss increase against the ratio (Kaplan et al. 2020, Fig. 5 form)"),
           ("loss_curves.png", "Validation loss, zoomed on the last half of training"),
           ("frontier.png", "Loss against training compute"),
           ("scale_trend.png", "The scale trend: loss increase vs ratio per size, and each size's best ratio"))


def _figures(result: dict[str, Any]) -> dict[str, bytes]:
    spec, lm = result["spec"], result["loss_model"]
    ref = result["reference"]
    seeds = {r["arm"]: r["seed_losses"] for r in result["arms"]}
    ref_mean = next(r["val_loss"] for r in result["arms"] if r["arm"] == ref)
    arms = result["arm_objects"]
    return {
        "forest.png": plots.forest(lm["comparisons"], seeds, ref, ref_mean,
                                   spec.get("margin", DEFAULT_MARGIN) * ref_mean),
        "tokens_to_target.png": plots.tokens_to_target(result["convergence"]),
        "kaplan.png": plots.kaplan(result["kaplan"]),
        "loss_curves.png": plots.loss_curves(arms, result["convergence"]["target_loss"]),
        "frontier.png": plots.frontier(arms),
        **({"scale_trend.png": plots.scale_trend(result["scale_trend"])} if result.get("scale_trend") else {}),
    }


def _environment():  # noqa: ANN202 - jinja2.Environment
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("ffnlab.experiments", "templates"),
                             autoescape=jinja2.select_autoescape(["html.j2"]), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             finalize=escape.visible)  # no control characters from files reach a page
    env.filters["md"] = md_cell
    return env


def md_cell(text: Any) -> str:
    """A string as one Markdown table cell or line (:func:`ffnlab.escape.markdown`)."""
    return escape.markdown(text)


def render(model: dict[str, Any], images: dict[str, bytes]) -> tuple[str, str]:
    """(HTML, Markdown) of one report model."""
    env = _environment()
    figs = [{"name": n, "title": t, "data": base64.b64encode(images[n]).decode()} for n, t in FIGURES if n in images]
    html = env.get_template("report.html.j2").render(r=model, figures=figs)
    md = env.get_template("report.md.j2").render(r=model, figures=figs)
    return html, md


def _json_safe(x: Any) -> Any:
    """NaN -> None, recursively (strict JSON has no NaN)."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def write_report(sweep_dir: str | Path, out_dir: str | Path | None = None, *, title: str | None = None,
                 with_claims: bool = False, audit_rows: list[dict[str, Any]] | None = None) -> dict[str, Path]:
    """Analyse ``sweep_dir`` and write the report files into ``out_dir`` (default: sweep_dir/report).

    ``with_claims`` adds the table of every claim of the seed documents, with this run's experiment
    verdicts filled in; ``audit_rows`` (from ``sizing.audit``) adds the zoo audit at the end."""
    load_sweep(sweep_dir)  # the whole sweep folder validated before any report folder exists
    out = Path(out_dir) if out_dir else Path(sweep_dir) / "report"
    root = out if out_dir else Path(sweep_dir)  # the folder the user named: nothing is written outside it
    claim_report_dir(out, root)
    result = analyse(sweep_dir)
    make_dir(out / "plots", root)
    images = _figures(result)
    for name, data in images.items():
        write_atomic(out / "plots" / name, data, root=root)
    prov = provenance(result)
    claims = _json_safe(result["claims"])
    claim_rows = None
    if with_claims:
        from ffnlab.sizing.claims import check_claims

        claim_rows = check_claims(claims)
    model = report_model(result, prov, title=title or f"ffnlab sweep report: {result['spec']['name']}",
                         claim_rows=claim_rows, audit_rows=audit_rows)
    html, md = render(model, images)
    write_atomic(out / "index.html", html, root=root)
    write_atomic(out / "report.md", md, root=root)
    serial = {k: v for k, v in result.items() if k != "arm_objects"}
    serial["provenance"] = prov
    write_atomic(out / "results.json", json.dumps(_json_safe(serial), indent=1, default=str), root=root)
    write_atomic(out / "claims.json", json.dumps(claims, indent=1), root=root)
    fields = [k for k in result["arms"][0] if k != "seed_losses"]
    write_atomic(out / "arms.csv", _csv([fields, *[[a.get(k) for k in fields] for a in result["arms"]]]), root=root)
    write_atomic(out / "runs.csv", _csv([["run", "arm", "seed", "final_val_loss", "final_val_ppl", "final_val_bpb",
                                          "tokens", "train_flops", "wall_s"]] + [
        [r.run, r.arm, r.seed, r.summary["final_val_loss"], r.summary["final_val_ppl"], r.summary["final_val_bpb"],
         r.summary["tokens"], r.summary["train_flops"], r.summary["wall_s"]]
        for a in result["arm_objects"] for r in a.runs]), root=root)
    return {"html": out / "index.html", "markdown": out / "report.md", "claims": out / "claims.json",
            "results": out / "results.json", "dir": out}


def _csv(rows: list[list[Any]]) -> str:
    """CSV text of ``rows``, each cell through :func:`ffnlab.escape.csv_cell` (no formulas from names)."""
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows([[escape.csv_cell(c) for c in row] for row in rows])
    return buf.getvalue()


MARKER = ".ffnlab-report"


def claim_report_dir(out: Path, root: Path | None = None) -> None:
    """Make ``out`` a report folder, refusing one that holds anything else (never overwrite), or
    (with ``root``) one that leads outside ``root`` through a symlink."""
    if root is not None:
        check_inside(out, root, "the report folder")
    if out.exists():
        require(out.is_dir(), f"{out} is a file; choose a folder for the report")
        remove_stale(out)  # temporary folders of a report write a kill interrupted (ffnlab's marked ones only)
        foreign = [p.name for p in out.iterdir() if p.name not in (MARKER, "sweep")]
        require((out / MARKER).exists() or not foreign,
                f"{out} holds files that are not an ffnlab report ({', '.join(sorted(foreign)[:3])}); choose another --out")
    make_dir(out, root)
    write_atomic(out / MARKER, "written by ffnlab report; its files are rewritten on each run\n")


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CHECK = """<script>window.addEventListener('load', () => {
  const imgs = [...document.images];
  const bad = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt);
  document.body.setAttribute('data-ffnlab-check', JSON.stringify({images: imgs.length, undecoded: bad,
    scroll_width: document.documentElement.scrollWidth, viewport_width: window.innerWidth}));
});</script>"""


def find_browser() -> str | None:
    """A headless-capable Chromium on PATH, or None."""
    import shutil

    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def check_in_browser(index_html: Path, *, width: int = 1280, screenshot: Path | None = None,
                     browser: str | None = None, timeout: float = 120) -> dict[str, Any] | None:
    """Load ``index_html`` in headless Chromium at ``width`` px: how many images decoded and
    whether the page is wider than the viewport; save a screenshot if asked. None without a browser."""
    import re
    import subprocess
    import tempfile

    exe = browser or find_browser()
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        # offline and quiet: no background networking, a fresh profile; the last two flags vary
        flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-quic", f"--user-data-dir={Path(tmp) / 'profile'}", f"--window-size={width},1600",
                 "--virtual-time-budget=10000"]
        probe = Path(tmp) / "probe.html"
        probe.write_text(index_html.read_text(encoding="utf-8").replace("</body>", _CHECK + "</body>"), encoding="utf-8")
        dom = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                             timeout=timeout).stdout
        if screenshot is not None:
            subprocess.run([*flags[:-2], f"--window-size={width},2400", f"--screenshot={screenshot}",
                            index_html.resolve().as_uri()], capture_output=True, timeout=timeout)
    m = re.search(r"data-ffnlab-check=\"([^\"]*)\"", dom)
    require(m is not None, f"{exe} did not run the page check (no result in the DOM)")
    import html as html_mod

    return json.loads(html_mod.unescape(m.group(1)))  # type: ignore[union-attr]
