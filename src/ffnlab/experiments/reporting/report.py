"""Write a sweep's report: the analysis (:mod:`ffnlab.experiments.analysis.analyse`), its report model (:mod:`model`)
rendered by the shared templates (:mod:`pages`), the figures (:mod:`plots`), and every number as
CSV/JSON, ``claims.json`` (for ``ffnlab claims --evidence``) and a copy of each run's records
(``runs/RUN/summary.json`` and ``metrics.jsonl``, no checkpoints) so the report can be rebuilt
from the report folder alone (``ffnlab report REPORT_FOLDER``)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffnlab import escape
from ffnlab.errors import require
from ffnlab.experiments.analysis.analyse import Analysis, SweepScale, TrendResult, analyse, pair_decisions
from ffnlab.experiments.reporting import plots
from ffnlab.experiments.reporting.model import FIGURE_TITLES, report_model, trend_key
from ffnlab.experiments.reporting.pages import json_safe, write_page
from ffnlab.experiments.sweep.record import DataSummary, SweepRecord, load_sweep

if TYPE_CHECKING:
    from ffnlab.sizing.audit_row import AuditRow
from ffnlab.files import check_inside, live_temporaries, make_dir, remove_stale, write_atomic
from ffnlab.provenance import git_commit, short_commit

MARKER = ".ffnlab-report"


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m} min {s} s" if h else f"{m} min {s} s"


def provenance(result: Analysis) -> list[tuple[str, str]]:
    """Where the numbers come from, as a reader wants it: who trained, on what, how long."""
    import torch

    runs = [r for a in result.arm_objects for r in a.runs + a.excluded]
    first = runs[0].summary if runs else {}
    commits = sorted({short_commit(str(r.summary.get("ffnlab_commit", "unknown"))) for r in runs})
    tokens = sorted({int(r.summary.get("tokens") or 0) for r in runs})
    wall = sum(float(r.summary.get("wall_s", 0.0)) for r in runs)
    device = first.get("device") or "?"
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return [
        ("runs", f"{len(runs)} ({sum(len(a.excluded) for a in result.arm_objects)} left out by the rule)"),
        ("training", f"{_duration(wall)} of run time in all (summed over runs; parallel runs overlap), on {device}"),
        ("trained by ffnlab commit(s)", ", ".join(commits)),
        ("report written by", f"ffnlab commit {short_commit(git_commit())} on {time.strftime('%Y-%m-%d')}"),
        ("machine writing the report", f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s)"
                                       + (f", GPU {cuda}" if cuda else "") + f"; {platform.platform()}"),
        ("software", f"torch {torch.__version__}, Python {platform.python_version()}"),
        ("data", f"corpus {result.sweep.base.get('data', {}).get('corpus', 'shakespeare')}, "
                 f"{first.get('tokenizer', '?')} tokenizer, {_tokens_per_run(tokens)}"),
    ]


def _tokens_per_run(tokens: list[int]) -> str:
    """Training tokens per run: one figure, or the range over a scale sweep's cells."""
    if len(tokens) > 1:
        return f"{tokens[0]:,} to {tokens[-1]:,} training tokens per run (by cell)"
    return f"{tokens[0] if tokens else 0:,} training tokens per run"


def figures(result: Analysis) -> dict[str, bytes]:
    spec = result.sweep
    ref = result.reference
    seeds = {r.arm: list(r.seed_losses.values()) for r in result.arms}
    ref_mean = next(r.val_loss for r in result.arms if r.arm == ref)
    arms = {a.name: a for a in result.arm_objects}
    cell = [a for a in result.arm_objects if a.name.split(".")[0] == ref.split(".")[0]] if result.cells \
        else result.arm_objects
    decisions = list(result.loss_model["comparisons"]) if result.loss_model is not None else []
    pairs = pair_decisions(result.claims)
    conv_claim = result.claims.get("convergence_speed")
    out = {
        "tokens_to_target.png": plots.tokens_to_target(result.convergence, arms,
                                                       conv_claim.hypothesis if conv_claim is not None else None),
        "loss_curves.png": plots.loss_curves(cell, result.convergence.target_loss),
        "frontier.png": plots.frontier(cell),
    }
    if decisions:
        out["forest.png"] = plots.forest(decisions, seeds, ref, ref_mean,
                                         spec.margin * ref_mean, arms)
    if len(result.kaplan) > 1:
        out["kaplan.png"] = plots.kaplan(result.kaplan, arms)
    if pairs:
        out["pairs.png"] = plots.pairs(pairs, seeds)
    if result.cells:
        out["scale_trend.png"] = plots.scale_trend(result.cells, result.arm_objects, spec.reference)
    return out


def runs_csv(result: Analysis) -> str:
    rows: list[list[Any]] = [["run", "arm", "seed", "final_val_loss", "final_val_ppl", "final_val_bpb", "tokens",
                              "train_flops", "wall_s", "left_out"]]
    for a in result.arm_objects:
        for r in sorted(a.runs + a.excluded, key=lambda x: x.seed):
            s = r.summary
            rows.append([r.run, r.arm, r.seed, s["final_val_loss"], s.get("final_val_ppl"), s["final_val_bpb"],
                         s.get("tokens"), s.get("train_flops"), s.get("wall_s"), r.excluded or ""])
    return _csv(rows)


def arms_csv(result: Analysis) -> str:
    rows = [a.as_dict() for a in result.arms]
    keys = [k for k in rows[0] if k != "seed_losses"]
    return _csv([keys, *[[row[k] for k in keys] for row in rows]])


