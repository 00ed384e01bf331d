"""Memory per GPU under data, tensor, pipeline and expert parallelism and ZeRO / FSDP.

The rules, one per term (``P`` = parameters; ``P_e`` = routed-expert parameters, ``P_d = P - P_e``;
``w`` = bytes per weight in the training dtype):

* **weights**: ``(P_d / (tp x pp) + P_e / (ep x tp x pp)) x w``. Tensor parallelism splits every
  matrix (Megatron-LM, Shoeybi et al. 2019), pipeline parallelism gives each stage ``1/pp`` of the
  layers (Narayanan et al. 2021), expert parallelism puts ``1/ep`` of the experts on each GPU
  (Lepikhin et al. 2021, GShard). ZeRO-3 / FSDP further divide by the data-parallel size.
* **gradients**: like the weights, in the training dtype; ZeRO-2 and -3 divide by data parallel.
* **optimizer**: AdamW's two fp32 moments and, below 32-bit training, the fp32 master weights
  (``12`` bytes per parameter with bf16, the ``K = 12`` of Rajbhandari et al. 2020, ZeRO);
  ZeRO-1, -2, -3 divide by data parallel.
* Data parallelism over ``dp`` GPUs: dense parameters are replicated ``dp`` times, experts
  ``dp / ep`` times (the expert-parallel ranks are carved out of the data-parallel ones, as in
  DeepSpeed-MoE and Megatron-LM), so ZeRO shards dense state over ``dp`` and expert state over
  ``dp / ep``.
* **activations**: one micro-batch, from :func:`ffnlab.sizing.memory.activation_memory` with
  heads and d_ff split by ``tp`` (and the d-sized tensors too with sequence parallelism). With
  1F1B pipelining the first stage holds ``pp`` micro-batches in flight, each through ``L / pp``
  layers: the same as one micro-batch through all ``L`` layers (Korthikanti et al. 2022 §4.2.3),
  which is what is counted; the head is counted on the same GPU (an upper bound for pp > 1).
* **KV cache** (serving): heads split by ``tp`` (replicated when kv_heads < tp), layers by ``pp``.

Bytes per GPU are rounded up to whole bytes per term.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.flops import DTYPE_BYTES
from ffnlab.sizing.memory import (
    activation_memory,
    dtype_bytes,
    kv_cache,
    routed_expert_params,
    weight_bytes,
)

ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class Layout:
    """How a model is spread over ``dp x tp x pp`` GPUs (expert parallelism within dp)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0  # 0 = plain data parallel; 1, 2, 3 = ZeRO stage (3 = FSDP full sharding)
    sp: bool = False  # sequence parallelism (with tp)

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    def describe(self) -> str:
        parts = [f"dp {self.dp}", f"tp {self.tp}", f"pp {self.pp}"]
        if self.ep > 1:
            parts.append(f"ep {self.ep}")
        if self.zero:
            parts.append(f"zero {self.zero}" if self.zero < 3 else "zero 3/fsdp")
        if self.sp:
            parts.append("sp")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "gpus": self.gpus}


def check_layout(cfg: ModelConfig, lay: Layout) -> None:
    """Raise :class:`FfnlabError` when ``lay`` cannot split ``cfg``."""
    for what in ("dp", "tp", "pp", "ep"):
        require(getattr(lay, what) >= 1, f"--{what} must be >= 1, got {getattr(lay, what)}")
    require(lay.zero in ZERO_STAGES, f"--zero must be 0, 1, 2 or 3, got {lay.zero}")
    require(cfg.attn.n_heads % lay.tp == 0, f"--tp {lay.tp} must divide n_heads={cfg.attn.n_heads}")
    require(lay.pp <= cfg.n_layers, f"--pp {lay.pp} exceeds the {cfg.n_layers} layers")
    n_exp = max((f.n_experts for f in cfg.layer_ffns()), default=0)
    if lay.ep > 1:
        require(n_exp > 0, "--ep needs a mixture-of-experts model")
        require(n_exp % lay.ep == 0, f"--ep {lay.ep} must divide the {n_exp} experts")
        require(lay.dp % lay.ep == 0, f"--ep {lay.ep} must divide --dp {lay.dp} (experts are spread over data-parallel ranks)")
    require(not lay.sp or lay.tp > 1, "sequence parallelism (--sp) needs --tp > 1")


