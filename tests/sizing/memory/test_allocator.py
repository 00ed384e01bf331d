"""The caching allocator's reserved-over-allocated share (data/allocator.json, sizing/memory/allocator.py).

Oracle: the GPU measurement the share is taken from (benchmarks/results/memory-scale-cuda-raw.json,
max_memory_reserved and max_memory_allocated of nine training steps on an H200): the kept share must
be the median recomputed from those records, and ``fit`` must hold a layout's peak times
``1 + share`` to the usable memory, training only, saying so in its assumptions.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ffnlab.sizing.memory.allocator import (
    allocated_budget,
    allocator_data,
    assumption,
    reserved_share,
)
from ffnlab.sizing.memory.fit import fit
from ffnlab.sizing.memory.hardware import custom_accelerator
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.zoo import find

ROOT = Path(__file__).resolve().parents[3]


def test_the_share_is_the_median_of_the_measured_steps() -> None:
    data = allocator_data()
    raw = json.loads((ROOT / data["measured"]["file"]).read_text(encoding="utf-8"))
    shares = [r["max_reserved"] / r["max_allocated"] - 1 for r in raw["records"]]
    assert data["reserved_over_allocated"] == round(statistics.median(shares), 4) == reserved_share()
    assert data["measured"]["records"] == len(shares)
    assert data["measured"]["range"] == [round(min(shares), 4), round(max(shares), 4)]
    assert (data["measured"]["device"], data["measured"]["torch"]) == (raw["device_name"], raw["torch"])
    assert all(p["url"].startswith("https://") for p in data["published"])


def test_fit_holds_the_peak_times_the_share_to_the_usable_memory() -> None:
    cfg = find("gpt2").config()
    assert cfg is not None
    work = Workload(seq_len=1024)
    need = fit(cfg, work, gpus=1, accelerator=custom_accelerator(80)).smallest_need_bytes
    assert need is not None
    # a card whose usable memory (no reserve) is just above the peak, but below peak x (1 + share)
    tight = custom_accelerator(need * (1 + reserved_share() / 2) / 2**30)
    res = fit(cfg, work, gpus=1, accelerator=tight, reserve_gib=0)
    assert res.best is None and res.usable_bytes >= need > res.allocated_budget_bytes
    assert res.allocated_budget_bytes == allocated_budget(res.usable_bytes)
    roomy = custom_accelerator(need * (1 + reserved_share()) * 1.001 / 2**30)
    assert fit(cfg, work, gpus=1, accelerator=roomy, reserve_gib=0).best is not None
    assert assumption() in res.assumptions and res.allocator_share == reserved_share()
    serve = fit(cfg, work, gpus=1, accelerator=tight, reserve_gib=0, mode="serve")
    assert serve.allocator_share is None and serve.allocated_budget_bytes is None  # training only
