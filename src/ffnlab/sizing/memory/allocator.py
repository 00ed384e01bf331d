"""The caching allocator's reserved-over-allocated share, an assumption kept as data with its measurement.

PyTorch's CUDA caching allocator keeps more memory reserved than its tensors occupy (blocks rounded
up, segments split and cached). ffnlab's step peak is allocated memory, so ``fit`` compares the
peak times ``1 + share`` with what the device leaves usable after the reserve. ``data/allocator.json``
holds the share, the statistic it is (the median of ``max_memory_reserved / max_memory_allocated``
over the training steps ffnlab measured on a GPU, ``benchmarks/results/memory-scale-cuda-raw.json``)
and where it was measured; a test recomputes it from that file. :func:`allocated_budget` is the
allocated peak a usable byte count holds; :func:`assumption` the sentence ``fit`` prints.
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources
from typing import TypedDict

DATA = "allocator.json"


class AllocatorMeasurement(TypedDict):
    """The measurement the share comes from: the records' file at a commit, and where they ran."""

    file: str
    repo: str
    commit: str
    what: str
    records: int
    device: str
    torch: str
    cuda: str
    alloc_conf: str | None  # PYTORCH_CUDA_ALLOC_CONF; None: the default settings
    range: list[float]  # the lowest and highest share of the records


class PublishedShare(TypedDict):
    """A reserved-over-allocated figure a project published, and where."""

    what: str
    url: str
    where: str


class AllocatorFile(TypedDict):
    """data/allocator.json."""

    about: str
    reserved_over_allocated: float
    statistic: str
    measured: AllocatorMeasurement
    published: list[PublishedShare]
    caveat: str


@functools.cache
def allocator_data() -> AllocatorFile:
    """The parsed ``data/allocator.json``."""
    data: AllocatorFile = json.loads(resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8"))
    return data


def reserved_share() -> float:
    """The assumed share reserved over allocated (0.1038: 10.38% more reserved than allocated)."""
    return float(allocator_data()["reserved_over_allocated"])


def allocated_budget(usable_bytes: int) -> int:
    """The largest allocated peak whose reserved memory fits ``usable_bytes``."""
    return math.floor(usable_bytes / (1 + reserved_share()))


def assumption() -> str:
    """What fit assumes about the allocator, with the measurement it comes from (one sentence)."""
    d = allocator_data()
    m = d["measured"]
    lo, hi = m["range"]
    return (f"the caching allocator reserves {reserved_share():.1%} over the allocated peak (assumed: the median "
            f"max_memory_reserved / max_memory_allocated of {m['records']} training steps of 0.5B-1.2B models measured "
            f"on an {m['device']}, torch {m['torch']}, range {lo:.1%}-{hi:.1%}; {m['file']}): a layout fits when its "
            f"peak x "
            f"{1 + reserved_share():.4f} is within the usable memory")


__all__ = ["DATA", "AllocatorFile", "AllocatorMeasurement", "PublishedShare", "allocated_budget", "allocator_data",
           "assumption", "reserved_share"]
