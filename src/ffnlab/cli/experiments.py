"""Experiment commands: sweep, report and verify (import torch only when a command runs)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import typer

from ffnlab.cli.app import EXPERIMENTS, TIMEOUT_OPTION, app, check_ints, counted, user_path, user_path_text
from ffnlab.errors import require
from ffnlab.escape import one_line
from ffnlab.files import check_inside, provisional_dir, refuse_link
from ffnlab.netwait import set_timeout
from ffnlab.validation import choice, confined

BACKENDS = ("local", "ray")


def check_run_options(backend: str, workers: int | None) -> None:
    """--backend and --workers of sweep and verify, checked before any folder is made."""
    choice(backend, "--backend", BACKENDS)
    check_ints(workers=(workers, 1, 4096))



def print_maturity(sweep_dir: Path) -> None:
    """A note beside the verdicts when the sweep's runs are far from trained."""
    from ffnlab.experiments.analysis.maturity import sweep_warning

    warning = sweep_warning(sweep_dir)
    if warning:
        print(f"note: {one_line(warning)}")


PRESET_DIR = Path(__file__).resolve().parents[1] / "experiments" / "presets"  # package data
SWEEP_PRESETS = ", ".join(sorted(p.stem for p in PRESET_DIR.glob("*.yaml") if not p.stem.startswith("capacity")))


