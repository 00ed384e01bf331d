"""Serving speed (a roofline upper bound) and capacity (what fits) for one layout of GPUs.

Speed. A decode step of ``batch`` sequences at ``context`` tokens reads every weight it uses once
and every sequence's whole KV cache, and does ``batch`` tokens' forward FLOPs; it can take no less
than the larger of bytes / bandwidth and FLOPs / peak (the roofline). Per sequence that is at most
``1 / step`` tokens per second; in aggregate ``batch / step``. What is read per step:

* the weights, less the token-embedding and position tables (a lookup reads one row per token),
  unless the embedding is tied to the LM head (the head reads the table whole);
* for MoE, only the routed experts the batch touches: with uniform, independent routing of each
  token to ``k`` of ``E`` experts, the expected number of distinct experts per layer is
  ``E * (1 - (1 - k/E) ** batch)`` (``k`` at batch 1, approaching ``E`` as the batch grows);
* the KV cache of every sequence (sliding windows, GQA, MLA latents and the KV dtype as
  :func:`ffnlab.sizing.memory.activations.kv_cache` counts them).

Tensor parallelism splits both the reads and the FLOPs over ``tp`` GPUs; pipeline stages run one
after another for a token, so ``pp`` adds memory, not speed, for one sequence. Prefill of a prompt
of ``context`` tokens is bound below by its FLOPs (causal: half the attention scores of a full
context) over the peak, and by one read of the weights. The bandwidths and peaks are the
datasheets' (``data/accelerators.json``); measured kernels reach a fraction of both, so every
figure here is an upper bound on speed, never a prediction.

Capacity. For the layout, the longest context at batch 1 and the most sequences at ``context``
whose weights and KV cache per GPU stay within the usable memory (the device's memory less the
reserve, as :mod:`ffnlab.sizing.memory.fit` prices it), each found by bisection on the same
memory model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ffnlab.monotone import first_true
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.flops import flops_per_token
from ffnlab.sizing.memory.activations import kv_cache
from ffnlab.sizing.memory.hardware import Accelerator
from ffnlab.sizing.memory.parallel import Layout, serving_table, table_total
from ffnlab.sizing.memory.quant import PLAIN_BITS, weight_bytes
from ffnlab.sizing.result import Result

MAX_CONTEXT = 2**31  # the bisection's ceiling for the longest context (tokens)
MAX_BATCH = 2**31


def experts_touched(n_experts: int, top_k: int, batch: int) -> float:
    """Expected distinct experts per layer that ``batch`` tokens, each routed uniformly and
    independently to ``top_k`` of ``n_experts``, select."""
    if n_experts <= 0:
        return 0.0
    return n_experts * (1.0 - (1.0 - top_k / n_experts) ** batch)


@dataclass(frozen=True)
class ServingSpeed(Result):
    """Roofline bounds for one decode step and one prefill, on ``tp`` GPUs of one accelerator."""

    batch: int
    context: int
    bytes_per_step: int  # what one GPU reads per step: its tp-th of the weights read + its KV cache
    weights_read_bytes: int  # the weights a step reads, all tp GPUs together
    kv_read_bytes: int  # one GPU's KV cache (its KV heads)
    flops_per_step: int
    step_s: float
    bound: str  # "memory bandwidth" or "compute"
    tokens_per_s_per_sequence: float
    tokens_per_s_total: float
    prefill_s: float
    prefill_bound: str
    experts_read: float | None  # expected routed experts read per MoE layer (None: dense)
    bandwidth_bytes_per_s: float  # one GPU's
    peak_flops: float  # one GPU's, bf16 dense
    tp: int = 1


def _lookup_bytes(cfg: ModelConfig, weights_dtype: str) -> int:
    """Bytes of the tables a decode step only indexes: the token embedding (unless tied to the
    head) and learned positions. Quantised formats keep them in 16 bits."""
    c = count_params(cfg)
    per = PLAIN_BITS[weights_dtype] // 8 if weights_dtype in PLAIN_BITS else 2
    tied = c.lm_head == 0
    return per * ((0 if tied else c.embedding) + c.positions)


def decode_speed(cfg: ModelConfig, acc: Accelerator, *, batch: int, context: int, tp: int = 1,
                 weights_dtype: str = "bf16", kv_dtype: str = "bf16", group_size: int | None = None,
                 mla: str = "latent") -> ServingSpeed | None:
    """The roofline bounds of serving ``cfg`` on ``tp`` x ``acc``; None when the accelerator has
    no bandwidth or peak on record (a ``--gpu-memory`` card)."""
    if acc.bandwidth_gbps is None or acc.bf16_tflops is None:
        return None
    wb = weight_bytes(cfg, weights_dtype, group_size=group_size)
    moe = next((f for f in cfg.layer_ffns() if f.is_moe), None)
    if moe is None:
        touched, expert_read = None, float(wb.expert_bytes)
    else:  # the routed experts' bytes, the share of them a step touches
        touched = experts_touched(moe.n_experts, moe.top_k, batch)
        expert_read = wb.expert_bytes * touched / moe.n_experts
    weights_read = math.ceil(wb.total - wb.expert_bytes - _lookup_bytes(cfg, weights_dtype) + expert_read)
    # per GPU: a tp-th of the weights; the KV heads split over tp (replicated below one head per GPU)
    kv = kv_cache(cfg, batch=batch, context=context, kv_dtype=kv_dtype, mla=mla, tp=tp).total
    per_token = flops_per_token(cfg, context)
    step_flops = batch * per_token.forward
    bw, peak = acc.bandwidth_gbps * 1e9, acc.peak_flops("bf16")
    mem_s, flop_s = (weights_read / tp + kv) / bw, step_flops / tp / peak
    step = max(mem_s, flop_s)
    prefill_flops = context * (per_token.forward - per_token.attn_scores / 2)
    pre_c, pre_m = prefill_flops / tp / peak, weights_read / tp / bw
    return ServingSpeed(
        batch=batch, context=context, bytes_per_step=math.ceil(weights_read / tp) + kv, weights_read_bytes=weights_read,
        kv_read_bytes=kv, flops_per_step=step_flops, step_s=step,
        bound="memory bandwidth" if mem_s >= flop_s else "compute",
        tokens_per_s_per_sequence=1.0 / step, tokens_per_s_total=batch / step,
        prefill_s=max(pre_c, pre_m), prefill_bound="compute" if pre_c >= pre_m else "memory bandwidth",
        experts_read=touched, bandwidth_bytes_per_s=bw, peak_flops=peak, tp=tp)


def _largest(fits: Callable[[int], bool], ceiling: int) -> int:
    """The largest n in [1, ``ceiling``] with ``fits(n)`` (true, then false as n grows); 0 when not
    even 1 fits, ``ceiling`` when all do."""
    first_not = first_true(lambda n: not fits(n), 1, ceiling)
    return ceiling if first_not is None else first_not - 1


@dataclass(frozen=True)
class Capacity(Result):
    """What fits in a serving layout's memory (:func:`capacity`)."""

    max_context_at_batch_1: int | None  # None: any context (every layer's window caps the KV cache)
    max_batch_at_context: int  # sequences of ``context`` tokens
    context: int


