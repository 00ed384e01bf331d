"""The MFU denominator: a device's peak matmul FLOP/s, and MFU shown only when it can be true.

* **GPU**: the accelerator's published dense peak for the precision the matmuls run in
  (``data/accelerators.json``, datasheet figures without 2:4 sparsity), as MFU is defined
  (Chowdhery et al. 2022, PaLM App. B). Only a GPU that is not in the table (or a variant of one
  with other clocks: PCIe, NVL) falls back to a measurement.
* **CPU** (and unlisted GPUs): measured at the run's thread count, as the best FLOP/s over several
  matmul shapes: square ones and the model's own (each linear layer's forward product and its two
  backward ones, in the layouts autograd uses), timed in rounds until a round no longer raises
  the best by more than 1%. So the peak is at least what the model's own matmuls reach alone.

A measured peak is a lower bound of the true one. If a run's MFU still comes out above 100%,
the peak was underestimated (other work on shared cores during the measurement, clocks that
rose afterwards): :func:`model_flops_utilisation` then returns None and :func:`mfu_text` says so instead of a figure.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.memory.byte_rules import TRAIN_DTYPES
from ffnlab.sizing.memory.hardware import Accelerator, load_accelerators

# torch dtype per precision name; the published figure per precision (fp16 tensor-core peaks equal
# the bf16 ones on every accelerator listed; fp32 matmuls use TF32 tensor cores only when torch's
# float32 matmul precision allows it)
DTYPES = TRAIN_DTYPES  # a peak is measured in the dtypes ffnlab trains in
PUBLISHED_FIELD = {"bf16": "bf16_tflops", "fp16": "bf16_tflops", "fp32": "fp32_tflops", "tf32": "tf32_tflops"}
# device-name words of variants with other clocks than the (SXM) parts the table lists
VARIANT_WORDS = frozenset({"PCIE", "NVL"})
SQUARES = {"cpu": (256, 512, 1024), "cuda": (4096, 8192)}
MAX_GEMM_FLOPS = {"cpu": 2**29, "cuda": 2**36}  # a model shape's rows are cut to stay under this
ROUND_GAIN = 0.01  # rounds stop once one raises the best by less than this
MIN_ROUNDS, MAX_ROUNDS = 2, 6
UNDERESTIMATED = "n/a (above 100%: the peak was underestimated)"


@dataclass(frozen=True)
class Gemm:
    """One matrix product (m x k) @ (k x n); ``a_t``/``b_t``: that operand is a transposed view."""

    m: int
    k: int
    n: int
    a_t: bool = False
    b_t: bool = False

    @property
    def flops(self) -> int:
        return 2 * self.m * self.k * self.n

    def __str__(self) -> str:
        return f"({self.m}x{self.k}{'ᵀ' if self.a_t else ''})({self.k}x{self.n}{'ᵀ' if self.b_t else ''})"


@dataclass(frozen=True)
class Peak:
    """A peak FLOP/s and where it comes from: ``published`` (a datasheet), ``measured`` (a lower
    bound) or ``given`` (train.peak_flops)."""

    flops: float
    source: str
    detail: str

    def describe(self) -> str:
        return f"{self.flops / 1e12:.4g} TFLOP/s ({self.source}: {self.detail})"


# -- the shapes ------------------------------------------------------------------------------

def linear_gemms(rows: int, d_in: int, d_out: int) -> list[Gemm]:
    """The products of ``nn.Linear(d_in, d_out)`` on ``rows`` rows: forward x @ W^T, input
    gradient g @ W and weight gradient g^T @ x."""
    return [Gemm(rows, d_in, d_out, b_t=True), Gemm(rows, d_out, d_in), Gemm(d_out, rows, d_in, a_t=True)]


def model_linears(cfg: ModelConfig, tokens: int) -> list[tuple[int, int, int]]:
    """(rows, d_in, d_out) of each distinct linear layer ffnlab's DecoderLM runs on ``tokens``
    tokens; a routed expert gets its share of the tokens (top_k / n_experts of them)."""
    d = cfg.d_model
    out = [(tokens, d, cfg.d_attn + 2 * cfg.d_kv), (tokens, cfg.d_attn, d), (tokens, d, cfg.vocab_size)]
    for f in cfg.ffn_layer_counts():
        n_in = 2 if f.gated else 1
        if not f.is_moe:
            out += [(tokens, d, n_in * f.d_ff), (tokens, f.d_ff, d)]
            continue
        routed = max(1, tokens * f.top_k // f.n_experts)
        out += [(tokens, d, f.n_experts), (routed, d, n_in * f.d_ff), (routed, f.d_ff, d)]
        if f.n_shared_experts:
            width = f.d_shared or f.d_ff
            out += [(tokens, d, n_in * width), (tokens, width, d)]
    return list(dict.fromkeys(out))


def cut_rows(rows: int, d_in: int, d_out: int, max_flops: int) -> int:
    """``rows`` cut (to a multiple of 64, at least 64) so a product stays under ``max_flops``."""
    fit = max_flops // (2 * d_in * d_out)
    return rows if rows <= fit else max(64, fit // 64 * 64)


def model_gemms(cfg: ModelConfig, tokens: int, max_flops: int = MAX_GEMM_FLOPS["cpu"]) -> list[Gemm]:
    """Forward and backward products of each linear layer of the model on ``tokens`` tokens (one
    process's micro-batch), rows cut to stay under ``max_flops`` each."""
    gemms = [g for rows, d_in, d_out in model_linears(cfg, tokens)
             for g in linear_gemms(cut_rows(rows, d_in, d_out, max_flops), d_in, d_out)]
    return list(dict.fromkeys(gemms))


def square_gemms(sizes: Iterable[int]) -> list[Gemm]:
    return [Gemm(n, n, n) for n in sizes]


# -- the measurement (the timer is injected, so the logic is tested without a clock) ----------

@dataclass(frozen=True)
class Measured:
    flops: float  # the best FLOP/s over every shape and round
    best: Gemm  # the shape that reached it
    rounds: int
    per_gemm: dict[Gemm, float]  # each shape's best FLOP/s


def best_over_rounds(gemms: Sequence[Gemm], seconds_per_call: Callable[[Gemm], float], *,
                     min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS,
                     gain: float = ROUND_GAIN) -> Measured:
    """Time every shape once per round (``seconds_per_call``: one product's fastest time in a
    short burst); each shape keeps its fastest. Stops after ``min_rounds`` once a round raised the
    best FLOP/s over all shapes by less than ``gain`` (relative), or after ``max_rounds``."""
    assert gemms and 1 <= min_rounds <= max_rounds
    fastest = {g: float("inf") for g in gemms}
    best = 0.0
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        for g in gemms:
            fastest[g] = min(fastest[g], seconds_per_call(g))
        new = max(g.flops / fastest[g] for g in gemms)
        stable = new <= best * (1 + gain)
        best = max(best, new)
        if rounds >= min_rounds and stable:
            break
    per_gemm = {g: g.flops / fastest[g] for g in gemms}
    top = max(per_gemm, key=per_gemm.__getitem__)
    return Measured(per_gemm[top], top, rounds, per_gemm)


def _torch_timer(device: str, dtype: str, burst_s: float) -> Callable[[Gemm], float]:
    """One product's fastest seconds over a burst of about ``burst_s`` (at least 2 samples; on a
    GPU each sample is 4 products between two synchronisations)."""
    import torch

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    cuda = device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    calls = 4 if cuda else 1
    operands: dict[Gemm, tuple[torch.Tensor, torch.Tensor]] = {}

    def operand(rows: int, cols: int, transposed: bool) -> torch.Tensor:
        if transposed:
            return torch.randn(cols, rows, device=device, dtype=tdtype).t()
        return torch.randn(rows, cols, device=device, dtype=tdtype)

    def seconds(g: Gemm) -> float:
        if g not in operands:  # made once: later rounds time the product alone
            operands[g] = (operand(g.m, g.k, g.a_t), operand(g.k, g.n, g.b_t))
        a, b = operands[g]
        torch.mm(a, b)  # warm: allocation, kernel choice
        sync()
        fastest, samples, deadline = float("inf"), 0, time.perf_counter() + burst_s
        while samples < 2 or time.perf_counter() < deadline:
            t0 = time.perf_counter()
            for _ in range(calls):
                torch.mm(a, b)
            sync()
            fastest = min(fastest, (time.perf_counter() - t0) / calls)
            samples += 1
        return fastest

    return seconds


@lru_cache(maxsize=8)
def measure_peak(device: str = "cpu", dtype: str = "fp32", gemms: tuple[Gemm, ...] = (),
                 threads: int | None = None, burst_s: float = 0.02) -> Peak:
    """Best FLOP/s over the square shapes and ``gemms`` (the model's), at ``threads`` torch
    threads (default: as set), in rounds until stable (:func:`best_over_rounds`)."""
    import torch

    assert dtype in DTYPES, dtype
    kind = "cuda" if device.startswith("cuda") else "cpu"
    shapes = list(dict.fromkeys([*square_gemms(SQUARES[kind]), *gemms]))
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        m = best_over_rounds(shapes, _torch_timer(device, dtype, burst_s))
        n_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    where = f"{n_threads} threads" if kind == "cpu" else device
    return Peak(m.flops, "measured", f"best {dtype} matmul of {len(shapes)} shapes ({len(gemms)} the model's) "
                                     f"over {m.rounds} rounds at {where}: {m.best}")


# -- published peaks ---------------------------------------------------------------------------

def match_accelerator(device_name: str) -> Accelerator | None:
    """The listed accelerator a device name (``torch.cuda.get_device_name``) is, if any: its
    name as a whole word (``NVIDIA H100 80GB HBM3`` is the H100), not a PCIe or NVL variant."""
    words = set(re.findall(r"[A-Z0-9]+", device_name.upper()))
    if words & VARIANT_WORDS:
        return None
    return next((a for a in load_accelerators() if a.name.upper() in words), None)


def matmul_precision(dtype: str, tf32_allowed: bool) -> str:
    """The precision a run's matmuls use: fp32 runs on TF32 tensor cores where torch allows it."""
    return "tf32" if dtype == "fp32" and tf32_allowed else dtype


def published_peak(device_name: str, precision: str) -> Peak | None:
    """The datasheet dense peak of a listed accelerator in ``precision``; None if unlisted."""
    acc = match_accelerator(device_name)
    if acc is None or not getattr(acc, PUBLISHED_FIELD[precision]):
        return None
    tflops = float(getattr(acc, PUBLISHED_FIELD[precision]))
    return Peak(tflops * 1e12, "published",
                f"{acc.display}, {precision} dense ({PUBLISHED_FIELD[precision]} in data/accelerators.json)")


def device_peak(device: str, dtype: str, gemms: Sequence[Gemm] = (), threads: int | None = None) -> Peak:
    """The MFU denominator of one device: published on a listed GPU, measured otherwise."""
    if device.startswith("cuda"):
        import torch

        tf32 = torch.get_float32_matmul_precision() != "highest"
        published = published_peak(torch.cuda.get_device_name(device), matmul_precision(dtype, tf32))
        if published is not None:
            return published
    return measure_peak(device, dtype, tuple(gemms), threads)


# -- MFU ------------------------------------------------------------------------------------------

def model_flops_utilisation(model_flops_per_s: float, peak_flops: float) -> float | None:
    """Model FLOPs utilisation; None when it would exceed 1 (the peak was underestimated)."""
    ratio = model_flops_per_s / peak_flops
    return ratio if ratio <= 1 else None


def mfu_text(value: float | None) -> str:
    return UNDERESTIMATED if value is None else f"{value:.1%}"
