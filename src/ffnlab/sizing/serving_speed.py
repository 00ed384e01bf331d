"""Measured decode speed against ffnlab's roofline bound: published tokens/s for an engine, a GPU
(``tp`` of them, tensor parallel), a model and a load (``data/serving_speed.json``, each with its
source) give the fraction of the bound (:func:`ffnlab.sizing.serving.decode_speed`) that engine
reached. A fraction is applied to another model only for the same engine, GPU, tensor-parallel
size and batch (:func:`matching_fractions`: at batch 1 the all-reduces of tensor parallelism cost
a large share of each step, so a one-GPU fraction says little about two), and
:func:`gpus_for_target` turns a target throughput into replicas and GPUs with it, or with the bound
itself (fraction 1: an upper bound, never a prediction) where nothing matches."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TypedDict

from ffnlab.errors import require
from ffnlab.sizing.result import Result


class _SpeedCase(TypedDict):
    id: str
    engine: str
    engine_version: str
    gpu: str  # an accelerator of data/accelerators.json
    tp: int
    model: str  # a zoo entry
    weights_dtype: str
    batch: int
    context: int  # the average context of the decoded tokens
    tokens_per_s: float  # per sequence, as published
    load: str
    weights_note: str
    source: str


class SpeedCase(_SpeedCase, total=False):
    """One published decode speed (data/serving_speed.json ``cases``)."""

    group_size: int  # quantised weights: values per scale


class SpeedFile(TypedDict):
    """data/serving_speed.json."""

    note: str
    cases: list[SpeedCase]


@lru_cache(maxsize=1)
def speed_cases() -> tuple[SpeedCase, ...]:
    """The published cases, as stored."""
    data: SpeedFile = json.loads(resources.files("ffnlab").joinpath("data/serving_speed.json").read_text())
    return tuple(data["cases"])


def speed_engines() -> frozenset[str]:
    """Engines with published speeds."""
    return frozenset(c["engine"] for c in speed_cases())


@dataclass(frozen=True)
class MeasuredFraction(Result):
    """One published speed and the fraction of ffnlab's bound it is."""

    case_id: str
    engine: str
    gpu: str
    tp: int
    model: str
    batch: int
    tokens_per_s: float
    bound_tokens_per_s: float
    fraction: float
    source: str


def implied_fraction(case: SpeedCase) -> MeasuredFraction:
    """The case's tokens/s over ffnlab's roofline bound for the same model, GPU, weights and load."""
    from ffnlab.sizing.memory.hardware import find_accelerator
    from ffnlab.sizing.serving import decode_speed
    from ffnlab.sizing.zoo import find

    cfg = find(case["model"]).config()
    assert cfg is not None
    speed = decode_speed(cfg, find_accelerator(case["gpu"]), batch=case["batch"], context=case["context"],
                         tp=case["tp"], weights_dtype=case["weights_dtype"], group_size=case.get("group_size"))
    assert speed is not None, case["gpu"]
    bound = speed.tokens_per_s_per_sequence
    return MeasuredFraction(case_id=case["id"], engine=case["engine"], gpu=case["gpu"], tp=case["tp"],
                            model=case["model"],
                            batch=case["batch"], tokens_per_s=case["tokens_per_s"], bound_tokens_per_s=bound,
                            fraction=case["tokens_per_s"] / bound, source=case["source"])


def matching_fractions(engine: str | None, gpu: str, batch: int, tp: int = 1) -> list[MeasuredFraction]:
    """The published fractions for this engine, GPU, batch and tensor-parallel size (none without
    an engine)."""
    if engine is None:
        return []
    from ffnlab.sizing.engine_spec import engine_name

    name = engine_name(engine)
    return [implied_fraction(c) for c in speed_cases()
            if c["engine"] == name and c["gpu"] == gpu and c["batch"] == batch and c["tp"] == tp]


@dataclass(frozen=True)
class TargetSizing(Result):
    """GPUs for a target aggregate decode throughput; ``reached``: within ``max_gpus`` (the most
    GPUs the caller would take: ``fit --max-gpus``)."""

    target_tokens_per_s: float
    fraction: float
    fraction_from: str  # the cases it came from, or "the roofline bound itself"
    tokens_per_s_per_replica: float  # the bound x fraction
    replicas: int
    gpus_per_replica: int
    gpus: int
    max_gpus: int
    reached: bool  # gpus <= max_gpus


def gpus_for_target(target: float, bound_per_replica: float, gpus_per_replica: int,
                    fractions: list[MeasuredFraction], *, max_gpus: int | None = None) -> TargetSizing:
    """Replicas of ``gpus_per_replica`` GPUs that reach ``target`` tokens/s when each reaches the
    lowest matching published fraction of its bound (fraction 1 without one: a lower bound on GPUs).

    A target that needs more GPUs than any GPU count ffnlab takes (2**40, as ``--gpus`` and
    ``--max-gpus``) is refused, so the count stays a count (1e308 tokens/s asked 5e306 GPUs);
    one that needs more than ``max_gpus`` (default 2**40) is sized and marked not ``reached``."""
    from ffnlab.sizing.memory.fit import MAX_GPUS

    require(target > 0, f"--target-tokens-per-s must be > 0, got {target}")
    require(bound_per_replica > 0, "no speed bound for this layout")
    limit = MAX_GPUS if max_gpus is None else max_gpus
    require(1 <= limit <= MAX_GPUS, f"--max-gpus must be in [1, 2**40], got {limit}")
    if fractions:
        worst = min(fractions, key=lambda f: f.fraction)
        fraction, whence = worst.fraction, (f"{worst.engine} on {_gpus(worst)}, {worst.model} at batch {worst.batch}: "
                                            f"{worst.tokens_per_s:g} tokens/s measured ({worst.source})")
    else:
        fraction, whence = 1.0, "the roofline bound itself (no published speed for this engine, GPU and batch)"
    per = bound_per_replica * fraction
    need = target / per  # a float, inf past its range: compared before any ceil
    past = f"--target-tokens-per-s {target:g} needs more than 2**40 GPUs ({gpus_per_replica} per replica, " \
           f"each at about {per:,.3g} tokens/s): past any GPU count ffnlab sizes"
    require(need * gpus_per_replica <= MAX_GPUS, past)
    replicas = max(math.ceil(need), 1)
    gpus = replicas * gpus_per_replica
    require(gpus <= MAX_GPUS, past)  # the float test above, exactly
    return TargetSizing(target_tokens_per_s=target, fraction=fraction, fraction_from=whence,
                        tokens_per_s_per_replica=per, replicas=replicas, gpus_per_replica=gpus_per_replica,
                        gpus=gpus, max_gpus=limit, reached=gpus <= limit)


def _gpus(f: MeasuredFraction) -> str:
    return f.gpu if f.tp == 1 else f"{f.tp} x {f.gpu} (tensor parallel)"


__all__ = ["MeasuredFraction", "TargetSizing", "gpus_for_target", "implied_fraction", "matching_fractions",
           "speed_cases", "speed_engines"]
