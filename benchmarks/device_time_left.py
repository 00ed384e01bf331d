"""What each undecided preset costs: training FLOPs by arithmetic, time by measured throughput.

For every preset named, sums the training FLOPs of all its runs (ffnlab's FLOP model per token,
times steps x tokens per step, as the trainer reports them) and divides by

* this CPU's measured training throughput, read from a finished sweep's run summaries
  (``train_flops / wall_s``, so evaluation and checkpoints are included), and
* a GPU's dense bf16 peak at an assumed model FLOPs utilisation (default 989 TFLOP/s, the
  H100/H200 datasheet figure, at 10% and 30%: small models on one GPU are launch-bound, so the
  low end is the likelier one). GPU figures are arithmetic, not measurements.

    python benchmarks/device_time_left.py --measured docs/results/golden-quick/runs \
        golden-h200 scale-trend-gpu capacity-gpu scale-trend capacity

Capacity presets set their steps from the exposures, which needs their synthetic corpus (built
locally in seconds); presets on WikiText need only the configured BPE vocabulary size, so nothing
is downloaded.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from ffnlab.experiments.capacity import design as cap
from ffnlab.experiments.sweep.run import run_flops
from ffnlab.experiments.sweep.spec import SweepSpec, find_spec, load_spec, resolve
from ffnlab.training import runconfig
from ffnlab.training.memory import vocab_guess


def spec_flops(spec: SweepSpec) -> tuple[int, float]:
    """(runs, training FLOPs of all runs) of one sweep spec."""
    runs = resolve(spec, vocab_guess(runconfig.from_dict(spec.base)))
    return len(runs), float(sum(run_flops(r) for r in runs))


def preset_flops(name: str) -> tuple[int, float]:
    if Path(name).stem.startswith("capacity"):  # a capacity preset: budgets of sweeps
        preset = cap.load_preset(name)
        parts = [spec_flops(cap.budget_spec(preset, b)) for b in preset.budgets]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    return spec_flops(load_spec(str(find_spec(name))))


def measured_cpu_flops(runs_dir: Path) -> tuple[float, int]:
    """Median training FLOP/s per run over the finished runs' summaries, and how many there were."""
    rates = []
    for f in sorted(runs_dir.glob("*/summary.json")):
        s = json.loads(f.read_text())
        if s.get("status") == "finished" and s.get("wall_s"):
            rates.append(s["train_flops"] / s["wall_s"])
    if not rates:
        raise SystemExit(f"error: no finished run summaries under {runs_dir}")
    return statistics.median(rates), len(rates)


def hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds / 60:,.1f} min"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="+")
    ap.add_argument("--measured", type=Path, required=True, help="runs/ folder of a finished CPU sweep")
    ap.add_argument("--workers", type=int, default=2, help="CPU runs side by side (cores / threads per run)")
    ap.add_argument("--peak", type=float, default=989e12, help="GPU dense bf16 peak, FLOP/s")
    ap.add_argument("--json", type=Path, help="also write the table as JSON")
    a = ap.parse_args(argv)
    per_run, n = measured_cpu_flops(a.measured)
    cpu = per_run * a.workers
    print(f"CPU: {per_run / 1e9:.2f} GFLOP/s per run (median of {n} runs in {a.measured}), "
          f"x{a.workers} runs side by side = {cpu / 1e9:.2f} GFLOP/s")
    print(f"GPU: {a.peak / 1e12:.0f} TFLOP/s peak at 30% and 10% MFU (arithmetic)\n")
    print("| preset | runs | training FLOPs | this CPU | GPU at 30% | GPU at 10% |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = []
    for name in a.presets:
        runs, flops = preset_flops(name)
        row = {"preset": name, "runs": runs, "train_flops": flops, "cpu_s": flops / cpu,
               "gpu_s_30": flops / (0.3 * a.peak), "gpu_s_10": flops / (0.1 * a.peak)}
        rows.append(row)
        print(f"| {name} | {runs} | {flops:.3g} | {hours(row['cpu_s'])} | {hours(row['gpu_s_30'])} | "
              f"{hours(row['gpu_s_10'])} |")
    if a.json:
        a.json.write_text(json.dumps({"cpu_flops_per_run": per_run, "cpu_runs_measured": n,
                                      "workers": a.workers, "gpu_peak": a.peak, "presets": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