@app.command(rich_help_panel=EXPERIMENTS)
def sweep(
    spec: str = typer.Argument(..., parser=user_path_text, help=f"Sweep spec YAML, or a preset name: {SWEEP_PRESETS}."),
    out: Path = typer.Option(None, "--out", "-o", parser=user_path, help="Sweep folder (default sweeps/NAME)."),
    backend: str = typer.Option("local", "--backend", help="local (worker processes) or ray."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (ray backend)."),
    workers: int = typer.Option(None, "--workers", parser=counted("--workers"),
                                help="Parallel runs (default: cores / threads_per_worker)."),
    report_too: bool = typer.Option(True, "--report/--no-report", help="Write the report when the sweep finishes."),
    estimate: bool = typer.Option(False, "--estimate", help="Print the arms, each cell's tokens per parameter "
                                  "and the time the sweep would take, then stop (nothing is trained or written)."),
    gpu: str = typer.Option(None, "--gpu", help="With --estimate: time it on this accelerator (its published "
                            "bf16 peak, e.g. H200) instead of this machine."),
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Run every (arm, seed) of a sweep spec under its control; resumable.

    Controls: iso-params, iso-flops, fixed-d-model. Rerun the same command to continue: finished runs
    are kept, interrupted ones resume from their last checkpoint. See docs/experiments.md.
    """
    from ffnlab.experiments.reporting.report import write_report
    from ffnlab.experiments.sweep.run import RunsFailed, execute
    from ffnlab.experiments.sweep.spec import load_spec

    check_run_options(backend, workers)
    set_timeout(timeout)  # a spec's hf: corpus is downloaded under it, before any run
    require(gpu is None or estimate, "--gpu times an --estimate; a sweep trains on this machine's own device")
    s = load_spec(spec)
    if estimate:
        from ffnlab.experiments.sweep.estimate import estimate_lines

        for line in estimate_lines(s, gpu, workers):
            print(one_line(line))
        return
    folder = refuse_link(out or confined(Path("sweeps"), s.name, "sweep name"), "the sweep folder")
    if report_too:  # a report folder leading out of the sweep is refused before the runs, not after
        check_inside(folder / "report", folder, "the report folder")
    try:
        status = execute(s, folder, backend=backend, address=address, workers=workers)
    except RunsFailed as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        from ffnlab.escape import path_arg, shell_command

        again = shell_command("ffnlab", "sweep", path_arg(spec), *(["--out", path_arg(out)] if out else []))
        print(one_line(f"interrupted; rerun `{again}` to continue (finished runs are kept, the "
                       "interrupted ones resume from their last checkpoint)"), file=sys.stderr, flush=True)
        raise SystemExit(130) from None
    done = sum(v == "finished" for v in status.values())
    print(one_line(f"{folder}: {done} run(s) trained, {len(status) - done} already finished"))
    if report_too:
        paths = write_report(folder)
        print(one_line(f"report: {paths['html']} and {paths['markdown']}"))
        import json

        for key, v in json.loads(paths["claims"].read_text()).items():
            grown = (v.get("maturity") or {}).get("text")
            print(one_line(f"verdict {said_as(key, v)}: {v.get('verdict')}" + (f"; {grown}" if grown else "")))


def said_as(key: str, entry: dict[str, object]) -> str:
    """A verdict of a report's claims.json by the name its spec gave it: the hypothesis's id where
    the verdict carries one, else the analysis (``key``) that wrote it."""
    said = entry.get("hypothesis")
    own = said.get("id") if isinstance(said, dict) else None
    return own if isinstance(own, str) and own else key


@app.command(rich_help_panel=EXPERIMENTS)
def report(
    sweep_dir: Path = typer.Argument(..., parser=user_path, help="A finished sweep folder."),
    out: Path = typer.Option(None, "--out", "-o", parser=user_path, help="Report folder (default SWEEP_DIR/report)."),
) -> None:
    """Analyse a finished sweep: CIs, convergence speed, verdicts, plots.

    Means and 95% CIs per arm, tokens to a pre-registered target loss vs the reference arm,
    perplexity and bits per byte per arm, and a verdict on each hypothesis the spec names (none
    without a hypotheses block); writes Markdown, self-contained HTML, CSV and JSON.
    """
    from ffnlab.experiments.reporting.report import write_report

    if out is not None:
        refuse_link(out, "the report folder")
    paths = write_report(sweep_dir, out)
    for k, v in json.loads(paths["claims"].read_text(encoding="utf-8")).items():
        print(one_line(f"{said_as(k, v)}: {v['verdict']} - {v['evidence']}"))
    print_maturity(sweep_dir)
    print(one_line(f"report: {paths['html']} and {paths['markdown']}"))


@app.command(rich_help_panel=EXPERIMENTS)
def verify(
    preset: str = typer.Option("golden-quick", "--preset", parser=user_path_text,
                               help="Sweep to run, a preset or a spec file (default "
                               f"golden-quick, the main job): {SWEEP_PRESETS}."),
    out: Path = typer.Option(Path("reports/verify"), "--out", "-o", parser=user_path, help="Report folder."),
    workers: int = typer.Option(None, "--workers", parser=counted("--workers"), help="Parallel runs."),
    backend: str = typer.Option("local", "--backend", help="local or ray."),
    address: str = typer.Option(None, "--address", help="Ray cluster address."),
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """The main job: claims, zoo audit and a controlled sweep, in one report.

    Fills the seed's empty table with measured numbers and settles the claims that need training.
    """
    from ffnlab.experiments.sweep.run import RunsFailed
    from ffnlab.experiments.verify import verify as run_verify

    check_run_options(backend, workers)
    set_timeout(timeout)  # the preset's hf: corpus is downloaded under it, before any run
    refuse_link(out, "the report folder")
    try:
        with provisional_dir(out):  # a refused verify leaves no report folder
            result = run_verify(preset, out, workers=workers, backend=backend, address=address)
    except RunsFailed as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(1) from None
    print("\nVerdicts:")
    for c in result.claims:
        print(one_line(f"  {c.verdict:<16} {c.id}"))
    exp = [c for c in result.claims if "from_report" in c.numbers]
    for c in exp:
        print(f"\n{one_line(c.id)}: {one_line(c.verdict)}\n  {one_line(c.evidence)}")
    seed = {c.id for c in result.claims}  # a spec's own hypotheses are no claim of the source texts
    own = [(said_as(k, v), v) for k, v in json.loads(result.paths["claims"].read_text(encoding="utf-8")).items()
           if said_as(k, v) not in {k, *seed}]
    for name, v in own:
        print(f"\n{one_line(name)} (this spec's hypothesis): {one_line(str(v['verdict']))}\n"
              f"  {one_line(str(v['evidence']))}")
    if exp or own:
        print_maturity(out / "sweep")
    p = result.paths
    print(one_line(f"report: {p['html']}") + "\n" + one_line(f"        {p['markdown']}")
          + f"\n({result.wall_s:.0f} s)")
    print(one_line(next_command_hint(out)))


def next_command_hint(out: Path) -> str:
    """The closing line of ``verify``: where to look and how to run the next command, naming the
    virtual environment's ``ffnlab`` when the shell cannot find one (``make demo`` runs it from
    ``.venv`` without activating it)."""
    here = shutil.which("ffnlab")
    venv_bin = Path(sys.executable).parent
    if here is not None:
        how = "`ffnlab --help`"
    elif (venv_bin / "activate").is_file():
        how = f"`source {rel(venv_bin / 'activate')}` (then `ffnlab --help`), or `{rel(venv_bin / 'ffnlab')} --help`"
    else:
        how = f"`{sys.executable} -m ffnlab --help`"
    return f"next: open {out / 'index.html'}; more commands: {how}"


def rel(path: Path) -> str:
    """``path`` relative to the working folder where it lies inside it, else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
