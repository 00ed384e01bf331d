"""Working memory of data-parallel training: what a ZeRO stage or FSDP holds beyond its shards.

Sharding the model states (``ffnlab.sizing.memory.parallel``) is not the whole story: a sharded layer
must be gathered before it runs, its gradients exist unsharded until they are reduce-scattered,
and every engine keeps communication buffers. Per GPU, after tensor (``tp``) and expert (``ep``)
parallelism, with ``w`` = bytes of a weight in the training dtype and ``g`` = of a gradient:

* **stage 0, PyTorch DDP**: the gradient buckets, a second copy of the gradients (DDP's default
  ``gradient_as_bucket_view=False``; PyTorch's DDP documentation: with it set "the saved memory
  size will be equal to the total gradients size").
* **stages 1 and 2, DeepSpeed ZeRO**: the gradient reduce bucket (``ipg_buffer``) of
  ``reduce_bucket_size`` = 5e8 elements in the training dtype, allocated at its full size, two of
  them with ``overlap_comm`` (off by default below stage 3); DeepSpeed
  ``deepspeed/runtime/zero/config.py`` and ``stage_1_and_2.py``.
* **stage 3, PyTorch FSDP** (``fully_shard`` on each decoder layer and on the whole model, the
  pattern of PyTorch's FSDP2 documentation and torchtitan), FSDP2's defaults:

  - *gathered layer*: the largest layer's weights, unsharded (``w`` each);
  - *prefetched layers*: ``prefetch`` more layers' all-gather outputs (FSDP2 prefetches one layer
    in backward, and in forward keeps the previous all-gather output while the next runs);
  - *unsharded layer gradients*: the largest layer's gradients as autograd writes them (``w``),
    before its reduce-scatter;
  - *reduce-scatter buffer*: one layer's flat reduce-scatter input in the reduce dtype (``g``;
    FSDP2 keeps one in flight, ``reduce_scatter_max_input_buffers`` 1);
  - *root unit gathered*: the embeddings, final norm and head, which ``fully_shard(model)``
    leaves unsharded from forward until the end of backward (FSDP2 does not reshard the root
    after forward), and the gradients of the head side (LM head and final norm), held until the
    root's post-backward at the end of backward (a tied head's gradient waits in autograd's
    buffer until the embedding's backward adds to it: the same bytes);
  - with ``reshard_after_forward=False`` (FSDP's SHARD_GRAD_OP, ZeRO-2-like) every layer stays
    gathered from its forward to its backward, instead of one layer and the prefetch; the peak is
    then at the first layer of backward, before any reduce-scatter buffer exists.

  ``tests/sizing/memory/test_memory_fsdp.py`` counts the unsharded parameter and gradient storage FSDP2 keeps
  alive in a 2-process gloo run and checks these terms against it.
* **stage 3, DeepSpeed ZeRO-3**: the live gathered parameters (``stage3_max_live_parameters``
  1e9, at most the parameters on the GPU, at least its largest matrix), the prefetch bucket
  (``stage3_prefetch_bucket_size`` 5e7), the small parameters it never partitions (below
  ``stage3_param_persistence_threshold`` 1e5 elements: norms, biases) and the reduce bucket
  (5e8 elements, two with ``overlap_comm``, on by default at stage 3). These are DeepSpeed's
  ceilings, an estimate: it may release sooner.

Every term is a peak held during forward and backward, counted at once (an upper bound: not
every term peaks at the same moment).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Literal

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.shapes import layer_params, matrices, root_params, vector_params
from ffnlab.validation import show

ZERO3_ENGINES = ("fsdp", "deepspeed")
MAX_PREFETCH = 16
# DeepSpeed defaults (deepspeed/runtime/zero/config.py)
DS_REDUCE_BUCKET = 500_000_000
DS_MAX_LIVE = 1_000_000_000
DS_PREFETCH_BUCKET = 50_000_000
DS_PERSISTENCE = 100_000


@dataclass(frozen=True)
class Sharding:
    """How data-parallel training runs: what stage 3 is, and FSDP's options."""

    zero3: str = "fsdp"  # "fsdp" (PyTorch fully_shard) or "deepspeed" (ZeRO-3)
    prefetch: int = 1  # FSDP: layers whose all-gather runs ahead
    reshard_after_forward: bool = True  # FSDP: free a layer's gathered weights after its forward
    overlap_comm: bool | None = None  # DeepSpeed: None = its default (on at stage 3 only)

    def check(self) -> None:
        require(self.zero3 in ZERO3_ENGINES,
                f"--zero3 must be one of {', '.join(ZERO3_ENGINES)}, got {show(self.zero3)}")
        require(0 <= self.prefetch <= MAX_PREFETCH, f"--prefetch must be in [0, {MAX_PREFETCH}], got {self.prefetch}")

    def engine(self, zero: int) -> str:
        return {0: "PyTorch DDP", 1: "DeepSpeed ZeRO-1", 2: "DeepSpeed ZeRO-2"}.get(
            zero, "PyTorch FSDP (fully_shard)" if self.zero3 == "fsdp" else "DeepSpeed ZeRO-3")

    def as_dict(self) -> dict[str, object]:
        return {"zero3": self.zero3, "prefetch": self.prefetch, "reshard_after_forward": self.reshard_after_forward,
                "overlap_comm": self.overlap_comm}


