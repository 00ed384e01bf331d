"""Capacity commands: ``ffnlab capacity run|report|measure`` (torch only when a command runs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from ffnlab import render
from ffnlab.cli.app import EXPERIMENTS, JSON_OPTION, app, check_ints, counted, user_path, user_path_text
from ffnlab.escape import one_line
from ffnlab.files import refuse_link
from ffnlab.validation import choice

capacity_app = typer.Typer(
    help="Knowledge capacity: bits stored per parameter on synthetic facts (Allen-Zhu & Li 2024) vs the FFN ratio.",
    no_args_is_help=True)
app.add_typer(capacity_app, name="capacity", rich_help_panel=EXPERIMENTS)


@capacity_app.command("run")
def run(
    preset: str = typer.Argument("capacity", parser=user_path_text,
                                 help="Capacity preset name (capacity, capacity-gpu) or YAML file."),
    out: Path = typer.Option(None, "--out", "-o", parser=user_path,
                             help="Folder (default sweeps/NAME); one sweep per budget."),
    workers: int = typer.Option(None, "--workers", parser=counted("--workers"),
                                help="Parallel runs (default: cores / threads_per_worker)."),
    backend: str = typer.Option("local", "--backend", help="local or ray."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (ray backend)."),
    report_too: bool = typer.Option(True, "--report/--no-report", help="Write the capacity report at the end."),
) -> None:
    """Train a capacity preset: every budget's sweep on its facts corpus (resumable)."""
    from ffnlab.experiments.capacity.design import load_preset, run_preset
    from ffnlab.experiments.capacity.report import write_report
    from ffnlab.experiments.sweep.run import RunsFailed

    choice(backend, "--backend", ("local", "ray"))  # as sweep and verify check them, before any folder exists
    check_ints(workers=(workers, 1, 4096))
    p = load_preset(preset)
    # as sweep --out: every budget's sweep and capacity-preset.json are written where the folder is named
    folder = refuse_link(out or Path("sweeps") / p.name, "the capacity folder")
    try:
        run_preset(p, folder, workers=workers, backend=backend, address=address)
    except RunsFailed as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(1) from None
    if report_too:
        _print_report(write_report(folder))


def _print_report(paths: dict[str, Path]) -> None:

    for k, v in json.loads(paths["claims"].read_text()).items():
        print(one_line(f"{k}: {v['verdict']} - {v['evidence']}"))
    print(one_line(f"report: {paths['html']} and {paths['markdown']}"))


@capacity_app.command("report")
def report(
    folder: Path = typer.Argument(..., parser=user_path,
                                  help="A capacity folder (one sweep per budget) or one sweep folder."),
    out: Path = typer.Option(None, "--out", "-o", parser=user_path,
                             help="Report folder (default FOLDER/capacity-report)."),
    remeasure: bool = typer.Option(False, "--remeasure", help="Measure runs again instead of reusing capacity.json."),
) -> None:
    """Measure every run and report bits per parameter per arm (mean, 95% CI) and the verdicts."""
    from ffnlab.experiments.capacity.report import write_report

    if out is not None:  # as report --out: the report is written where it is named, never through a link
        refuse_link(out, "the report folder")
    _print_report(write_report(folder, out, remeasure=remeasure))


@capacity_app.command("measure")
def measure(
    run_dir: Path = typer.Argument(..., parser=user_path,
                                   help="An 'ffnlab train' run folder trained on a facts: corpus."),
    checkpoint: str = typer.Option(None, "--checkpoint", help="Checkpoint name (default: the latest)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Bits one run stores about its trained facts (and, as a control, the held-out ones)."""
    from ffnlab.training.capacity import measure_run

    r = measure_run(run_dir, checkpoint)
    if as_json:
        render.emit_json(r, indent=1)
        return
    t, h = r["trained"], r["heldout"]
    print(f"{run_dir}: {t['bits']:,.0f} of {t['entropy_bits']:,.0f} bits ({t['fraction']:.1%}) about "
          f"{r['facts_trained']:,} trained facts after {r['exposures']:.0f} exposures; "
          f"{r['bits_per_param']:.4f} bits per non-embedding parameter ({r['params_non_embedding']:,}), "
          f"{r['bits_per_param_total']:.4f} per parameter ({r['params_total']:,}); "
          f"held-out control: {h['bits']:,.0f} bits")
