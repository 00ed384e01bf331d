"""Memory per GPU under data, tensor, pipeline and expert parallelism and ZeRO / FSDP.

The rules, one per term (``P`` = parameters; ``P_e`` = routed-expert parameters, ``P_d = P - P_e``;
``w`` = bytes per weight in the training dtype):

* **weights**: ``(P_d / (tp x pp) + P_e / (ep x tp x pp)) x w``. Tensor parallelism splits every
  matrix (Megatron-LM, Shoeybi et al. 2019), pipeline parallelism gives each stage ``1/pp`` of the
  layers (Narayanan et al. 2021), expert parallelism puts ``1/ep`` of the experts on each GPU
  (Lepikhin et al. 2021, GShard). ZeRO-3 / FSDP further divide by the data-parallel size.
* **gradients**: like the weights, in the gradient dtype (``grad_dtype``: the training dtype by
  default, as PyTorch AMP and FSDP keep them; fp32 for Megatron-style accumulation,
  ``--accumulate-allreduce-grads-in-fp32``, 18 B per parameter in all with AdamW instead of 16);
  ZeRO-2 and -3 divide by data parallel.
* **optimizer**: the optimizer's state (:mod:`ffnlab.sizing.memory.optimizers`: AdamW's two fp32 moments
  by default, 8-bit Adam, Adafactor, SGD with momentum) and, below 32-bit training, the fp32
  master weights (``12`` bytes per parameter with bf16 and AdamW, the ``K = 12`` of Rajbhandari et
  al. 2020, ZeRO); ZeRO-1, -2, -3 divide by data parallel.
* **working memory** of the data-parallel engine (:mod:`ffnlab.sizing.memory.sharding`): DDP's gradient
  buckets, DeepSpeed's reduce buckets, and for stage 3 the gathered layer, the prefetched layers,
  the unsharded gradients, the reduce-scatter buffer and FSDP's root unit.
* Data parallelism over ``dp`` GPUs: dense parameters are replicated ``dp`` times, experts
  ``dp / ep`` times (the expert-parallel ranks are carved out of the data-parallel ones, as in
  DeepSpeed-MoE and Megatron-LM), so ZeRO shards dense state over ``dp`` and expert state over
  ``dp / ep``.
* **activations**: one micro-batch, from :func:`ffnlab.sizing.memory.activations.activation_memory` with
  heads and d_ff split by ``tp`` (and the d-sized tensors too with sequence parallelism). With
  1F1B pipelining the first stage holds ``pp`` micro-batches in flight, each through ``L / pp``
  layers: the same as one micro-batch through all ``L`` layers (Korthikanti et al. 2022 §4.2.3),
  which is what is counted; the head is counted on the same GPU (an upper bound for pp > 1).
* **KV cache** (serving): heads split by ``tp`` (replicated when kv_heads < tp), layers by ``pp``.

Bytes per GPU are rounded up to whole bytes per term.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from typing import TypedDict

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory.activations import (
    activation_memory,
    kv_cache,
    routed_expert_params,
    weight_bytes,
)
from ffnlab.sizing.memory.byte_rules import DTYPE_BYTES, GRAD_DTYPES, TRAIN_DTYPES, dtype_bytes
from ffnlab.sizing.memory.engines import Engine, default_workload
from ffnlab.sizing.memory.optimizers import optimizer_state, paged_state
from ffnlab.sizing.memory.sharding import Sharding, working_terms
from ffnlab.sizing.memory.step import (
    Alive,
    StepInputs,
    StepOptions,
    StepTimeline,
    optimizer_temp_bytes,
    step_timeline,
)
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import Result
from ffnlab.validation import integer

ZERO_STAGES = (0, 1, 2, 3)
MAX_DEGREE = 2**40
OFFLOAD_DATA = "offload.json"  # a parallel degree past any cluster


@dataclass(frozen=True)
class Layout:
    """How a model is spread over ``dp x tp x pp`` GPUs (expert parallelism within dp), its
    ZeRO stage and how the data-parallel engine runs it (``sharding``), checked when made
    (:meth:`check`; whether it can split a given model: :func:`check_layout`)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0  # 0 = plain data parallel (DDP); 1, 2, 3 = ZeRO stage (3: FSDP or DeepSpeed, see Sharding)
    sp: bool = False  # sequence parallelism (with tp)
    sharding: Sharding = field(default_factory=Sharding)  # not in as_dict (the JSON's own ``sharding`` object)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Each field against its flag's rule; the first bad one raises its one line."""
        for what in ("dp", "tp", "pp", "ep"):
            integer(getattr(self, what), f"--{what}", 1, MAX_DEGREE)
        require(self.zero in ZERO_STAGES, f"--zero must be 0, 1, 2 or 3, got {self.zero}")
        require(not self.sp or self.tp > 1, "sequence parallelism (--sp) needs --tp > 1")
        self.sharding.check()

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    def describe(self) -> str:
        parts = [f"dp {self.dp}", f"tp {self.tp}", f"pp {self.pp}"]
        if self.ep > 1:
            parts.append(f"ep {self.ep}")
        if self.zero:
            parts.append(f"zero {self.zero}")
        if self.sp:
            parts.append("sp")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp, "ep": self.ep, "zero": self.zero, "sp": self.sp,
                "gpus": self.gpus}