# what a working-memory term holds: FSDP's gathered weights (the running layer, the prefetched ones,
# a stage kept gathered, the root unit), its unsharded layer gradients, reduce-scatter buffer and
# the head's gradients; ZeRO-3's live parameters, prefetch bucket and small unpartitioned parameters;
# the data-parallel engines' gradient buckets
WorkKind = Literal["gathered layer", "prefetched layers", "gathered stage", "gathered root", "layer gradients",
                   "reduce-scatter buffer", "head gradients", "live parameters", "prefetch bucket",
                   "small parameters", "gradient buckets"]


@dataclass(frozen=True)
class WorkTerm:
    """One term of the data-parallel engine's working memory on one GPU: its label, bytes and
    arithmetic, and what it holds (``kind``, which every filter reads)."""

    term: str
    bytes: int  # per GPU
    rule: str
    estimate: bool = True
    kind: WorkKind = field(kw_only=True)


def _on_gpu(dense: float, experts: float, tp: int, ep: int) -> float:
    return dense / tp + experts / (ep * tp)


# walks over every layer, asked for by every layout ``fit`` prices: once per (model, tp, ep)
@functools.lru_cache(maxsize=256)
def _largest_layer(cfg: ModelConfig, tp: int, ep: int) -> float:
    return max((_on_gpu(p.dense, p.experts, tp, ep) for p in layer_params(cfg)), default=0.0)


@functools.lru_cache(maxsize=256)
def _layers_on_gpu(cfg: ModelConfig, tp: int, ep: int) -> float:
    return sum(_on_gpu(p.dense, p.experts, tp, ep) for p in layer_params(cfg))


def _stage_params(cfg: ModelConfig, tp: int, pp: int, ep: int) -> float:
    return _layers_on_gpu(cfg, tp, ep) / pp


def _root_on_gpu(cfg: ModelConfig, tp: int, pp: int) -> tuple[float, float]:
    """(root parameters, head-side parameters: final norm and LM head) on the GPU holding the
    most of them."""
    r = root_params(cfg)
    head = r.head + (r.head_matrix if cfg.tied_embeddings else 0)
    root = r.total if pp == 1 else max(r.embedding, head)
    return root / tp, head / tp


def _fsdp(cfg: ModelConfig, s: Sharding, *, tp: int, pp: int, ep: int, w: float, g: float) -> list[WorkTerm]:
    layer = _largest_layer(cfg, tp, ep)
    root, head = _root_on_gpu(cfg, tp, pp)
    split = f" / tp {tp}" if tp > 1 else ""
    out = []
    if s.reshard_after_forward:
        out += [WorkTerm("FSDP: gathered layer", math.ceil(layer * w),
                         f"largest layer {layer:,.0f} params{split} x {w:g} B, unsharded while it runs",
                         kind="gathered layer"),
                WorkTerm("FSDP: prefetched layers", math.ceil(s.prefetch * layer * w),
                         f"prefetch {s.prefetch} x {layer:,.0f} params x {w:g} B (all-gather ahead of use)",
                         kind="prefetched layers")]
    else:
        stage = _stage_params(cfg, tp, pp, ep)
        out.append(WorkTerm("FSDP: layers kept gathered after forward", math.ceil(stage * w),
                            f"reshard_after_forward=False: all {stage:,.0f} layer params on this GPU x {w:g} B",
                            kind="gathered stage"))
    out.append(WorkTerm("FSDP: unsharded layer gradients", math.ceil(layer * w),
                        f"largest layer {layer:,.0f} params x {w:g} B, before reduce-scatter", kind="layer gradients"))
    if s.reshard_after_forward:
        out.append(WorkTerm("FSDP: reduce-scatter buffer", math.ceil(layer * g),
                            f"one layer {layer:,.0f} params x {g:g} B (reduce dtype), one in flight",
                            kind="reduce-scatter buffer"))
    out += [WorkTerm("FSDP: root unit gathered (embeddings, norm, head)", math.ceil(root * w),
                     f"{root:,.0f} params x {w:g} B, not resharded after forward (FSDP2 root)", kind="gathered root"),
            WorkTerm("FSDP: head gradients before reduce-scatter", math.ceil(head * w),
                     f"LM head and final norm {head:,.0f} params x {w:g} B, reduce-scattered at the end of backward",
                     kind="head gradients")]
    return out