def _csv(rows: list[list[Any]]) -> str:
    """CSV text of ``rows``, each cell through :func:`ffnlab.escape.csv_cell` (no formulas from names);
    a figure that is not a number (NaN: an arm whose runs were all set aside) is an empty cell, as
    results.json's null, not "nan"."""
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows([["" if isinstance(c, float) and math.isnan(c) else escape.csv_cell(c) for c in row]
                               for row in rows])
    return buf.getvalue()


def keep_runs(sweep_dir: Path, out: Path, record: SweepRecord, scale: SweepScale, root: Path) -> None:
    """The sweep's record and each run's summary and metrics (no checkpoints) inside the report,
    so the report folder is itself a sweep folder the analysis can be rerun on; the record keeps
    the sizes of the prepared corpus (``data_summary``), which the report folder does not hold."""
    if sweep_dir.resolve() == out.resolve():
        return
    summary: DataSummary = ({"train_tokens": scale.train_tokens, "val_tokens": scale.val_tokens}
                            if scale.train_tokens is not None and scale.val_tokens is not None else {})
    write_atomic(out / "sweep.json", json.dumps({**record, "data_summary": record.get("data_summary") or summary},
                                                indent=1), root=root)
    for r in record["runs"]:
        src, dst = sweep_dir / "runs" / r["run"], out / "runs" / r["run"]
        make_dir(dst, root)
        for name in ("summary.json", "metrics.jsonl"):
            if (src / name).is_file():
                write_atomic(dst / name, (src / name).read_bytes(), root=root)


def write_report(sweep_dir: str | Path, out_dir: str | Path | None = None, *, title: str | None = None,
                 with_claims: bool = False, audit_rows: Sequence[AuditRow] | None = None) -> dict[str, Path]:
    """Analyse ``sweep_dir`` and write the report files into ``out_dir`` (default: sweep_dir/report).

    ``with_claims`` adds the table of every claim, with this run's experiment verdicts filled in;
    ``audit_rows`` (from ``sizing.audit``) adds the zoo audit at the end."""
    record = load_sweep(sweep_dir)  # the whole sweep folder validated before any report folder exists
    out = Path(out_dir) if out_dir else Path(sweep_dir) / "report"
    root = out if out_dir else Path(sweep_dir)  # the folder the user named: nothing is written outside it
    check_report_dir(out, root)  # a folder that cannot be the report's: refused before hours of analysis
    result = analyse(sweep_dir)  # every refusal of the sweep's runs comes before the folder is made
    images = figures(result)
    claims = json_safe({**{k: v.as_dict() for k, v in result.claims.items()},
                        **{trend_key(t, result.trends): _trend_claim(t) for t in result.trends}})
    claim_rows = None
    if with_claims:
        from ffnlab.sizing.claims import check_claims

        claim_rows = check_claims(claims)
    from ffnlab.experiments.analysis.maturity import sweep_warning

    note = sweep_warning(sweep_dir)
    model = report_model(result, provenance(result), title=title or f"ffnlab sweep report: {result.sweep.name}",
                         warnings=[note] if note else [], claim_rows=claim_rows, audit_rows=audit_rows)
    claim_report_dir(out, root)  # the first write: everything that can refuse is behind us
    paths = write_page(out, model, images, FIGURE_TITLES, root=root)
    serial = result.as_dict()
    serial["provenance"] = dict(model["provenance"])
    write_atomic(out / "results.json", json.dumps(json_safe(serial), indent=1, default=str), root=root)
    write_atomic(out / "claims.json", json.dumps(claims, indent=1), root=root)
    write_atomic(out / "arms.csv", arms_csv(result), root=root)
    write_atomic(out / "runs.csv", runs_csv(result), root=root)
    keep_runs(Path(sweep_dir), out, record, result.scale, root)
    return {**paths, "claims": out / "claims.json", "results": out / "results.json", "dir": out}


def _trend_claim(t: TrendResult) -> dict[str, object]:
    """A trend's entry in claims.json: its verdict, evidence, maturity (and verdict if mature), and its slope."""
    shown = t.as_dict()
    return {k: shown[k] for k in ("verdict", "evidence", "verdict_if_mature", "maturity") if k in shown} | {
        "numbers": {"slope": [t.slope, t.lo, t.hi]}}


def claim_report_dir(out: Path, root: Path | None = None) -> None:
    """Make ``out`` a report folder, refusing one that holds anything else (never overwrite), or
    (with ``root``) one that leads outside ``root`` through a symlink."""
    check_report_dir(out, root)
    make_dir(out, root)
    write_atomic(out / MARKER, "written by ffnlab report; its files are rewritten on each run\n")


def check_report_dir(out: Path, root: Path | None = None) -> None:
    """Refuse ``out`` as :func:`claim_report_dir` would, creating nothing (it removes only the
    marked temporary folders an earlier, killed report write of ffnlab's left in it)."""
    if root is not None:
        check_inside(out, root, "the report folder")
    if out.exists():
        require(out.is_dir(), f"{out} is a file; choose a folder for the report")
        remove_stale(out)  # temporary folders of a report write a kill interrupted (ffnlab's marked ones only)
        live = live_temporaries(out)  # what remove_stale kept: a running writer's, never a stranger's file
        require(not live, f"another ffnlab report is writing in {out} (process "
                          f"{', '.join(sorted({str(pid) for pid in live.values()}))}); wait for it to finish, or "
                          "choose another --out")
        foreign = [p.name for p in out.iterdir() if p.name not in (MARKER, "sweep")]
        require((out / MARKER).exists() or not foreign,
                f"{out} holds files that are not an ffnlab report ({', '.join(sorted(foreign)[:3])}); choose another "
                f"--out")
