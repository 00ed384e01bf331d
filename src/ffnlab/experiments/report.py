"""Write a sweep's report: report.md, a self-contained index.html, CSV/JSON of every number,
claims.json (for ``ffnlab claims --evidence``) and the figures."""

from __future__ import annotations

import base64
import csv
import html
import json
import os
import platform
from pathlib import Path
from typing import Any

from ffnlab.errors import require
from ffnlab.experiments import plots
from ffnlab.experiments.analysis import analyse
from ffnlab.experiments.sweep_record import load_sweep
from ffnlab.provenance import git_commit
from ffnlab.render import Column, markdown_table

ARM_COLUMNS = [
    Column("arm", "arm", justify="left"), Column("kind", "FFN", justify="left"),
    Column("ratio_raw", "raw ratio", lambda x: f"{x:.3f}"), Column("ratio_param_matched", "p-m ratio", lambda x: f"{x:.3f}"),
    Column("d_model", "d_model"), Column("d_ff", "d_ff"),
    Column("params_non_embedding", "non-emb params", lambda x: f"{x:,}"),
    Column("train_flops_per_token", "train FLOPs/token", lambda x: f"{x / 1e6:.2f}M"),
    Column("val_loss", "val loss", lambda x: f"{x:.4f}"), Column("ci", "95% CI", justify="left"),
    Column("val_ppl", "perplexity", lambda x: f"{x:.3f}"), Column("val_bpb", "bits/byte", lambda x: f"{x:.4f}"),
    Column("n_seeds", "seeds"),
]
SEED_TABLE = [
    Column("arm", "arm", justify="left"), Column("ratio", "FFN ratio (raw / param-matched)", justify="left"),
    Column("train_flops_per_token", "training FLOPs/token", lambda x: f"{x:,.0f}"),
    Column("ppl_text", "perplexity", justify="left"), Column("bpb_text", "bits per byte", justify="left"),
]


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


