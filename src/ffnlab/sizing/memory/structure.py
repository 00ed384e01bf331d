"""Memory of a model read from its structure (counted through transformers): weights, optimizer,
the KV cache of the layers that keep one, and the recurrent state of SSM and linear-attention
layers.

The rules follow :mod:`ffnlab.sizing.memory.parallel` for one GPU (16-bit weights and gradients, fp32
AdamW moments and master weights below 32-bit; quantised serving weights with one 2-byte scale
per group, embeddings and norms kept in 16-bit). Activations are not modelled for these models, so
no training peak is given for them (None, said in the note), only the model states.

* **KV cache**: every attention layer keeps ``kv_per_token`` elements per cached token (``2 x
  kv_heads x head_dim``, or the MLA latent ``kv_lora_rank + qk_rope_head_dim``), over the whole
  context or, in the layers the config marks sliding, at most the window. Linear-attention, SSM
  and short-convolution layers keep none.
* **recurrent state**, per sequence and independent of the context: a layer's depthwise
  convolution keeps ``channels x (kernel - 1)`` inputs; a Mamba-1 layer's SSM state is its
  ``d_inner x N`` (the shape of its A parameter); a Mamba-2 or delta-rule layer with ``H`` heads
  keeps ``H x (d_inner / H) x N`` with ``N`` the config's state or key-head width
  (``ssm_state_size``, ``linear_key_head_dim``, ...). Other recurrent layers (lightning attention,
  RWKV, xLSTM, RG-LRU) are listed as not estimated.
"""

from __future__ import annotations

import math
from typing import TypedDict

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.hf.structure import ConfigFacts, MixerUnit, Structure
from ffnlab.sizing.memory.byte_rules import (
    DTYPE_BYTES,
    GENERIC_WEIGHT_DTYPES,
    GRAD_DTYPES,
    KV_DTYPES,
    SCALE_BYTES,
    TRAIN_DTYPES,
    dtype_bytes,
    shape_free_states,
)
from ffnlab.sizing.memory.parallel import Layout, MemorySummary
from ffnlab.sizing.memory.workload import Workload


