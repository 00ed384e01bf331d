"""Measured peak matmul throughput of a device, the denominator of MFU."""

from __future__ import annotations

import time
from functools import lru_cache

import torch


@lru_cache(maxsize=8)
def measure_peak_flops(device: str = "cpu", dtype: str = "fp32", n: int | None = None, seconds: float = 0.5) -> float:
    """Best FLOP/s of repeated n x n matmuls over about ``seconds``."""
    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    n = n or (8192 if device.startswith("cuda") else 1024)
    a = torch.randn(n, n, device=device, dtype=tdtype)
    b = torch.randn(n, n, device=device, dtype=tdtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(2):
        a @ b
    sync()
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        for _ in range(4):
            a @ b
        sync()
        best = max(best, 4 * 2 * n**3 / (time.perf_counter() - t0))
    return best