@functools.lru_cache(maxsize=16)  # a walk over every layer, asked for by every layout fit prices
def most_experts(cfg: ModelConfig) -> int:
    """The most routed experts of any layer (0: a dense model)."""
    return max((f.n_experts for f in cfg.layer_ffns()), default=0)


def check_tp(cfg: ModelConfig, tp: int, flag: str = "--tp") -> None:
    """Raise :class:`ffnlab.errors.FfnlabError` when ``tp`` GPUs cannot split ``cfg``'s attention
    heads (vLLM and SGLang refuse such a launch too): the one rule for ``--tp`` and a serving
    launch line's tensor-parallel size; ``flag`` names where it came from."""
    require(cfg.attn.n_heads % tp == 0, f"{flag} {tp} must divide n_heads={cfg.attn.n_heads}")


def check_layout(cfg: ModelConfig, lay: Layout) -> None:
    """Raise :class:`ffnlab.errors.FfnlabError` when ``lay`` cannot split ``cfg`` (its own
    fields were checked when it was made)."""
    check_tp(cfg, lay.tp)
    require(lay.pp <= cfg.n_layers, f"--pp {lay.pp} exceeds the {cfg.n_layers} layers")
    n_exp = most_experts(cfg)
    if lay.ep > 1:
        require(n_exp > 0, "--ep needs a mixture-of-experts model")
        require(n_exp % lay.ep == 0, f"--ep {lay.ep} must divide the {n_exp} experts")
        require(lay.dp % lay.ep == 0,
                f"--ep {lay.ep} must divide --dp {lay.dp} (experts are spread over data-parallel ranks)")


@dataclass(frozen=True)
class Row:
    """One term of the per-GPU table: the unsharded bytes, the divisor and its reason."""

    term: str
    total_bytes: int
    per_gpu_bytes: int
    rule: str
    estimate: bool = False  # True where the figure rests on an engine's defaults or a kernel choice
    group: str = "states"  # "states" (weights, gradients, optimizer), "activations" or "working"

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