def recurrent_state(m: MixerUnit, state_size: int | None) -> int | None:
    """Elements one sequence keeps in this mixer (None when the rule does not cover it)."""
    if m.kind in ("attention",):
        return 0
    if m.kind == "short_conv":
        return m.conv_state
    if m.state_2d is not None:
        return m.conv_state + m.state_2d
    if m.heads and m.inner and state_size and m.inner % m.heads == 0:
        return m.conv_state + m.heads * (m.inner // m.heads) * state_size
    return None


class CacheBytes(TypedDict):
    """What serving keeps per model besides the weights (:func:`kv_and_state`)."""

    kv_cache_bytes: int
    state_bytes: int  # the recurrent layers' state
    kv_layers: int
    state_layers: int
    rule: str
    not_estimated: list[str]  # the mixer classes with no rule


def kv_and_state(s: Structure, *, batch: int, context: int, kv_dtype: str) -> CacheBytes:
    """KV-cache and recurrent-state bytes for ``batch`` sequences of ``context`` tokens."""
    f = s.counted_by.facts if s.counted_by else ConfigFacts()
    b = dtype_bytes(kv_dtype, KV_DTYPES, "kv dtype")
    per_token = f.kv_per_token
    window = f.sliding_window
    sliding = f.sliding_layers
    kv_layers, state_layers, unknown = 0, 0, []
    kv = state = 0
    for m in s.mixers:
        if m.kind == "attention":
            if per_token is None:
                unknown.append(m.cls)
                continue
            slides = window is not None and (sliding is None or m.layer in set(sliding))
            tokens = min(context, window) if slides and window else context
            kv += math.ceil(per_token * tokens * batch * b)
            kv_layers += 1
            continue
        elems = recurrent_state(m, f.state_size)
        if elems is None:
            unknown.append(m.cls)
            continue
        state += math.ceil(elems * batch * b)
        state_layers += 1
    rule = (f"{kv_layers} attention layers x {f.kv_rule} x {b:g} B per cached token"
            + (f" (sliding layers: window {window})" if window else ""))
    if state_layers:
        rule += f"; {state_layers} recurrent layers keep their state per sequence"
    if unknown:
        rule += f"; not estimated: {', '.join(sorted(set(unknown)))}"
    return {"kv_cache_bytes": kv, "state_bytes": state, "kv_layers": kv_layers, "state_layers": state_layers,
            "rule": rule, "not_estimated": sorted(set(unknown))}


def serving_weight_bytes(s: Structure, dtype: str, group_size: int) -> int:
    bits = int(8 * dtype_bytes(dtype, GENERIC_WEIGHT_DTYPES, "weights dtype"))
    require(group_size >= 0, f"group size must be >= 0, got {group_size}")
    if bits >= 16:
        return s.total * bits // 8
    kept = s.parts["embedding"] + s.parts["norms"]
    q = s.total - kept
    scales = math.ceil(q / group_size) * SCALE_BYTES if group_size else 0
    return q * bits // 8 + scales + int(DTYPE_BYTES["bf16"]) * kept


def structure_memory(s: Structure, work: Workload | None = None, lay: Layout | None = None) -> MemorySummary:
    """The ``memory`` object of ``audit`` (a :class:`ffnlab.sizing.memory.parallel.MemorySummary`, as
    :func:`ffnlab.sizing.memory.parallel.memory_summary` returns) of the workload ``work`` for one GPU,
    with ``state_bytes``, the cache rule and a note instead of the sharding, step options and
    per-term tables (the step options and the layout's sharding are not used). ``activations_bytes``
    and every training total (``training_total_bytes``, ``peak_bytes``, ``terms_sum_bytes``) are None:
    the activations of these layers are not modelled, and a total without them would under-count the step."""
    work = work or Workload()
    group_size = 128 if work.group_size is None else work.group_size
    optimizer, dtype, grad_dtype = work.optimizer, work.dtype, work.grad_dtype
    shape_free_states(optimizer, 2)  # refused now, with its one line, if the optimizer needs the shapes
    layout = lay if lay is not None else Layout()
    if layout.gpus != 1 or layout.zero:
        raise FfnlabError("models counted through transformers get a one-GPU memory estimate only "
                          "(no --dp/--tp/--pp/--ep/--zero)")
    kv_dtype, weights_dtype = work.kv, work.serving_weights
    w = dtype_bytes(dtype, TRAIN_DTYPES, "training dtype")
    g = dtype_bytes(grad_dtype or dtype, GRAD_DTYPES, "gradient dtype")
    p = s.total
    weights = math.ceil(p * w)
    gradients = math.ceil(p * g)
    optimizer_bytes = math.ceil(p * shape_free_states(optimizer, w, pure=work.pure_bf16))
    cache = kv_and_state(s, batch=work.batch, context=work.seq_len, kv_dtype=kv_dtype)
    serving = serving_weight_bytes(s, weights_dtype, group_size)
    return MemorySummary(
        layout=layout, seq_len=work.seq_len, batch=work.batch, dtype=dtype, kv_dtype=kv_dtype,
        weights_dtype=weights_dtype, recompute=work.recompute, attention=work.attention, per_gpu=True,
        grad_dtype=work.grads, optimizer=optimizer, dropout=work.dropout, engine="one GPU",
        weights_bytes=weights, gradients_bytes=gradients, optimizer_bytes=optimizer_bytes,
        states_bytes=weights + gradients + optimizer_bytes, working_bytes=0,
        activations_bytes=None, terms_sum_bytes=None, training_total_bytes=None, peak_bytes=None,
        peak_moment=None, peak_alive=None, trainer=work.engine,
        kv_cache_bytes=cache["kv_cache_bytes"], state_bytes=cache["state_bytes"],
        serving_weights_bytes=serving,
        serving_total_bytes=serving + cache["kv_cache_bytes"] + cache["state_bytes"],
        cache_rule=cache["rule"], kv_layers=cache["kv_layers"], state_layers=cache["state_layers"],
        note="counted through transformers: no training peak (the activations of these layers are not "
             "modelled, so a peak would leave them out; states_bytes is weights + gradients + optimizer "
             "alone); serving total includes the recurrent state",
    )
