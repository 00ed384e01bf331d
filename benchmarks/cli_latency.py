"""Wall time of the instant commands (`ffnlab size`, `explain`, `plan`, `audit`, `claims`, ...), end to end.

Runs each command N times as a fresh process (interpreter start-up included, as a user sees it)
and prints the median and the spread of the whole process's wall time, and the median CPU time
(user + system) it used: on a busy machine the wall time waits for a core, the CPU time does
not. Then, for `ffnlab size`, where the time goes: `python -X importtime` per top-level package
(with what it imports), and the rest (building the command line, typer's per-parameter pydantic
validators, the answer itself).

    python benchmarks/cli_latency.py [--repeat 7] [--no-breakdown]
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict

COMMANDS = {
    "--version": ["--version"],
    "size": ["size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama"],
    "size --json": ["size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--json"],
    "size (whole model)": ["size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--n-layers", "32"],
    "explain": ["explain", "--d-model", "4096", "--d-ff", "11008", "--ffn", "swiglu"],
    "plan 7B": ["plan", "7B"],
    "fit llama-7b": ["fit", "llama-7b"],
    "audit llama-7b": ["audit", "llama-7b"],
    "audit --all": ["audit", "--all", "--json"],
    "claims": ["claims", "--json"],
    "--help": ["--help"],
}
SIZE = COMMANDS["size"]


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_command(args: list[str], repeat: int, cpu: list[float] | None = None) -> list[float]:
    """Wall times of ``repeat`` fresh ``python -m ffnlab ARGS``; their CPU times appended to ``cpu``."""
    times = []
    for _ in range(repeat):
        c0, t0 = _cpu_children(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "ffnlab", *args], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(_cpu_children() - c0)
    return times


def import_breakdown(args: list[str], repeat: int) -> dict[str, float]:
    """Median import time (s) spent in each package's own modules (``-X importtime``'s self time,
    summed by top-level package name) when ``python -X importtime ARGS`` runs."""
    per_run: dict[str, list[float]] = defaultdict(list)
    line = re.compile(r"import time:\s+(\d+) \|\s+\d+ \| +(\S+)$")
    for _ in range(repeat):
        err = subprocess.run([sys.executable, "-X", "importtime", *args], check=True,
                             capture_output=True, text=True).stderr
        tops: dict[str, float] = defaultdict(float)
        for m in map(line.match, err.splitlines()):
            if m:
                tops[m.group(2).split(".")[0].lstrip("_")] += int(m.group(1)) / 1e6
        for k, v in tops.items():
            per_run[k].append(v)
    return {k: statistics.median(v + [0.0] * (repeat - len(v))) for k, v in per_run.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-breakdown", action="store_true", help="skip the import-time breakdown of size")
    a = ap.parse_args()
    time_command(["--help"], 1)  # warm the file cache
    bare = statistics.median(_bare() for _ in range(a.repeat))
    print(f"python start-up alone: {bare * 1000:.0f} ms (median of {a.repeat}); load average {load_average()}")
    print(f"{'command':<22}{'median':>10}{'min':>10}{'max':>10}{'CPU':>10}   (whole process, {a.repeat} runs each)")
    medians = {}
    for name, args in COMMANDS.items():
        cpu: list[float] = []
        ts = time_command(args, a.repeat, cpu)
        medians[name] = statistics.median(ts)
        print(f"{name:<22}{medians[name] * 1000:>8.0f}ms{min(ts) * 1000:>8.0f}ms{max(ts) * 1000:>8.0f}ms"
              f"{statistics.median(cpu) * 1000:>8.0f}ms")
    if a.no_breakdown:
        return
    start_up = import_breakdown(["-c", "pass"], a.repeat)  # site, encodings: part of python start-up
    tops = {k: v - start_up.get(k, 0.0) for k, v in import_breakdown(["-m", "ffnlab", *SIZE], a.repeat).items()}
    print(f"\nwhere `ffnlab {' '.join(SIZE)}` spends its {medians['size'] * 1000:.0f} ms: import time of each "
          "package's own modules (-X importtime, median; the standard library as one line):")
    stdlib = set(sys.stdlib_module_names)
    shown = {k: v for k, v in tops.items() if k not in stdlib}
    shown["(standard library)"] = sum(v for k, v in tops.items() if k in stdlib)
    for k, v in sorted(shown.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {k:<20}{v * 1000:>7.1f} ms")
    imported = sum(tops.values())
    print(f"  {'(all imports)':<20}{imported * 1000:>7.1f} ms")
    print(f"  {'(the rest)':<20}{(medians['size'] - bare - imported) * 1000:>7.1f} ms  interpreter start-up "
          "excluded: parsing, typer's per-parameter validators, the answer")


def _bare() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def load_average() -> str:
    try:
        import os

        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "unknown"


if __name__ == "__main__":
    main()