def training_table(cfg: ModelConfig, work: Workload, lay: Layout | None = None) -> list[Row]:
    """Per-GPU training memory of ``work`` on ``lay``, one row per term: weights, gradients,
    optimizer, activations and the data-parallel engine's working memory."""
    lay = lay or Layout()
    check_layout(cfg, lay)
    sharding = lay.sharding
    dtype, grad_dtype, optimizer = work.dtype, work.grad_dtype, work.optimizer
    seq_len, batch, recompute, attention = work.seq_len, work.batch, work.recompute, work.attention
    w = dtype_bytes(dtype, TRAIN_DTYPES, "training dtype")
    g = dtype_bytes(grad_dtype or dtype, GRAD_DTYPES, "gradient dtype")
    p = count_params(cfg).total
    pe = routed_expert_params(cfg)
    pd = p - pe
    rows = []
    for term, per, shard in (("weights", w, lay.zero >= 3), ("gradients", g, lay.zero >= 2)):
        per_gpu, rule = _split(pd, pe, per, lay, shard)
        if term == "gradients" and g != w:
            rule += f" (gradients kept in {grad_dtype})"
        rows.append(Row(term, math.ceil(p * per), per_gpu, rule))
    opt = optimizer_state(cfg, optimizer, dtype_bytes=w, pure=work.pure_bf16)
    per_gpu, rule = _split(pd, pe, opt.total / p if p else 0.0, lay, lay.zero >= 1)
    rows.append(Row("optimizer", opt.total, per_gpu, f"{rule}; {opt.rule}", estimate=opt.estimate))
    full, mine = (_activations(cfg, seq_len=seq_len, batch=batch, dtype=dtype, recompute=recompute,
                                    attention=attention, capacity_factor=work.capacity_factor, tp=tp, sp=sp,
                                    dropout=work.dropout, dropout_mask_bytes=work.dropout_mask_bytes)
                  for tp, sp in ((1, False), (lay.tp, lay.sp)))
    how = f"micro-batch {batch} x seq {seq_len}, recompute {recompute}, {attention} attention"
    if work.dropout:
        how += ", dropout masks"
    if lay.tp > 1:
        how += f"; heads and d_ff / tp {lay.tp}" + (", d-sized / tp (sp)" if lay.sp else "")
    if lay.pp > 1:
        how += f"; 1F1B: {lay.pp} micro-batches in flight x L/{lay.pp} layers = L layers"
    rows.append(Row("activations", full.total, mine.total, how, estimate=True, group="activations"))
    grads_gpu = rows[1].per_gpu_bytes
    if work.offload != "none":
        rows = _offloaded(rows, work.offload, lay)
    if _pages_states(work):  # the paged states live in unified memory, paged to the host
        rows = [replace(r, per_gpu_bytes=r.per_gpu_bytes - _paged_share(cfg, r), rule=f"{r.rule}; the paged uint8 "
                        "states in host memory, one tensor's paged in at the step") if r.term == "optimizer" else r
                for r in rows]
    for t in working_terms(cfg, lay.zero, sharding, dp=lay.dp, tp=lay.tp, pp=lay.pp, ep=lay.ep, w=w, g=g,
                           grads_on_gpu=grads_gpu):
        rows.append(Row(t.term, t.bytes, t.bytes, t.rule, estimate=t.estimate, group="working"))
    return rows


class _OffloadSource(TypedDict):
    where: str


class OffloadSource(_OffloadSource, total=False):
    """A file of the engine's repository at a commit (``repo``, ``path``, ``ref``) or a page
    (``url``), and where in it."""

    repo: str
    path: str
    ref: str
    url: str


class OffloadFact(TypedDict):
    fact: str
    source: OffloadSource


class OffloadMode(TypedDict):
    """One ``--offload`` mode (``data/offload.json`` ``modes``): the states it moves to the host."""

    moves: list[str]  # training_table terms
    min_zero: int  # the lowest ZeRO stage the engines accept it with
    optimizer_step_on_host: bool
    host_gradient_bytes: int | None  # bytes per gradient value kept on the host (fp32: 4); None: none kept
    facts: list[OffloadFact]


class ActivationOffloadEngine(TypedDict):
    """An engine's activation offload: its forward stash (offloaded tensors still on the GPU), the
    smallest tensor it offloads (bytes), and whether it needs activation checkpointing."""

    forward_stash: int
    min_offload_size: int
    needs_activation_checkpointing: bool