def _ci(lo: float, hi: float, digits: int = 4) -> str:
    return "n/a (1 seed)" if lo != lo else f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def _rows_for_tables(result: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    arms = [dict(r, ci=_ci(r["val_loss_lo"], r["val_loss_hi"])) for r in result["arms"]]
    seed_rows = [{
        "arm": r["arm"], "ratio": f"{r['ratio_raw']:.3f} / {r['ratio_param_matched']:.3f}",
        "train_flops_per_token": r["train_flops_per_token"],
        "ppl_text": f"{r['val_ppl']:.3f} {_ci(r['val_ppl_lo'], r['val_ppl_hi'], 3)}",
        "bpb_text": f"{r['val_bpb']:.4f} {_ci(r['val_bpb_lo'], r['val_bpb_hi'])}",
    } for r in result["arms"]]
    return arms, seed_rows


def _convergence_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    ref = result["convergence"]["reference"]
    for name, row in result["convergence"]["arms"].items():
        tr = row.get("tokens_ratio") if name != ref else None
        fr = row.get("flops_ratio") if name != ref else None
        rows.append({"arm": name, "reached": row["reached"],
                     "tokens": "-" if row["tokens_mean"] is None else f"{row['tokens_mean']:,.0f}",
                     "tokens_ratio": "1 (reference)" if name == ref else "-" if not tr else f"{tr[0]:.3f} [{tr[1]:.3f}, {tr[2]:.3f}]",
                     "flops_ratio": "-" if not fr else f"{fr[0]:.3f} [{fr[1]:.3f}, {fr[2]:.3f}]"})
    return rows


CONV_COLUMNS = [Column("arm", "arm", justify="left"), Column("reached", "runs reaching target"),
                Column("tokens", "mean tokens to target"), Column("tokens_ratio", "tokens vs reference (95% CI)"),
                Column("flops_ratio", "FLOPs vs reference (95% CI)")]


def write_report(sweep_dir: str | Path, out_dir: str | Path | None = None, *, extra_sections: list[tuple[str, str]] | None = None,
                 title: str | None = None) -> dict[str, Path]:
    """Analyse ``sweep_dir`` and write the report files into ``out_dir`` (default: sweep_dir/report)."""
    load_sweep(sweep_dir)  # the whole sweep folder validated before any report folder exists
    out = Path(out_dir) if out_dir else Path(sweep_dir) / "report"
    claim_report_dir(out)
    result = analyse(sweep_dir)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    arms = result["arm_objects"]
    figures = {
        "loss_curves.png": plots.loss_curves(arms, result["convergence"]["target_loss"]),
        "loss_vs_ratio.png": plots.loss_vs_ratio(result["arms"]),
        "frontier.png": plots.frontier(arms),
    }
    for name, data in figures.items():
        (out / "plots" / name).write_bytes(data)
    prov = provenance(result)
    arm_rows, seed_rows = _rows_for_tables(result)
    conv_rows = _convergence_rows(result)
    claims = result["claims"]
    spec = result["spec"]
    title = title or f"ffnlab sweep report: {spec['name']}"

    # machine-readable outputs
    serial = {k: v for k, v in result.items() if k != "arm_objects"}
    serial["provenance"] = prov
    (out / "results.json").write_text(json.dumps(serial, indent=1, default=str))
    (out / "claims.json").write_text(json.dumps(claims, indent=1))
    with open(out / "arms.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(result["arms"][0]))
        w.writeheader()
        w.writerows(result["arms"])
    with open(out / "runs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "arm", "seed", "final_val_loss", "final_val_ppl", "final_val_bpb", "tokens",
                    "train_flops", "wall_s"])
        for a in arms:
            for r in a.runs:
                s = r.summary
                w.writerow([r.run, r.arm, r.seed, s["final_val_loss"], s["final_val_ppl"], s["final_val_bpb"],
                            s["tokens"], s["train_flops"], s["wall_s"]])

    verdict_lines = [f"- **{k}**: `{v['verdict']}` — {v['evidence']}" for k, v in claims.items()]
    kaplan = "\n".join(f"| {k['arm']} | {k['ratio_raw']:.3f} | {k['loss_increase']:+.2%} |" for k in result["kaplan"])
    md = [f"# {title}", "", spec.get("description", ""), "",
          f"Control: **{spec['control']}** (tolerance {spec['tolerance']:.0%}), reference arm **{spec['reference']}**, "
          f"seeds {spec['seeds']}, corpus `{prov['corpus']}` ({prov['tokenizer']} tokenizer), "
          f"{prov['tokens_per_run']:,} training tokens per run.", "",
          "## Verdicts on the claims", "", *verdict_lines, "",
          "## The seed's table, filled", "",
          f"FFN ratio vs training FLOPs/token vs perplexity, measured on `{prov['corpus']}` (validation split; "
          "perplexity per token, mean and 95% CI over seeds):", "",
          markdown_table(seed_rows, SEED_TABLE), "",
          "## Arms", "", markdown_table(arm_rows, ARM_COLUMNS), "",
          f"## Convergence speed (target loss {result['convergence']['target_loss']:.4f}: the worst run's final loss)", "",
          markdown_table(conv_rows, CONV_COLUMNS), "",
          "## Loss increase over the best arm vs ratio (Kaplan et al. 2020, Fig. 5 form)", "",
          "| arm | raw ratio | loss increase |", "|---|---:|---:|", kaplan, "",
          "## Figures", "", "![loss curves](plots/loss_curves.png)", "", "![loss vs ratio](plots/loss_vs_ratio.png)", "",
          "![frontier](plots/frontier.png)", ""]
    for heading, text in extra_sections or []:
        md += [f"## {heading}", "", text, ""]
    md += ["## Provenance", "", *[f"- {k}: `{v}`" for k, v in prov.items()], ""]
    (out / "report.md").write_text("\n".join(md))

    def img(name: str) -> str:
        return f'<img alt="{name}" src="data:image/png;base64,{base64.b64encode(figures[name]).decode()}">'

    body = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(spec.get('description', ''))}</p>",
            f"<p>Control <b>{spec['control']}</b> (tolerance {spec['tolerance']:.0%}), reference <b>{spec['reference']}</b>, "
            f"seeds {spec['seeds']}, corpus <code>{html.escape(str(prov['corpus']))}</code>, "
            f"{prov['tokens_per_run']:,} tokens per run.</p>",
            "<h2>Verdicts on the claims</h2><ul>",
            *[f"<li><b>{html.escape(k)}</b>: <span class='v {v['verdict']}'>{v['verdict']}</span> — "
              f"{html.escape(v['evidence'])}</li>" for k, v in claims.items()], "</ul>"]
    for heading, text in extra_sections or []:
        body.append(f"<h2>{html.escape(heading)}</h2><pre>{html.escape(text)}</pre>")
    body += ["<h2>The seed's table, filled</h2>", _html_table(seed_rows, SEED_TABLE),
             "<h2>Arms</h2>", _html_table(arm_rows, ARM_COLUMNS),
             f"<h2>Convergence speed (target loss {result['convergence']['target_loss']:.4f})</h2>",
             _html_table(conv_rows, CONV_COLUMNS), "<h2>Figures</h2>",
             img("loss_curves.png"), img("loss_vs_ratio.png"), img("frontier.png"),
             "<h2>Provenance</h2><ul>", *[f"<li>{k}: <code>{html.escape(str(v))}</code></li>" for k, v in prov.items()],
             "</ul>"]
    style = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
             "table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px}"
             "th{background:#f3f3f3}img{max-width:48%;margin:4px}.v{font-weight:bold;padding:0 4px}"
             ".true{color:#1a7f37}.false{color:#c62828}.misleading{color:#b26a00}.unverifiable{color:#555}")
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>" \
           f"<style>{style}</style></head><body>{''.join(body)}</body></html>"
    (out / "index.html").write_text(page)
    return {"html": out / "index.html", "markdown": out / "report.md", "claims": out / "claims.json",
            "results": out / "results.json", "dir": out}


MARKER = ".ffnlab-report"


def claim_report_dir(out: Path) -> None:
    """Make ``out`` a report folder, refusing one that holds anything else (never overwrite)."""
    if out.exists():
        require(out.is_dir(), f"{out} is a file; choose a folder for the report")
        foreign = [p.name for p in out.iterdir() if p.name not in (MARKER, "sweep")]
        require((out / MARKER).exists() or not foreign,
                f"{out} holds files that are not an ffnlab report ({', '.join(sorted(foreign)[:3])}); choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by ffnlab report; its files are rewritten on each run\n")


def _html_table(rows: list[dict[str, Any]], columns: list[Column]) -> str:
    head = "".join(f"<th>{html.escape(c.header)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c.fmt(r.get(c.key)) if r.get(c.key) is not None else '-')}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"
