"""Wall time of the instant commands (`ffnlab size`, `audit`, `claims`), end to end.

Runs each command N times as a fresh process (interpreter start-up included, as a user sees it)
and prints the median and the spread. Goal for `size`: well under 0.3 s.

    python benchmarks/cli_latency.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "size": ["size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--json"],
    "size (whole model)": ["size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--n-layers", "32",
                           "--json"],
    "explain": ["explain", "--d-model", "4096", "--d-ff", "11008", "--ffn", "swiglu", "--json"],
    "plan 7B": ["plan", "7B", "--json"],
    "audit --all": ["audit", "--all", "--json"],
    "claims": ["claims", "--json"],
}


def time_command(args: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ffnlab", *args], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    time_command(["--help"], 1)  # warm the file cache
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - t0
    print(f"python start-up alone: {bare * 1000:.0f} ms")
    print(f"{'command':<22}{'median':>10}{'min':>10}{'max':>10}")
    for name, args in COMMANDS.items():
        ts = time_command(args, a.repeat)
        print(f"{name:<22}{statistics.median(ts) * 1000:>8.0f}ms{min(ts) * 1000:>8.0f}ms{max(ts) * 1000:>8.0f}ms")


if __name__ == "__main__":
    main()