class ActivationOffload(TypedDict):
    moves: str  # in words
    stays: list[str]  # what stays on the GPU, each in words
    engines: dict[str, ActivationOffloadEngine]
    facts: list[OffloadFact]


class OffloadFile(TypedDict):
    """data/offload.json."""

    about: str
    modes: dict[str, OffloadMode]
    activations: ActivationOffload


@functools.cache
def offload_modes() -> OffloadFile:
    """The parsed ``data/offload.json``: per ``--offload`` mode, what moves to the host, with sources."""
    data: OffloadFile = json.loads(resources.files("ffnlab.data").joinpath(OFFLOAD_DATA).read_text(encoding="utf-8"))
    return data


def activation_offload(engine: str) -> ActivationOffloadEngine | None:
    """An engine's activation-offload facts (``data/offload.json``, ``activations.engines``: its
    forward stash, minimum offloaded size, whether it needs checkpointing), None when ffnlab has
    none for it."""
    return offload_modes()["activations"]["engines"].get(engine)


def _offloaded(rows: list[Row], mode: str, lay: Layout) -> list[Row]:
    """``rows`` with the states ``mode`` moves to the host at 0 bytes per GPU (their host bytes:
    :func:`host_terms`)."""
    spec = offload_modes()["modes"][mode]
    engines = ("DeepSpeed's offload_optimizer" if mode == "optimizer"
               else "DeepSpeed's offload_param, FSDP's cpu_offload")
    require(lay.zero >= spec["min_zero"],
            f"--offload {mode} needs --zero {spec['min_zero']}{' or more' if spec['min_zero'] < 3 else ''} ({engines})")
    return [replace(r, per_gpu_bytes=0, rule=f"{r.rule}; on the host (--offload {mode})") if r.term in spec["moves"]
            else r for r in rows]


def _pages_states(work: Workload) -> bool:
    """A paged optimizer whose state stays on this GPU's side (not offloaded whole)."""
    return work.optimizer == "paged-adam8bit" and work.offload == "none"


def _paged_share(cfg: ModelConfig, opt: Row) -> int:
    """The paged states' part of the optimizer row on one GPU (sharded like the row)."""
    return math.ceil(paged_state(cfg)[0] * opt.per_gpu_bytes / opt.total_bytes) if opt.total_bytes else 0


def host_terms(cfg: ModelConfig, work: Workload, lay: Layout) -> list[Row]:
    """Host (CPU) memory of one GPU's process under ``work.offload``: the offloaded states at their
    per-GPU bytes; ZeRO-Offload also keeps the gradients in fp32 there for the CPU optimizer step
    (``host_gradient_bytes``). Empty without offload."""
    if _pages_states(work):
        opt = next(r for r in training_table(cfg, replace(work, optimizer="adam8bit"), lay) if r.term == "optimizer")
        return [Row("host: paged optimizer states", paged_state(cfg)[0], _paged_share(cfg, opt),
                    "bitsandbytes' paged uint8 states (tensors of >= 1e5 values), CUDA unified memory", estimate=True,
                    group="host")]
    if work.offload == "none":
        return []
    spec = offload_modes()["modes"][work.offload]
    rows = {r.term: r for r in training_table(cfg, replace(work, offload="none"), lay)}
    out = []
    for term in spec["moves"]:
        r = rows[term]
        per_gpu, rule = r.per_gpu_bytes, r.rule
        if term == "gradients" and spec["host_gradient_bytes"]:
            g = dtype_bytes(work.grads, GRAD_DTYPES, "gradient dtype")
            per_gpu = math.ceil(per_gpu * spec["host_gradient_bytes"] / g)
            rule = f"{rule}, held as fp32 ({spec['host_gradient_bytes']} B) for the CPU optimizer step"
        out.append(Row(f"host: {term}", math.ceil(r.total_bytes * per_gpu / max(1, r.per_gpu_bytes)), per_gpu,
                       rule, estimate=r.estimate, group="host"))
    return out


