"""Time the README's train example at ``--threads 1``, at all the cores, and at train's default.

The README's example (``ffnlab train --ffn swiglu --rule param-matched --ratio 4 --steps 300``)
is run once per setting, alternating, each in its own process and temporary folder. Printed per
run: the thread count and who set it (from the run's summary.json), wall time, CPU time (user +
system of the child), the trainer's own tokens per second and the final validation loss. The two
settings' losses differ in the last digits: a CPU run is bit-exact per seed *and* thread count.

Wall times depend on what else the machine runs; say how busy it was when quoting them. The
default (``src/ffnlab/training/threads.py``: the cores free at start, the cores less the 1-minute
load average) is what ``train`` uses when neither ``--threads`` nor OMP_NUM_THREADS is given.

    PYTHONPATH=src python benchmarks/train_threads.py [--steps 300] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = ["--ffn", "swiglu", "--rule", "param-matched", "--ratio", "4"]


def one_run(out: Path, steps: int, threads: int | None) -> dict:
    """One ``ffnlab train`` in a child process: its summary's figures, wall and CPU seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    args = [sys.executable, "-m", "ffnlab", "train", *EXAMPLE, "--steps", str(steps), "--out", str(out),
            "--set", "train.progress=off", *(["--threads", str(threads)] if threads else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"train failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    s = json.loads((out / "summary.json").read_text())
    rate = s["tokens"] / s["wall_s"] if s.get("wall_s") else float("nan")
    return {"setting": f"--threads {threads}" if threads else "default", "threads": s.get("threads"),
            "set_by": s.get("threads_set_by"), "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "train_s": s.get("wall_s"), "tokens_per_s": rate, "val_loss": s.get("final_val_loss")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300, help="training steps (the README's example: 300)")
    ap.add_argument("--repeats", type=int, default=1, help="runs per setting, alternating")
    a = ap.parse_args()
    print(f"{os.cpu_count()} CPU(s) visible; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    settings = (1, cores, None) if cores > 1 else (1, None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ffnlab-threads-") as tmp:
        for i in range(a.repeats):
            for threads in settings:
                r = one_run(Path(tmp) / f"r{i}-{threads or 'default'}", a.steps, threads)
                rows.append(r)
                print(f"{r['setting']:>11}: {r['threads']} threads ({r['set_by']}); wall {r['wall_s']:.1f} s, "
                      f"CPU {r['cpu_s']:.1f} s, training {r['train_s']:.1f} s, {r['tokens_per_s']:,.0f} tok/s, "
                      f"val loss {r['val_loss']!r}", flush=True)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    same = len({r["val_loss"] for r in rows}) == 1
    print(f"final val loss {'bit-identical' if same else 'differs'} between the settings "
          f"(thread counts {sorted({r['threads'] for r in rows})})")
    for setting in dict.fromkeys(r["setting"] for r in rows):
        walls = sorted(r["wall_s"] for r in rows if r["setting"] == setting)
        print(f"{setting:>11}: median wall {walls[len(walls) // 2]:.1f} s over {len(walls)} run(s)")


if __name__ == "__main__":
    main()