def capacity(cfg: ModelConfig, lay: Layout, *, usable_bytes: int, context: int, weights_dtype: str = "bf16",
             kv_dtype: str = "bf16", group_size: int | None = None, mla: str = "latent") -> Capacity:
    """The longest context at batch 1 and the most sequences of ``context`` tokens that fit in
    ``usable_bytes`` per GPU on layout ``lay`` (0 when none does). The longest context is None
    when the KV cache stops growing before :data:`MAX_CONTEXT` (every layer's window caps it)."""

    def fits(batch: int, ctx: int) -> bool:
        rows = serving_table(cfg, lay, batch=batch, context=ctx, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
                             group_size=group_size, mla=mla)
        return table_total(rows) <= usable_bytes

    windowed = fits(1, 1) and fits(1, MAX_CONTEXT)
    return Capacity(max_context_at_batch_1=None if windowed else _largest(lambda n: fits(1, n), MAX_CONTEXT),
                    max_batch_at_context=_largest(lambda n: fits(n, context), MAX_BATCH), context=context)


def speed_assumptions(speed: ServingSpeed, acc: Accelerator) -> list[str]:
    """The assumptions behind :func:`decode_speed`'s figures, one line each."""
    lines = [f"speed is a roofline upper bound: a decode step takes at least max(bytes read / "
             f"{acc.bandwidth_gbps:,.0f} GB/s, FLOPs / {acc.bf16_tflops:,.0f} TFLOP/s bf16 dense) per GPU, "
             f"tp {speed.tp} sharing the reads and FLOPs; real kernels reach a fraction of both "
             f"({acc.bandwidth_source})",
             "each step reads the weights once (not the embedding table, which is only indexed, unless "
             "tied to the head) and every sequence's whole KV cache",
             "prefill: the prompt's FLOPs (causal attention) over the peak, or one read of the weights"]
    if speed.experts_read is not None:
        lines.append(f"MoE: uniform, independent routing; a step at batch {speed.batch} reads "
                     f"{speed.experts_read:,.1f} routed experts per layer on average (k at batch 1, "
                     "approaching all as the batch grows)")
    return lines


__all__ = ["MAX_BATCH", "MAX_CONTEXT", "ServingSpeed", "capacity", "decode_speed", "experts_touched",
           "speed_assumptions"]