# a walk over every layer, the same for every layout of one tensor-parallel size: ``fit`` prices
# hundreds of layouts of a question, so each (workload, tp, sp) is walked once
_activations = functools.lru_cache(maxsize=64)(activation_memory)


def training_peak(cfg: ModelConfig, work: Workload, lay: Layout, rows: list[Row]) -> StepTimeline:
    """The step timeline (:mod:`ffnlab.sizing.memory.step`) of the per-GPU ``rows`` of
    :func:`training_table` for the same workload and layout: its peak is the training total."""
    return step_timeline(cfg, work, step_inputs(cfg, work, lay, rows), tp=lay.tp, sp=lay.sp)


def stateless_timeline(cfg: ModelConfig, work: Workload, *, tp: int, sp: bool) -> StepTimeline:
    """The step timeline of ``work`` at tensor-parallel size ``tp`` with every state at 0 bytes
    (weights, gradients, optimizer state, engine working memory, optimizer temporaries). Every
    moment of a layout's timeline holds its weights, optimizer state and working memory plus parts
    that are the same or larger with more gradients and temporaries, so a layout's peak is at least
    those three states plus this peak (``fit`` prunes layouts with it)."""
    return step_timeline(cfg, work, StepInputs(weights=0, gradients=0, optimizer=0, working=0, opt_temp=0),
                         tp=tp, sp=sp)


def step_inputs(cfg: ModelConfig, work: Workload, lay: Layout, rows: list[Row]) -> StepInputs:
    """The per-GPU states a layout's step timeline is built from, out of its :func:`training_table` ``rows``."""
    step = work.step
    by = {r.term: r for r in rows}
    p = count_params(cfg).total
    opt = by["optimizer"]
    params_on_gpu = p * opt.per_gpu_bytes / opt.total_bytes if opt.total_bytes and opt.per_gpu_bytes else p / (
        lay.tp * lay.pp)
    states = StepInputs(weights=by["weights"].per_gpu_bytes, gradients=by["gradients"].per_gpu_bytes,
                        optimizer=opt.per_gpu_bytes,
                        working=sum(r.per_gpu_bytes for r in rows if r.group == "working"),
                        opt_temp=0 if work.offload != "none" else  # the step runs on the host
                        optimizer_temp_bytes(cfg, step.optimizer_impl, work.optimizer, params_on_gpu,
                                             tp=lay.tp, state_bytes=work.state_bytes)
                        # a paged optimizer prefetches one tensor's paged state at a time
                        + (math.ceil(paged_state(cfg)[1] / lay.tp) if _pages_states(work) else 0))
    return states


def serving_table(cfg: ModelConfig, lay: Layout, *, batch: int, context: int, weights_dtype: str = "bf16",
                  kv_dtype: str = "bf16", group_size: int | None = None, mla: str = "latent") -> list[Row]:
    """Per-GPU serving memory: weights (optionally quantised) and the KV cache."""
    check_layout(cfg, lay)
    wb = weight_bytes(cfg, weights_dtype, group_size=group_size)
    dense_div, expert_div = lay.tp * lay.pp, lay.ep * lay.tp * lay.pp
    per_gpu = math.ceil((wb.total - wb.expert_bytes) / dense_div + wb.expert_bytes / expert_div)
    rule = (f"/ {dense_div} (tp x pp)" if not wb.expert_bytes else
            f"dense part / {dense_div} (tp x pp) + routed experts {wb.expert_bytes:,} B / {expert_div} (ep x tp x pp)")
    kv_all = kv_cache(cfg, batch=batch, context=context, kv_dtype=kv_dtype, mla=mla)
    kv_mine = kv_cache(cfg, batch=batch, context=context, kv_dtype=kv_dtype, mla=mla, tp=lay.tp)
    kv_gpu = math.ceil(kv_mine.total / lay.pp)
    return [Row("weights", wb.total, per_gpu, f"{wb.rule}; {rule}"),
            Row("kv_cache", kv_all.total, kv_gpu,
                f"batch {batch} x context {context} x {kv_mine.rule} per layer, layers / pp {lay.pp}")]


