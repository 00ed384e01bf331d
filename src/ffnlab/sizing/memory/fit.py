"""``ffnlab fit``: the smallest parallel layout on N GPUs of a type that holds a model.

Training: every layout ``dp x tp x pp = N`` (tp up to ``max_tp``, one node's NVLink domain by
default; tp dividing the heads; pp at most the layers; for MoE, ep dividing dp and the experts;
ZeRO stage 0-3; sequence parallelism whenever tp > 1) is priced with
:func:`ffnlab.sizing.memory.parallel.training_table`, working memory of the data-parallel engine included
(FSDP's gathered and prefetched layers, unsharded gradients and buckets). Serving: ``tp x pp <= N``
with the weights and the KV cache of ``batch`` sequences of ``context`` tokens per replica
(:func:`serving_table`); ``dp`` counts the replicas the N GPUs hold.

A layout *fits* when its per-GPU total plus the **reserve** is at most the memory the device
reports (``Accelerator.memory_bytes``: 81,559 MiB on an H100 80GB). The reserve stands for what
no term counts: the CUDA context, NCCL's communicator buffers, the caching allocator's
fragmentation, kernel workspaces, the optimizer step's temporaries and, when serving, the prefill
activations and the logits. It is an assumption (default 10% of the device memory, ``reserve``
to change it), printed as one.

"Smallest" = least model parallelism first (tp x pp, for serving the GPUs used), then the lowest
ZeRO stage, then the least expert parallelism, then the fewest bytes per GPU. The search is over
divisors only, so it is sublinear in the GPU count.

A training step's timeline walks every layer, so a layout is walked only when a lower bound cannot
settle it (:class:`_Pricer`): a layout's table and step states cost no walk, and its peak is at least
its weights, optimizer state and working memory plus the peak of the same step with no states at
all (:func:`ffnlab.sizing.memory.parallel.stateless_timeline`, one walk per tensor-parallel size).
Layouts that cannot fit are dropped on that bound; the least need when nothing fits is found by
walking layouts in the order of their bounds until the next bound is no smaller. One question
(model and workload, at any GPU count and accelerator) walks at most one timeline per layout and one
per tensor-parallel size, and in practice a few per GPU count: the work is linear in the layers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ffnlab.errors import require
from ffnlab.render import GIB, gib, in_gib
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.finetune import (
    ADAPTER_BYTES,
    FinetuneOptions,
    FinetuneSummary,
    finetune_summary,
    not_counted,
)
from ffnlab.sizing.memory.allocator import allocated_budget, reserved_share
from ffnlab.sizing.memory.allocator import assumption as allocator_assumption
from ffnlab.sizing.memory.byte_rules import STATE_BYTES_PER_PARAM, shape_free_states
from ffnlab.sizing.memory.engines import default_workload
from ffnlab.sizing.memory.hardware import (
    DEFAULT_MFU,
    Accelerator,
    TrainingTime,
    find_accelerator,
    load_accelerators,
    training_time,
)
from ffnlab.sizing.memory.parallel import (
    Layout,
    Row,
    serving_table,
    stateless_timeline,
    step_inputs,
    table_total,
    training_peak,
    training_table,
)
from ffnlab.sizing.memory.sharding import Sharding
from ffnlab.sizing.memory.step import Alive, StepInputs
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import Result
from ffnlab.validation import show

if TYPE_CHECKING:  # the serving model is imported only when a serving layout fits
    from ffnlab.sizing.serving import Capacity, ServingSpeed

MODES = ("train", "serve")
MAX_GPUS = 2**40  # far past any cluster; the divisor search stays below a second
DEFAULT_RESERVE = 0.10  # share of the device memory held back for what no term counts
NOT_COUNTED = {
    "train": ("the CUDA context", "NCCL communicator buffers",
              "caching-allocator fragmentation beyond its assumed reserved share",
              "cuBLAS / attention kernel workspaces"),
    "serve": ("the CUDA context", "NCCL communicator buffers", "caching-allocator fragmentation",
              "prefill activations and the logits", "CUDA graphs and the engine's KV-block rounding"),
}


@dataclass(frozen=True, kw_only=True)
class LayoutFit(Result):
    """One priced layout of ``fit`` (a row of ``candidates``, or ``best``): its per-GPU need
    (training: the step's peak, with the moment and what is alive then; serving: the terms' sum),
    each term and its rule, and whether it fits the usable memory. :meth:`Result.as_dict` is the
    JSON object (``layout`` with its ``gpus``)."""

    layout: Layout
    describe: str
    per_gpu_bytes: int
    peak_moment: str | None = None  # training only, as the two below
    peak_alive: tuple[Alive, ...] | None = None
    terms_sum_bytes: int | None = None  # every term, not alive at once
    terms: dict[str, int]  # term: bytes per GPU
    table: tuple[Row, ...]
    finetune: FinetuneSummary | None = None  # a fine-tuning step's :func:`finetune_summary` (lora / qlora only)
    fits: bool = False  # set by :func:`fit` against the usable memory

    OMITTED_WHEN_NONE = frozenset({"peak_moment", "peak_alive", "terms_sum_bytes", "finetune"})


@dataclass(frozen=True, kw_only=True)
class ServingFigures(Result):
    """What a serving layout holds and how fast it can go (``fit``'s ``serving``, the ``model.serving``
    of ``size --gpu``): ``size`` sets the accelerator, its usable memory, the reserve and the batch
    in front with ``dataclasses.replace``; ``speed`` is None without a bandwidth on record."""

    accelerator: str | None = None  # size --gpu's only, as the three below
    usable_bytes: int | None = None
    reserve_bytes: int | None = None
    batch: int | None = None
    layout: str  # the layout's description
    replicas: int
    capacity: Capacity  # :func:`ffnlab.sizing.serving.capacity`
    speed: ServingSpeed | None
    assumptions: tuple[str, ...]

    OMITTED_WHEN_NONE = frozenset({"accelerator", "usable_bytes", "reserve_bytes", "batch"})


@dataclass(frozen=True, kw_only=True)
class Suggestion(Result):
    """One change tried when nothing fits (``fit``'s ``suggestions``): the smallest layout's per-GPU
    figure with it (the least any layout needs, when still nothing fits)."""

    change: str  # the flag and its value, e.g. "--recompute full"
    fits: bool
    per_gpu_bytes: int | None
    layout: str | None  # the smallest fitting layout's description


@dataclass(frozen=True, kw_only=True)
class FitResult(Result):
    """What :func:`fit` returns: every layout priced, those that fit (smallest first) and the
    smallest (``best``, or None); the ``fit`` command sets ``suggestions`` (nothing fits) and
    ``time`` (``--tokens``) with ``dataclasses.replace``. :meth:`Result.as_dict` is the JSON object
    (the command puts the model and the options in front)."""

    mode: str
    gpus: int
    accelerator: str
    memory_bytes: int  # what the device reports
    reserve_bytes: int
    usable_bytes: int  # memory_bytes - reserve_bytes
    # training: the caching allocator's assumed reserved-over-allocated share (data/allocator.json)
    # and the largest allocated peak the usable memory then holds (what a layout's peak is held to)
    allocator_share: float | None = None
    allocated_budget_bytes: int | None = None
    seq_len: int
    batch: int
    dtype: str
    recompute: str
    # the engine priced, its version and its measured range on the published peaks (training only;
    # Engine.priced), None for a workload made without an engine
    engine: str | None = None
    best: LayoutFit | None
    candidates: tuple[LayoutFit, ...]  # the layouts that fit, smallest first
    smallest_need_bytes: int | None  # the least any layout needs
    layouts_tried: int
    warnings: tuple[str, ...]
    assumptions: tuple[str, ...]
    not_counted: tuple[str, ...]
    serving: ServingFigures | None  # serving only, when a layout fits
    finetune: dict[str, Any] | None = None  # --finetune lora / qlora: the options, the adapters and the states
    suggestions: tuple[Suggestion, ...] | None = None  # the command's, when nothing fits
    time: TrainingTime | None = None  # the command's, with --tokens

    OMITTED_WHEN_NONE = frozenset({"finetune", "suggestions", "time", "engine", "allocator_share",
                                   "allocated_budget_bytes"})


@dataclass(frozen=True, kw_only=True)
class AcceleratorFit(Result):
    """One row of :func:`fit_all`: does the model fit on the GPUs of one accelerator, how, and how
    long to train (``days`` and ``gpu_hours`` None without tokens or a peak; ``training_flops``
    only with them)."""

    accelerator: str
    display: str
    memory_bytes: int
    fits: bool
    layout: str | None  # the smallest fitting layout's description
    per_gpu_bytes: int | None  # its need, or the least any layout needs
    usable_bytes: int
    reserve_bytes: int
    source: str
    days: float | None
    gpu_hours: float | None
    training_flops: int | None = None
    tp: int | None = None  # the smallest fitting layout's tensor-parallel size, for code (layout says it to people)

    OMITTED_WHEN_NONE = frozenset({"training_flops"})

    def _shown(self, name: str) -> bool:
        return name != "tp" and super()._shown(name)  # not a key: ``layout`` already shows it


def context_limit(raw: Mapping[str, object] | None) -> int | None:
    """The longest context a config.json declares (``max_position_embeddings`` and its aliases)."""
    if not raw:
        return None
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        v = raw.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    text = raw.get("text_config")
    return context_limit(text) if isinstance(text, dict) else None


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order (O(sqrt n))."""
    small, large = [], []
    for k in range(1, math.isqrt(n) + 1):
        if n % k == 0:
            small.append(k)
            if k != n // k:
                large.append(n // k)
    return small + large[::-1]


def _layouts(cfg: ModelConfig, gpus: int, mode: str, max_tp: int, sharding: Sharding) -> list[Layout]:
    n_exp = max((f.n_experts for f in cfg.layer_ffns()), default=0)
    out = []
    for tp in (t for t in divisors(math.gcd(gpus, cfg.attn.n_heads)) if t <= max_tp):
        for pp in (p for p in divisors(gpus // tp) if p <= cfg.n_layers):
            dp = gpus // (tp * pp)
            if mode == "serve":
                out.append(Layout(dp=dp, tp=tp, pp=pp, sharding=sharding))  # dp = replicas
                continue
            eps = [e for e in divisors(n_exp) if dp % e == 0] if n_exp else [1]
            out += [Layout(dp=dp, tp=tp, pp=pp, ep=ep, zero=z, sp=tp > 1, sharding=sharding)
                    for ep in eps for z in range(4)]
    return out


def _key(row: LayoutFit) -> tuple[int, ...]:
    lay = row.layout
    return (*_layout_key(lay), row.per_gpu_bytes)


def _layout_key(lay: Layout) -> tuple[int, int, int, int]:
    """The order of "smallest" less the bytes: one layout per key among one GPU count's, so the
    first of these that fits is the smallest that fits."""
    return (lay.tp * lay.pp, lay.zero, lay.ep, lay.pp)


def reserve_bytes(acc: Accelerator, reserve_gib: float | None) -> int:
    if reserve_gib is None:
        return math.ceil(acc.memory_bytes * DEFAULT_RESERVE)
    require(0 <= reserve_gib * GIB < acc.memory_bytes,
            f"--reserve must be in [0, {in_gib(acc.memory_bytes)}) GiB for {acc.name}, got {reserve_gib}")
    return math.ceil(reserve_gib * GIB)


def _fits_and_held(mode: str, reserve: int, acc: Accelerator, reserve_gib: float | None) -> tuple[str, str]:
    """The sentences saying what "fits" means (training: with the caching allocator's assumed
    reserved share, :mod:`ffnlab.sizing.memory.allocator`) and what the reserve stands for."""
    held = (f"reserve {gib(reserve)} "
            + ("(assumed: 10% of the device memory; --reserve GiB)" if reserve_gib is None else "(--reserve)")
            + f" for what no term counts: {', '.join(NOT_COUNTED[mode])}")
    need = (f"the step's peak per GPU (the most alive at one moment) x {1 + reserved_share():.4f} (the caching "
            "allocator's reserved share)" if mode == "train" else "per-GPU total")
    fits = (f"fits = {need} + reserve <= {acc.usable_mib:,} MiB, the memory {acc.name} reports "
            f"({acc.usable_source.split(' (')[0]})")
    return fits, held


def assumptions(mode: str, *, dtype: str, grad_dtype: str | None, optimizer: str, recompute: str,
                attention: str, dropout: bool, sharding: Sharding, reserve: int, acc: Accelerator,
                reserve_gib: float | None, kv_dtype: str | None = None, weights_dtype: str | None = None) -> list[str]:
    """What the memory figures assume, one sentence each (the CLI prints them)."""
    fits, held = _fits_and_held(mode, reserve, acc, reserve_gib)
    if mode == "serve":
        return [f"weights in {weights_dtype or dtype}, KV cache in {kv_dtype or dtype}", fits, held]
    return [
        f"weights and activations in {dtype}, gradients in {grad_dtype or dtype} (--grad-dtype), optimizer "
        f"{optimizer} (--optimizer)" + (", fp32 master weights" if dtype != "fp32" else ""),
        f"activations: {attention} attention, recompute {recompute}, dropout {'masks kept' if dropout else 'off'} "
        "(--dropout), counted as PyTorch's eager kernels keep them",
        f"ZeRO 0 = PyTorch DDP, 1-2 = DeepSpeed at its default buckets, 3 = {sharding.engine(3)}"
        + (f" (one unit per layer, prefetch {sharding.prefetch}, reshard_after_forward "
           f"{sharding.reshard_after_forward})" if sharding.zero3 == "fsdp" else " at its default buckets"),
        fits, held, allocator_assumption(),
        "rows marked * are estimates (engine defaults, kernel choices); the others follow from the "
        "parameter count and the dtypes",
    ]


def finetune_assumptions(ft: FinetuneOptions, *, dtype: str, optimizer: str, recompute: str, attention: str,
                         fits: str, held: str, kernels: str | None = None) -> list[str]:
    """What a fine-tuning fit assumes, one sentence each."""
    base = f"{ft.base_format} (bitsandbytes)" if ft.mode == "qlora" else dtype
    lines = [f"{ft.describe()}: the base frozen in {base}, activations in {dtype}, fp32 adapters (peft's default) "
             f"with fp32 gradients and {optimizer} state (--optimizer)",
             "every GPU holds the whole model and its own micro-batch (data parallel over the adapters); tensor or "
             "pipeline parallelism are not modelled and fit does not search FSDP of the frozen base "
             "(size --dp N --zero 3 prices it), so more GPUs do not lower the need",
             f"activations: {attention} attention, recompute {recompute}"
             + (" (transformers' gradient_checkpointing_enable: the embeddings' output requires grad)"
                if recompute == "full" and kernels is None else
                f" ({kernels}'s offloaded checkpointing: each layer's input on the host, the layer recomputed)"
                if recompute == "full" else "")
             + (", as peft and PyTorch's eager kernels keep them (measured on CPU, docs/finetune.md)" if kernels is None
                else f", as {kernels}'s fused kernels keep them (read from its source: data/fused_kernels.json; "
                     "--fused-kernels)"),
             fits, held, allocator_assumption()]
    return lines + [f"not counted: {x}" for x in not_counted(ft.mode, ft.upcast_fp32, ft.lora_dropout)]


def _finetune_rows(cfg: ModelConfig, work: Workload, gpus: int) -> tuple[LayoutFit, ...]:
    """The one layout a fine-tuning step is modelled on (``dp = gpus``) and its per-GPU terms."""
    out = finetune_summary(cfg, work)
    st, pk = out.states, out.peak
    n, b, optimizer = out.lora.trainable, ADAPTER_BYTES, work.optimizer
    table = [Row("weights", st.base_weights + st.adapter_weights, st.base_weights + st.adapter_weights,
                 f"frozen base: {st.base_rule}; adapters: {n:,} params x {b} B (fp32)"),
             Row("gradients", st.adapter_gradients, st.adapter_gradients, f"adapters only: {n:,} params x {b} B"),
             Row("optimizer", st.adapter_optimizer, st.adapter_optimizer,
                 f"adapters only: {n:,} params x {shape_free_states(optimizer, b):g} B ({optimizer}, fp32)"
                 if optimizer in STATE_BYTES_PER_PARAM else
                 f"adapters only: {n:,} params, {optimizer} (bitsandbytes' blockwise state per adapter tensor)"),
             Row("activations", pk.activations_bytes, pk.activations_bytes,
                 f"micro-batch {work.batch} x seq {work.seq_len}, recompute {work.recompute}, {work.attention} "
                 "attention; frozen layers keep no input for their weights", estimate=True, group="activations")]
    lay = Layout(dp=gpus)
    return (LayoutFit(layout=lay, describe=lay.describe(), per_gpu_bytes=pk.peak_bytes,
                      peak_moment=pk.peak_moment, peak_alive=pk.peak_alive,
                      terms_sum_bytes=table_total(table), terms={r.term: r.per_gpu_bytes for r in table},
                      table=tuple(table), finetune=out),)


class _Pricer:
    """One training question's (model and workload) layouts, priced as they are asked for and kept
    for the next :func:`fit` of the question (another GPU count, another accelerator).

    A layout's table and step states cost no walk over the layers; its step timeline (a walk) is
    built only when :meth:`bound` cannot settle whether it fits or whether it is the least need. Every
    moment of a timeline holds the weights, the optimizer state and the working memory, so the peak
    less those three (the *residual*) depends on the tensor-parallel size, the gradients and the
    optimizer temporaries alone and is kept by them: layouts that share them share one walk."""

    def __init__(self, cfg: ModelConfig, work: Workload) -> None:
        self.cfg, self.work = cfg, work
        self.inputs: dict[Layout, tuple[list[Row], StepInputs, int]] = {}  # table, states, their held sum
        self.rows: dict[Layout, LayoutFit] = {}
        self.residual: dict[tuple[int, bool, int, int], int] = {}  # (tp, sp, gradients, opt_temp): peak less held
        self.floor: dict[tuple[int, bool], tuple[int, int]] = {}  # (tp, sp): the stateless peak, its optimizer step
        self.walks = 0  # timelines built: each walks every layer

    def _inputs(self, lay: Layout) -> tuple[list[Row], StepInputs, int]:
        got = self.inputs.get(lay)
        if got is None:
            table = training_table(self.cfg, self.work, lay)
            st = step_inputs(self.cfg, self.work, lay, table)
            got = self.inputs[lay] = (table, st, st.weights + st.optimizer + st.working)
        return got

    def _residual_key(self, lay: Layout) -> tuple[int, bool, int, int]:
        st = self._inputs(lay)[1]
        return (lay.tp, lay.sp, st.gradients, st.opt_temp)

    def bound(self, lay: Layout, *, floor: bool) -> int:
        """The layout's per-GPU peak, or a lower bound of it: the weights, optimizer state and working
        memory that every moment holds, plus at least the optimizer step's gradients and temporaries
        and (``floor``: one walk per tensor-parallel size) the stateless step's peak, which no moment's
        other parts fall below as the states grow."""
        _, st, held = self._inputs(lay)
        exact = self.residual.get(self._residual_key(lay))
        if exact is not None:
            return held + exact
        least = st.gradients + st.opt_temp
        at = (lay.tp, lay.sp)
        if floor and at not in self.floor:
            tl = stateless_timeline(self.cfg, self.work, tp=lay.tp, sp=lay.sp)
            self.walks += 1
            step = next(m.total for m in tl.moments if m.name == "optimizer step")  # the logits held, if any
            self.floor[at] = (tl.peak_bytes, step)
        if at in self.floor:
            peak, step = self.floor[at]
            least = max(peak, least + step)
        return held + least

    def need(self, lay: Layout) -> int:
        """The layout's per-GPU peak (a walk, unless its residual is known)."""
        _, _, held = self._inputs(lay)
        exact = self.residual.get(self._residual_key(lay))
        return held + exact if exact is not None else self.row(lay).per_gpu_bytes

    def row(self, lay: Layout) -> LayoutFit:
        """The layout's priced row: its table and its step's peak, the moment and what is alive then."""
        got = self.rows.get(lay)
        if got is None:
            table, _, held = self._inputs(lay)
            tl = training_peak(self.cfg, self.work, lay, table)
            self.walks += 1
            got = self.rows[lay] = LayoutFit(
                layout=lay, describe=lay.describe(), per_gpu_bytes=tl.peak_bytes, peak_moment=tl.peak.name,
                peak_alive=tl.peak_alive(), terms_sum_bytes=table_total(table),
                terms={r.term: r.per_gpu_bytes for r in table}, table=tuple(table))
            self.residual[self._residual_key(lay)] = tl.peak_bytes - held
        return got

    def fitting(self, layouts: list[Layout], held_to: int, *, every: bool) -> list[LayoutFit]:
        """The layouts (in the order given) whose peak is at most ``held_to``, as fitting rows
        (``every`` False: the first only)."""
        out = []
        for lay in layouts:
            if self.bound(lay, floor=False) > held_to or self.bound(lay, floor=True) > held_to:
                continue
            if self.need(lay) <= held_to:
                out.append(replace(self.row(lay), fits=True))
                if not every:
                    break
        return out

    def least(self, layouts: list[Layout]) -> int | None:
        """The least per-GPU peak of ``layouts`` (None: none): walked in the order of their bounds,
        up to the first bound no smaller than the least found."""
        best: int | None = None
        for bound, lay in sorted(((self.bound(lay, floor=True), lay) for lay in layouts), key=lambda x: x[0]):
            if best is not None and bound >= best:
                break
            need = self.need(lay)
            best = need if best is None else min(best, need)
        return best


@lru_cache(maxsize=4)
def _pricer(cfg: ModelConfig, work: Workload) -> _Pricer:
    return _Pricer(cfg, work)


def _train_layouts(cfg: ModelConfig, gpus: int, max_tp: int, sharding: Sharding) -> list[Layout]:
    """Every training layout of ``gpus`` GPUs, smallest first."""
    return sorted(_layouts(cfg, gpus, "train", max_tp, sharding), key=_layout_key)


@lru_cache(maxsize=4)
def _price(cfg: ModelConfig, work: Workload, gpus: int, mode: str, max_tp: int,
           sharding: Sharding) -> tuple[LayoutFit, ...]:
    """Every layout's per-GPU table when serving, or a fine-tuning step's one layout (the same for
    every accelerator: priced once per question); training is priced by :class:`_Pricer`."""
    if work.adapters:
        return _finetune_rows(cfg, work, gpus)
    rows = []
    for lay in _layouts(cfg, gpus, mode, max_tp, sharding):
        table = serving_table(cfg, lay, batch=work.batch, context=work.seq_len, weights_dtype=work.serving_weights,
                              kv_dtype=work.kv, group_size=work.group_size, mla=work.mla)
        rows.append(LayoutFit(layout=lay, describe=lay.describe(), per_gpu_bytes=table_total(table),
                              terms={r.term: r.per_gpu_bytes for r in table}, table=tuple(table)))
    return tuple(rows)


def fit(cfg: ModelConfig, work: Workload | None = None, *, gpus: int, accelerator: str | Accelerator,
        mode: str = "train", reserve_gib: float | None = None, max_tp: int = 8, sharding: Sharding | None = None,
        context_limit: int | None = None) -> FitResult:
    """Every layout of ``gpus`` accelerators priced for the workload ``work`` (default:
    :class:`Workload`'s as the default engine, ``hf-trainer``, runs it), those that fit, and the
    smallest that fits (``best``, or None): a :class:`FitResult`, whose ``engine`` names the engine
    priced, its version and the error measured for it on the published peaks. ``sharding``: how
    ZeRO-3 runs in every layout tried. ``work.finetune`` lora / qlora: the fine-tuning step's peak,
    every GPU holding the whole model."""
    work = work or default_workload()
    require(mode in MODES, f"mode must be one of {', '.join(MODES)}, got {show(mode)}")
    adapters = work.adapters
    require(not adapters or mode == "train", "--finetune lora/qlora sizes a training step: not with --mode serve")
    require(1 <= gpus <= MAX_GPUS, f"--gpus must be in [1, 2**40], got {gpus}")
    require(max_tp >= 1, f"--max-tp must be >= 1, got {max_tp}")
    sharding = sharding or Sharding()
    sharding.check()
    acc = accelerator if isinstance(accelerator, Accelerator) else find_accelerator(accelerator)
    reserve = reserve_bytes(acc, reserve_gib)
    budget = acc.memory_bytes - reserve
    # training: the allocated peak times the allocator's reserved share must fit the usable memory
    held_to = allocated_budget(budget) if mode == "train" else budget
    if mode == "train" and not adapters:
        layouts = _train_layouts(cfg, gpus, max_tp, sharding)
        pricer = _pricer(cfg, work)
        fitting = pricer.fitting(layouts, held_to, every=True)
        # a layout that does not fit needs more than every one that does
        smallest = min(r.per_gpu_bytes for r in fitting) if fitting else pricer.least(layouts)
        tried_count = len(layouts)
    else:
        priced = _price(cfg, work, gpus, mode, max_tp, sharding)
        rows = sorted((replace(r, fits=r.per_gpu_bytes <= held_to) for r in priced), key=_key)
        fitting = [r for r in rows if r.fits]
        smallest = min((r.per_gpu_bytes for r in rows), default=None)
        tried_count = len(rows)
    warnings: list[str] = []
    seq_len, dtype = work.seq_len, work.dtype
    if context_limit is not None and seq_len > context_limit:
        warnings.append(f"--seq-len {seq_len:,} is past the model's max_position_embeddings {context_limit:,}: "
                        "the model was not trained for it (positions beyond it are extrapolated or wrap)")
    serving = None
    if mode == "serve" and fitting:
        serving = serving_figures(cfg, acc, fitting[0].layout, work, usable_bytes=budget)
    ft_out = None
    if not adapters:
        said = assumptions(mode, dtype=dtype, grad_dtype=work.grad_dtype, optimizer=work.optimizer,
                           recompute=work.recompute, attention=work.attention, dropout=work.dropout,
                           sharding=sharding, reserve=reserve, acc=acc, reserve_gib=reserve_gib,
                           kv_dtype=work.kv_dtype, weights_dtype=work.weights_dtype)
    else:
        finetune = work.finetune
        assert finetune is not None
        fits, held = _fits_and_held(mode, reserve, acc, reserve_gib)
        said = finetune_assumptions(finetune, dtype=dtype, optimizer=work.optimizer, recompute=work.recompute,
                                    attention=work.attention, fits=fits, held=held, kernels=work.step.fused_kernels)
        priced_ft = _price(cfg, work, gpus, mode, max_tp, sharding)[0].finetune
        assert priced_ft is not None
        ft_out = {**finetune.as_dict(), "lora": priced_ft.lora.as_dict(), "states": priced_ft.states.as_dict()}
    return FitResult(mode=mode, gpus=gpus, accelerator=acc.name, memory_bytes=acc.memory_bytes,
                     reserve_bytes=reserve, usable_bytes=budget, seq_len=seq_len, batch=work.batch, dtype=dtype,
                     recompute=work.recompute, best=fitting[0] if fitting else None, candidates=tuple(fitting),
                     smallest_need_bytes=smallest, layouts_tried=tried_count, warnings=tuple(warnings),
                     assumptions=tuple(said),
                     not_counted=NOT_COUNTED[mode], serving=serving, finetune=ft_out,
                     engine=work.engine.priced if work.engine is not None and mode == "train" else None,
                     allocator_share=reserved_share() if mode == "train" else None,
                     allocated_budget_bytes=held_to if mode == "train" else None)


def serving_figures(cfg: ModelConfig, acc: Accelerator, lay: Layout, work: Workload, *,
                    usable_bytes: int) -> ServingFigures:
    """What the serving layout ``lay`` holds and how fast it can go (:class:`ServingFigures`) for
    ``work.batch`` sequences of ``work.seq_len`` tokens: the longest context at batch 1, the most
    sequences at that context (:func:`ffnlab.sizing.serving.capacity`) and the roofline bounds
    (:func:`ffnlab.sizing.serving.decode_speed`, None without a bandwidth on record)."""
    from ffnlab.sizing.serving import capacity, decode_speed, speed_assumptions

    weights, kv, group_size, mla = work.serving_weights, work.kv, work.group_size, work.mla
    speed = decode_speed(cfg, acc, batch=work.batch, context=work.seq_len, tp=lay.tp, weights_dtype=weights,
                         kv_dtype=kv, group_size=group_size, mla=mla)
    return ServingFigures(
        layout=lay.describe(), replicas=lay.dp,
        capacity=capacity(cfg, lay, usable_bytes=usable_bytes, context=work.seq_len, weights_dtype=weights,
                          kv_dtype=kv, group_size=group_size, mla=mla), speed=speed,
        assumptions=tuple(speed_assumptions(speed, acc)) if speed else
        (f"{acc.name} has no memory bandwidth on record: no speed bound (give --gpu for a listed card)",))


def fit_all(cfg: ModelConfig, work: Workload | None = None, *, gpus: int, tokens: int | None = None,
            mfu: float | None = None, precision: str = "bf16", accelerators: list[Accelerator] | None = None,
            mode: str = "train", reserve_gib: float | None = None, max_tp: int = 8, sharding: Sharding | None = None,
            context_limit: int | None = None) -> list[AcceleratorFit]:
    """For each accelerator: does the model fit on ``gpus`` of them (:func:`fit`, the same
    arguments), how, and how long to train (``mfu`` None: the :data:`DEFAULT_MFU` assumption), an
    :class:`AcceleratorFit` each."""
    work = work or default_workload()
    rows = []
    for acc in accelerators or load_accelerators():
        res = fit(cfg, work, gpus=gpus, accelerator=acc, mode=mode, reserve_gib=reserve_gib, max_tp=max_tp,
                  sharding=sharding, context_limit=context_limit)
        best = res.best
        row = AcceleratorFit(accelerator=acc.name, display=acc.display, memory_bytes=acc.memory_bytes,
                             fits=best is not None, layout=best.describe if best else None,
                             per_gpu_bytes=best.per_gpu_bytes if best else res.smallest_need_bytes,
                             usable_bytes=res.usable_bytes, reserve_bytes=res.reserve_bytes,
                             source=acc.source, days=None, gpu_hours=None, tp=best.layout.tp if best else None)
        peak = acc.bf16_tflops if precision == "bf16" else acc.fp8_tflops
        if tokens and res.mode == "train" and peak is not None and acc.bf16_tflops is not None:
            t = training_time(cfg, tokens=tokens, gpus=gpus, accelerator=acc,
                              seq_len=work.seq_len, mfu=mfu, precision=precision)
            row = replace(row, days=t.days, gpu_hours=t.gpu_hours, training_flops=t.flops)
        rows.append(row)
    return rows


__all__ = ["DEFAULT_MFU", "DEFAULT_RESERVE", "MAX_GPUS", "MODES", "NOT_COUNTED", "AcceleratorFit", "FitResult",
           "LayoutFit", "ServingFigures", "Suggestion", "assumptions", "context_limit", "divisors", "fit", "fit_all",
           "reserve_bytes", "serving_figures", "suggestions"]


# What `fit` tries when nothing fits: each a change of one setting (flag, value, the fit keyword it
# sets), tried alone, in this order; more GPUs are tried as well (doubling, up to MAX_SUGGESTED_GPUS).
TRAIN_CHANGES = (("--recompute", "full", "recompute"), ("--optimizer", "adam8bit", "optimizer"),
                 ("--loss", "chunked", "step"))
SERVE_CHANGES = (("--weights-dtype", "int4", "weights_dtype"), ("--kv-dtype", "fp8", "kv_dtype"))
MAX_SUGGESTED_GPUS = 4096


def _changed(work: Workload, key: str, value: str) -> Workload | None:
    """``work`` with the one setting ``key`` of a suggestion set to ``value`` (None: already so)."""
    if key == "step":
        return None if work.step.loss == value else replace(work, step=replace(work.step, loss=value))
    if key == "finetune":
        return replace(work, finetune=replace(work.finetune or FinetuneOptions(), mode=value))
    if key == "recompute":
        return None if work.recompute == value else replace(work, recompute=value)
    if key == "optimizer":
        return None if work.optimizer == value else replace(work, optimizer=value)
    if key == "weights_dtype":
        return None if work.weights_dtype == value else replace(work, weights_dtype=value)
    assert key == "kv_dtype", key
    return None if work.kv_dtype == value else replace(work, kv_dtype=value)


def suggestions(cfg: ModelConfig, work: Workload | None = None, *, gpus: int, accelerator: str | Accelerator,
                mode: str = "train", reserve_gib: float | None = None, max_tp: int = 8,
                sharding: Sharding | None = None, context_limit: int | None = None) -> list[Suggestion]:
    """What would fit when nothing does for ``work`` (:func:`fit`, the same arguments): for each
    one-setting change (and for the fewest GPUs, doubling, that hold the model), the smallest
    layout's per-GPU figure, whether it fits, and the layout; changes already in effect are skipped."""
    work = work or default_workload()
    ft = work.finetune or FinetuneOptions()
    adapters = ft.adapters
    changes = list(TRAIN_CHANGES if mode == "train" else SERVE_CHANGES)
    if adapters:  # the adapters' optimizer state is small; a QLoRA base is the change that helps
        changes = [c for c in changes if c[2] != "optimizer"]
        if ft.mode == "lora":
            changes.insert(0, ("--finetune", "qlora", "finetune"))
    if work.step.fused_kernels is not None:  # the trainer's kernels bring their own loss (--fused-kernels)
        changes = [c for c in changes if c[2] != "step"]

    def tried(w: Workload, n: int, *, least: bool = True) -> tuple[LayoutFit | None, int | None]:
        """The smallest layout that fits, else (``least``) the least need: all a suggestion says."""
        if mode != "train" or w.adapters:
            res = fit(cfg, w, gpus=n, accelerator=accelerator, mode=mode, reserve_gib=reserve_gib, max_tp=max_tp,
                      sharding=sharding, context_limit=context_limit)
            return res.best, res.smallest_need_bytes
        # as fit prices it, less the layouts past the smallest that fits
        acc = accelerator if isinstance(accelerator, Accelerator) else find_accelerator(accelerator)
        layouts = _train_layouts(cfg, n, max_tp, sharding or Sharding())
        pricer = _pricer(cfg, w)
        best = pricer.fitting(layouts, allocated_budget(acc.memory_bytes - reserve_bytes(acc, reserve_gib)),
                              every=False)
        return (best[0], best[0].per_gpu_bytes) if best else (None, pricer.least(layouts) if least else None)

    out = []
    for flag, value, key in changes:
        changed = _changed(work, key, value)
        if changed is not None:
            out.append(_tried(f"{flag} {value}", *tried(changed, gpus)))
    if adapters:  # more GPUs do not help: each holds the whole model
        return out
    n = gpus * 2
    while n <= MAX_SUGGESTED_GPUS:
        last = n * 2 > MAX_SUGGESTED_GPUS
        best, least = tried(work, n, least=last)  # the least need is said only at the last count
        if best is not None or last:
            out.append(_tried(f"--gpus {n}", best, least))
            break
        n *= 2
    return out


def _tried(change: str, best: LayoutFit | None, least: int | None) -> Suggestion:
    return Suggestion(change=change, fits=best is not None, per_gpu_bytes=best.per_gpu_bytes if best else least,
                      layout=best.describe if best else None)
