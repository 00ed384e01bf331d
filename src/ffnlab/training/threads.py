"""How many torch threads a CPU run uses when nobody says: the cores that are free when it starts.

A small model's step is short, so its threads spend much of it waiting for each other; on a
machine whose cores other work already keeps busy, every extra thread waits longer still. Measured
with ``benchmarks/train_threads.py`` (the README's 300-step example on 2 vCPUs): idle, torch's
default of 2 threads took 43.5 s against 69.5 s at 1; with a test suite running beside it, 1
thread took 401 s against 1,809 s at 2. So the default is the cores the process may use less
the load average of the last minute (rounded, at least 1): all of them on an idle machine, fewer on
a busy one. ``train.threads`` or OMP_NUM_THREADS / MKL_NUM_THREADS override it. A CPU run's losses
are bit-exact per seed *and* thread count, which summary.json records with its origin.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count to set (None: leave torch's as the environment made it) and who chose it."""

    count: int | None
    set_by: str


def choose_threads(configured: int | None, environ: Mapping[str, str], cores: int,
                   load_1min: float | None) -> ThreadChoice:
    """``train.threads`` if given, else the environment's thread variable, else the free cores:
    ``cores`` (what torch would use) less the 1-minute load average, rounded, between 1 and
    ``cores``; with no load average (a platform without one) torch's default stands."""
    if configured:
        return ThreadChoice(configured, "train.threads")
    for var in THREAD_ENV_VARS:
        if environ.get(var):
            return ThreadChoice(None, f"the environment ({var}={environ[var]})")
    if load_1min is None:
        return ThreadChoice(None, "torch's default (the cores this process may use)")
    free = max(1, min(cores, round(cores - load_1min)))
    return ThreadChoice(free, f"the free cores at start ({free} of {cores}; load average {load_1min:.2f})")


def load_average() -> float | None:
    """The 1-minute load average, or None where the platform keeps none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


__all__ = ["THREAD_ENV_VARS", "ThreadChoice", "choose_threads", "load_average"]