def table_total(rows: list[Row]) -> int:
    return sum(r.per_gpu_bytes for r in rows)


# the keys of a structure's memory (counted through transformers), in the order its JSON has them
STRUCTURE_KEYS = (
    "layout", "seq_len", "batch", "dtype", "kv_dtype", "weights_dtype", "recompute", "attention", "per_gpu",
    "grad_dtype", "optimizer", "dropout", "engine", "weights_bytes", "gradients_bytes", "optimizer_bytes",
    "states_bytes", "working_bytes", "activations_bytes", "terms_sum_bytes", "training_total_bytes", "peak_bytes",
    "peak_moment", "peak_alive", "kv_cache_bytes", "state_bytes", "serving_weights_bytes", "serving_total_bytes",
    "cache_rule", "kv_layers", "state_layers", "note",
)


@dataclass(frozen=True, kw_only=True)
class MemorySummary(Result):
    """The ``memory`` object of the JSON contract (``size``, ``audit``), bytes per GPU: what
    :func:`memory_summary` returns for a config and
    :func:`ffnlab.sizing.memory.structure.structure_memory` for a structure counted through
    transformers. :meth:`as_dict` is the JSON object.

    A config's result has ``sharding``, ``step`` and the per-term tables; a structure's has
    ``state_bytes``, ``cache_rule``, ``kv_layers``, ``state_layers`` and ``note`` instead, None
    for the activations and every training total (not modelled), and its keys in its own order.
    """

    layout: Layout
    seq_len: int
    batch: int
    dtype: str
    kv_dtype: str
    grad_dtype: str
    optimizer: str
    dropout: bool
    engine: str
    sharding: Sharding | None = None  # a config's only
    weights_dtype: str
    recompute: str
    attention: str
    per_gpu: bool = True
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    states_bytes: int  # weights + gradients + optimizer
    activations_bytes: int | None
    working_bytes: int
    terms_sum_bytes: int | None  # every term, not alive at once
    training_total_bytes: int | None  # the step's peak
    peak_bytes: int | None
    peak_moment: str | None
    peak_alive: tuple[Alive, ...] | None
    step: StepOptions | None = None  # a config's only
    trainer: Engine | None = None  # the training engine priced (--engine), with its version
    kv_cache_bytes: int
    state_bytes: int | None = None  # a structure's only: the recurrent state of its SSM / linear layers
    serving_weights_bytes: int
    serving_total_bytes: int
    training_terms: tuple[Row, ...] | None = None  # a config's only
    serving_terms: tuple[Row, ...] | None = None  # a config's only
    cache_rule: str | None = None  # a structure's only, as the four below
    kv_layers: int | None = None
    state_layers: int | None = None
    note: str | None = None
    offload: str | None = None  # --offload, when not none: the states moved to host memory
    host_bytes: int | None = None  # host (CPU) memory of one GPU's process for the offloaded states
    host_terms: tuple[Row, ...] | None = None

    OMITTED_WHEN_NONE = frozenset({"trainer", "sharding", "step", "training_terms", "serving_terms", "state_bytes",
                                   "cache_rule", "kv_layers", "state_layers", "note", "offload", "host_bytes",
                                   "host_terms"})

    @property
    def counted_by_structure(self) -> bool:
        """True for a structure's result (counted through transformers): it carries its cache rule."""
        return self.cache_rule is not None

    def keys(self) -> tuple[str, ...]:
        return STRUCTURE_KEYS if self.counted_by_structure else super().keys()