@dataclass(frozen=True)
class Row:
    """One term of the per-GPU table: the unsharded bytes, the divisor and its reason."""

    term: str
    total_bytes: int
    per_gpu_bytes: int
    rule: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _split(dense: float, expert: float, per_param: float, lay: Layout, shard_dp: bool) -> tuple[int, str]:
    """Bytes per GPU of a parameter-sized term (``per_param`` bytes each), and the arithmetic."""
    mp = lay.tp * lay.pp
    dense_div = mp * (lay.dp if shard_dp else 1)
    expert_div = lay.ep * mp * ((lay.dp // lay.ep) if shard_dp else 1)
    per_gpu = math.ceil((dense / dense_div + expert / expert_div) * per_param)
    dp_note = " x dp" if shard_dp else ""
    if not expert:
        return per_gpu, f"{dense:,.0f} params x {per_param:g} B / {dense_div} (tp x pp{dp_note})"
    return per_gpu, (f"(dense {dense:,.0f} / {dense_div} (tp x pp{dp_note}) + experts {expert:,.0f} / "
                     f"{expert_div} (ep x tp x pp{' x dp/ep' if shard_dp else ''})) params x {per_param:g} B")


def training_table(cfg: ModelConfig, lay: Layout, *, seq_len: int, batch: int = 1, dtype: str = "bf16",
                   recompute: str = "none", attention: str = "fused",
                   capacity_factor: float | None = None) -> list[Row]:
    """Per-GPU training memory, one row per term (weights, gradients, optimizer, activations)."""
    check_layout(cfg, lay)
    w = dtype_bytes(dtype, ("fp32", "bf16", "fp16"), "training dtype")
    p = count_params(cfg).total
    pe = routed_expert_params(cfg)
    pd = p - pe
    rows = []
    for term, per, shard in (("weights", w, lay.zero >= 3), ("gradients", w, lay.zero >= 2)):
        per_gpu, rule = _split(pd, pe, per, lay, shard)
        rows.append(Row(term, math.ceil(p * per), per_gpu, rule))
    moments, master = 8, (4 if w < 4 else 0)
    per_gpu, rule = _split(pd, pe, moments + master, lay, lay.zero >= 1)
    rows.append(Row("optimizer", p * (moments + master), per_gpu,
                    f"{rule} (AdamW moments {moments} B + fp32 master {master} B)"))
    full = activation_memory(cfg, seq_len=seq_len, batch=batch, dtype=dtype, recompute=recompute,
                             attention=attention, capacity_factor=capacity_factor)
    mine = activation_memory(cfg, seq_len=seq_len, batch=batch, dtype=dtype, recompute=recompute,
                             attention=attention, capacity_factor=capacity_factor, tp=lay.tp, sp=lay.sp)
    how = f"micro-batch {batch} x seq {seq_len}, recompute {recompute}, {attention} attention"
    if lay.tp > 1:
        how += f"; heads and d_ff / tp {lay.tp}" + (", d-sized / tp (sp)" if lay.sp else "")
    if lay.pp > 1:
        how += f"; 1F1B: {lay.pp} micro-batches in flight x L/{lay.pp} layers = L layers"
    rows.append(Row("activations", full.total, mine.total, how))
    return rows


def serving_table(cfg: ModelConfig, lay: Layout, *, batch: int, context: int, weights_dtype: str = "bf16",
                  kv_dtype: str = "bf16", group_size: int = 128, mla: str = "latent") -> list[Row]:
    """Per-GPU serving memory: weights (optionally quantised) and the KV cache."""
    check_layout(cfg, lay)
    wb = weight_bytes(cfg, weights_dtype, group_size=group_size)
    pe = routed_expert_params(cfg)
    p = count_params(cfg).total
    frac_e = pe / p if p else 0.0  # experts' share, applied to the weight bytes
    dense_div, expert_div = lay.tp * lay.pp, lay.ep * lay.tp * lay.pp
    per_gpu = math.ceil(wb.total * (1 - frac_e) / dense_div + wb.total * frac_e / expert_div)
    rule = (f"/ {dense_div} (tp x pp)" if not pe else
            f"dense share / {dense_div} (tp x pp) + expert share {frac_e:.1%} / {expert_div} (ep x tp x pp)")
    kv_all = kv_cache(cfg, batch=batch, context=context, kv_dtype=kv_dtype, mla=mla)
    kv_mine = kv_cache(cfg, batch=batch, context=context, kv_dtype=kv_dtype, mla=mla, tp=lay.tp)
    kv_gpu = math.ceil(kv_mine.total / lay.pp)
    return [Row("weights", wb.total, per_gpu, f"{wb.rule}; {rule}"),
            Row("kv_cache", kv_all.total, kv_gpu,
                f"batch {batch} x context {context} x {kv_mine.rule} per layer, layers / pp {lay.pp}")]


def table_total(rows: list[Row]) -> int:
    return sum(r.per_gpu_bytes for r in rows)


def memory_summary(cfg: ModelConfig, lay: Layout | None = None, *, seq_len: int = 2048, batch: int = 1,
                   dtype: str = "bf16", kv_dtype: str | None = None, recompute: str = "none",
                   attention: str = "fused", weights_dtype: str | None = None, group_size: int = 128,
                   mla: str = "latent", capacity_factor: float | None = None) -> dict[str, object]:
    """The ``memory`` object of the JSON contract: integer bytes per GPU for the layout given.

    Training terms (weights, gradients, optimizer, activations) for ``batch`` sequences of
    ``seq_len`` tokens; serving terms (``serving_weights_bytes``, ``kv_cache_bytes``) for the
    same batch and context, weights in ``weights_dtype`` (default: the training dtype).
    """
    lay = lay or Layout()
    kv_dtype = kv_dtype or dtype
    weights_dtype = weights_dtype or dtype
    train = training_table(cfg, lay, seq_len=seq_len, batch=batch, dtype=dtype, recompute=recompute,
                           attention=attention, capacity_factor=capacity_factor)
    serve = serving_table(cfg, lay, batch=batch, context=seq_len, weights_dtype=weights_dtype,
                          kv_dtype=kv_dtype, group_size=group_size, mla=mla)
    t = {r.term: r.per_gpu_bytes for r in train}
    s = {r.term: r.per_gpu_bytes for r in serve}
    return {
        "layout": lay.as_dict(), "seq_len": seq_len, "batch": batch, "dtype": dtype, "kv_dtype": kv_dtype,
        "weights_dtype": weights_dtype, "recompute": recompute, "attention": attention, "per_gpu": True,
        "weights_bytes": t["weights"], "gradients_bytes": t["gradients"], "optimizer_bytes": t["optimizer"],
        "activations_bytes": t["activations"], "training_total_bytes": table_total(train),
        "kv_cache_bytes": s["kv_cache"], "serving_weights_bytes": s["weights"],
        "serving_total_bytes": table_total(serve),
        "training_terms": [r.as_dict() for r in train], "serving_terms": [r.as_dict() for r in serve],
    }


__all__ = ["DTYPE_BYTES", "Layout", "Row", "check_layout", "memory_summary", "serving_table",
           "table_total", "training_table"]