def _deepspeed3(cfg: ModelConfig, s: Sharding, *, tp: int, pp: int, ep: int, w: float, g: float) -> list[WorkTerm]:
    stage = _stage_params(cfg, tp, pp, ep) + _root_on_gpu(cfg, tp, pp)[0]
    largest = max((m.fan_in * m.fan_out / tp for m in matrices(cfg)), default=0.0)
    live = max(min(DS_MAX_LIVE, stage), largest)
    prefetch = min(DS_PREFETCH_BUCKET, stage)
    persistent = vector_params(cfg) / pp  # norms and biases are all below the threshold of 1e5 elements
    overlap = True if s.overlap_comm is None else s.overlap_comm
    buckets = 2 if overlap else 1
    return [
        WorkTerm("ZeRO-3: live gathered parameters", math.ceil(live * w),
                 f"min(stage3_max_live_parameters {DS_MAX_LIVE:.0e}, {stage:,.0f} on this GPU), at least the "
                 f"largest matrix {largest:,.0f}, x {w:g} B", kind="live parameters"),
        WorkTerm("ZeRO-3: prefetch bucket", math.ceil(prefetch * w),
                 f"stage3_prefetch_bucket_size {DS_PREFETCH_BUCKET:.0e} x {w:g} B", kind="prefetch bucket"),
        WorkTerm("ZeRO-3: unpartitioned small parameters", math.ceil(persistent * w),
                 f"{persistent:,.0f} vector params (< {DS_PERSISTENCE:.0e} elements) x {w:g} B",
                 kind="small parameters"),
        WorkTerm("ZeRO-3: gradient reduce buckets", math.ceil(buckets * DS_REDUCE_BUCKET * g),
                 f"{buckets} x reduce_bucket_size {DS_REDUCE_BUCKET:.0e} x {g:g} B (overlap_comm "
                 f"{'on' if overlap else 'off'})", kind="gradient buckets"),
    ]


def working_terms(cfg: ModelConfig, zero: int, s: Sharding, *, dp: int, tp: int, pp: int, ep: int, w: float,
                  g: float, grads_on_gpu: int) -> list[WorkTerm]:
    """The working-memory terms of stage ``zero`` on one GPU (none without data parallelism,
    ``dp`` 1, except DDP's buckets, which a single process does not have either)."""
    s.check()
    if dp == 1:
        return []
    if zero == 0:
        return [WorkTerm("DDP gradient buckets", grads_on_gpu,
                         "a second copy of the gradients (gradient_as_bucket_view=False, DDP's default)",
                         estimate=False, kind="gradient buckets")]
    if zero in (1, 2):
        overlap = False if s.overlap_comm is None else s.overlap_comm
        n = 2 if overlap else 1
        return [WorkTerm(f"ZeRO-{zero}: gradient reduce bucket", math.ceil(n * DS_REDUCE_BUCKET * w),
                         f"{n} x reduce_bucket_size {DS_REDUCE_BUCKET:.0e} x {w:g} B (DeepSpeed default; "
                         f"overlap_comm {'on' if overlap else 'off'})", kind="gradient buckets")]
    if s.zero3 == "fsdp":
        return _fsdp(cfg, s, tp=tp, pp=pp, ep=ep, w=w, g=g)
    return _deepspeed3(cfg, s, tp=tp, pp=pp, ep=ep, w=w, g=g)