def memory_summary(cfg: ModelConfig, work: Workload | None = None, lay: Layout | None = None) -> MemorySummary:
    """The ``memory`` object of the JSON contract (:class:`MemorySummary`): integer bytes per GPU
    of the workload ``work`` (default: :class:`Workload`'s priced as the default engine runs it,
    :func:`ffnlab.sizing.memory.engines.default_workload`) on the layout ``lay``.

    Training terms for ``batch`` sequences of ``seq_len`` tokens: ``states_bytes`` (weights +
    gradients + optimizer, what ``training_memory`` counts), ``activations_bytes`` and
    ``working_bytes`` (the data-parallel engine's buffers), whose sum is ``terms_sum_bytes`` (not
    alive at once); the step's peak (:func:`training_peak`) is ``training_total_bytes`` =
    ``peak_bytes``, with ``peak_moment`` and what is alive then (``peak_alive``);
    serving terms (``serving_weights_bytes``, ``kv_cache_bytes``) for the same batch and context,
    weights in ``weights_dtype`` (default: the training dtype). Full training: ``work.finetune``
    is :func:`ffnlab.sizing.finetune.finetune_summary`'s.
    """
    work = work or default_workload()
    lay = lay or Layout()
    train = training_table(cfg, work, lay)
    serve = serving_table(cfg, lay, batch=work.batch, context=work.seq_len, weights_dtype=work.serving_weights,
                          kv_dtype=work.kv, group_size=work.group_size, mla=work.mla)
    timeline = training_peak(cfg, work, lay, train)
    t = {r.term: r.per_gpu_bytes for r in train}
    s = {r.term: r.per_gpu_bytes for r in serve}
    working = sum(r.per_gpu_bytes for r in train if r.group == "working")
    host = host_terms(cfg, work, lay)
    offload = work.offload if work.offload != "none" or not timeline.host_bytes else "activations"
    if timeline.host_bytes:  # --offload-acts: the layers' saved tensors wait in host memory
        host.append(Row("host: activations", timeline.host_bytes, timeline.host_bytes,
                        "each layer's kept set and the final norm's, copied out in forward (--offload-acts)",
                        group="host"))
    return MemorySummary(
        layout=lay, seq_len=work.seq_len, batch=work.batch, dtype=work.dtype, kv_dtype=work.kv,
        grad_dtype=work.grads, optimizer=work.optimizer, dropout=work.dropout,
        engine=lay.sharding.engine(lay.zero), sharding=lay.sharding,
        weights_dtype=work.serving_weights, recompute=work.recompute, attention=work.attention, per_gpu=True,
        weights_bytes=t["weights"], gradients_bytes=t["gradients"], optimizer_bytes=t["optimizer"],
        states_bytes=t["weights"] + t["gradients"] + t["optimizer"],
        activations_bytes=t["activations"], working_bytes=working, terms_sum_bytes=table_total(train),
        training_total_bytes=timeline.peak_bytes, peak_bytes=timeline.peak_bytes,
        peak_moment=timeline.peak.name, peak_alive=timeline.peak_alive(),
        step=work.step, trainer=work.engine, kv_cache_bytes=s["kv_cache"], serving_weights_bytes=s["weights"],
        serving_total_bytes=table_total(serve), training_terms=tuple(train), serving_terms=tuple(serve),
        offload=offload if host else None,
        host_bytes=table_total(host) if host else None,
        host_terms=tuple(host) if host else None,
    )


__all__ = ["DTYPE_BYTES", "GRAD_DTYPES", "STRUCTURE_KEYS", "TRAIN_DTYPES", "Alive", "activation_offload", "Layout",
           "MemorySummary",
           "Row", "Sharding", "StepOptions", "Workload", "check_layout", "check_tp", "host_terms", "memory_summary",
           "offload_modes", "serving_table", "stateless_timeline", "step_inputs", "table_total", "training_peak",
           "training_table"]
