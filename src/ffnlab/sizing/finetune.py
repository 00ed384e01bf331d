"""LoRA and QLoRA fine-tuning: the adapters' parameters and the states a step keeps.

LoRA (Hu et al. 2021) freezes the base model and trains, beside each adapted linear layer
``W (fan_in -> fan_out)``, two matrices ``A (fan_in -> r)`` and ``B (r -> fan_out)``:
``r * (fan_in + fan_out)`` parameters per adapted matrix. Which layers are adapted is
``targets``: ``attention`` (the q, k, v and output projections; MLA's low-rank projections),
``ffn`` (the FFN's gate, up and down), ``all-linear`` (both, as peft's ``"all-linear"``, which
leaves the LM head out), or a comma-separated list of those. The count equals peft's
``get_nb_trainable_parameters`` for the same model and targets (tests/sizing/test_finetune.py builds the
peft model and compares).

States: the frozen base has no gradients and no optimizer state; it is kept in the training
dtype (LoRA) or, for QLoRA, in 4-bit NF4 with double quantisation (Dettmers et al. 2023) or in
bitsandbytes' LLM.int8 (int8 with one fp32 scale per output row); the embedding, head and norms
stay in 16 bits as bitsandbytes leaves them, or in fp32 with ``upcast_fp32`` (peft's
``prepare_model_for_kbit_training``), which also makes the residual stream fp32: the embedding's
output is fp32 and each residual add of it and a 16-bit branch stays fp32, so the checkpointed
layer inputs and the gradients between layers are fp32 (measured on CPU under bf16 autocast,
``test_kbit_upcast_keeps_an_fp32_residual_stream``). peft keeps the adapters in fp32 (its
``autocast_adapter_dtype`` default), so each adapter parameter holds 4 B of weight, 4 B of
gradient and the optimizer's fp32 state.

The step's peak (:func:`finetune_peak`) is the training step's timeline
(:mod:`ffnlab.sizing.memory.step`) with :class:`ffnlab.sizing.memory.step.FinetuneStep`: the
activations a frozen base keeps (:class:`ffnlab.sizing.memory.activations.FrozenLayer`),
gradients, optimizer state and optimizer temporaries for the adapters only. Measured on CPU (fp32,
and bf16 bases with fp32 adapters) against peft models (``tests/sizing/memory/test_memory_finetune.py``).
QLoRA's activations are LoRA's in the compute dtype, plus one frozen weight dequantised to the
compute dtype during each layer's backward (bitsandbytes' ``MatMul4Bit`` keeps no input and
dequantises the weight again for the input's gradient); bitsandbytes does not run on CPU, so that
term is modelled, not measured. Two copies where the weight was quantised from another 16-bit dtype
than the compute dtype (``dequant_copies``: Lightning quantises from float16, so ``MatMul4Bit``
dequantises to float16 and casts); ``head_4bit``: the LM head quantised too (Lightning's
``BitsandbytesPrecision``), its dequantised weight alive at the head's matmuls
(``tests/sizing/memory/test_memory_finetune.py`` measures a LitGPT-built CPU stand-in).

Routed MoE experts are stored as 3-D parameters in transformers 5, which peft adapts through
``target_parameters`` with its own shapes; adapting them is refused until that is modelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory.activations import ffn_adapters
from ffnlab.sizing.memory.byte_rules import (
    ACTIVATION_DTYPES,
    ADAPTER_BYTES,
    ADAPTER_DTYPES,
    DTYPE_BYTES,
    FP32_BYTES,
    HALF_BYTES,
    dtype_bytes,
    master_bytes,
    shape_free_states,
)
from ffnlab.sizing.memory.parallel import Layout
from ffnlab.sizing.memory.quant import WeightBytes, weight_bytes
from ffnlab.sizing.memory.sharding import WorkTerm, working_terms
from ffnlab.sizing.memory.step import (
    Alive,
    FinetuneStep,
    StepInputs,
    StepTimeline,
    optimizer_temp_bytes,
    step_timeline,
)
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import Result
from ffnlab.sizing.shapes import Matrix, matrices
from ffnlab.validation import choice, integer, show

FINETUNE_MODES = ("full", "lora", "qlora")
MAX_RANK = 2**20
QLORA_BASES = ("nf4", "int8")  # bitsandbytes 4-bit NF4 (double quantisation) or LLM.int8
TARGET_GROUPS = ("attention", "ffn")
ALL_LINEAR = "all-linear"
# the LoRA paper's choice (Hu et al. 2021, section 7.1; peft target_modules ["q_proj", "v_proj"],
# LitGPT's lora_query and lora_value): the query and value projections only, on a fused q|k|v
# (GPT-2's c_attn, LitGPT's attn) the one adapter on it; no output projection
QV = "qv"
OTHER_GROUPS = (QV,)
# prepare_model_for_kbit_training casts the embedding, norms and head to fp32: the embedding's output
# and every residual add after it (fp32 + a 16-bit branch) are fp32, so the residual stream is fp32
UPCAST_STREAM_BYTES = dtype_bytes("fp32")
FFN_MATRICES = ("gate", "up", "down")  # the FFN's own linear layers (not an embedding projection)


def parse_targets(text: str) -> tuple[str, ...]:
    """``attention``, ``ffn``, ``all-linear``, ``qv``, or a comma-separated list of ``attention`` or
    ``qv`` (not both) and ``ffn``; an empty item (``attention,,ffn``, a trailing comma) is refused."""
    names = tuple(t.strip() for t in text.split(","))
    if names == (ALL_LINEAR,):
        return TARGET_GROUPS
    bad = [n for n in names if n not in TARGET_GROUPS + OTHER_GROUPS]
    require(not bad and not {"attention", QV} <= set(names),
            f"--lora-targets must be {ALL_LINEAR} or a comma-separated list of {', '.join(TARGET_GROUPS)} "
            f"(or {QV}: the query and value projections only, in place of attention), got {show(text)}")
    return tuple(dict.fromkeys(names))


def _group(m: Matrix) -> str | None:
    if m.part == "attention":
        return "attention"
    if m.part == "ffn" and m.proj in FFN_MATRICES and not m.shared_expert:
        return "ffn"
    if m.part == "expert":
        return "expert"
    return None


def _fuse_qkv(mats: list[Matrix]) -> list[Matrix]:
    """One q|k|v matrix where the family fuses them (GPT-2's c_attn, GPT-NeoX's query_key_value):
    one adapter on it, ``r * (d + q + 2 kv)``, not three. :func:`ffnlab.sizing.shapes.matrices`
    lists each attention's q, k, v and output in that order."""
    out: list[Matrix] = []
    for m in mats:
        if m.part == "attention" and m.proj in ("k", "v"):
            out[-1] = replace(out[-1], fan_out=out[-1].fan_out + m.fan_out)  # into the q before it
        else:
            out.append(m)
    return out


@dataclass(frozen=True)
class LoraCount(Result):
    """The adapters' parameters for one model, rank and set of targets."""

    rank: int
    targets: tuple[str, ...]
    trainable: int  # the adapters' parameters (peft's trainable params)
    base: int  # the frozen model's parameters
    adapted_matrices: int  # linear layers given an adapter, over all layers

    @property
    def total(self) -> int:
        """peft's "all params": the base and the adapters."""
        return self.base + self.trainable

    def keys(self) -> tuple[str, ...]:
        return (*super().keys(), "total")


def adapted_matrices(cfg: ModelConfig, targets: tuple[str, ...]) -> list[Matrix]:
    """The linear layers peft adapts for ``targets`` (a fused q|k|v as one)."""
    mats = matrices(cfg)
    if "ffn" in targets:
        require(not any(m.part == "expert" for m in mats),
                "LoRA on routed MoE experts is not modelled yet (peft adapts their 3-D parameters through "
                "target_parameters): use --lora-targets attention for an MoE model")
    if QV in targets:
        require(not cfg.is_mla, "--lora-targets qv: MLA has no separate query and value projections (use attention)")
        # unfused: q and v; fused: the one q|k|v matrix (its k part comes along, as peft adapts the whole layer)
        keep = ("q", "k", "v") if cfg.attn.qkv_fused else ("q", "v")
        chosen = [m for m in mats if (m.part == "attention" and m.proj in keep) or (_group(m) in targets)]
    else:
        chosen = [m for m in mats if _group(m) in targets]
    if ("attention" in targets or QV in targets) and cfg.attn.qkv_fused and not cfg.is_mla:
        chosen = _fuse_qkv(chosen)
    return chosen


def lora_params(cfg: ModelConfig, rank: int, targets: tuple[str, ...] = TARGET_GROUPS) -> LoraCount:
    """The parameters LoRA of rank ``rank`` adds to the ``targets`` of ``cfg``."""
    require(isinstance(rank, int) and rank >= 1, f"--lora-rank must be an integer >= 1, got {rank}")
    chosen = adapted_matrices(cfg, targets)
    trainable = sum(rank * (m.fan_in + m.fan_out) * m.count for m in chosen)
    return LoraCount(rank=rank, targets=targets, trainable=trainable, base=count_params(cfg).total,
                     adapted_matrices=sum(m.count for m in chosen))


@dataclass(frozen=True)
class FinetuneStates(Result):
    """Bytes of what a LoRA/QLoRA step keeps besides its activations (on one GPU: sharded by
    ZeRO / FSDP where the layout says so)."""

    mode: str
    base_weights: int
    adapter_weights: int
    adapter_gradients: int
    adapter_optimizer: int
    base_rule: str

    @property
    def total(self) -> int:
        return self.base_weights + self.adapter_weights + self.adapter_gradients + self.adapter_optimizer

    def keys(self) -> tuple[str, ...]:
        return (*super().keys(), "total")


def qlora_base(cfg: ModelConfig, base_format: str = "nf4", *, head_4bit: bool = False) -> WeightBytes:
    """QLoRA's frozen base: NF4 with double quantisation, or LLM.int8 (int8 and one fp32 scale per
    output row, ``Int8Params.SCB``). ``head_4bit``: the LM head in NF4 too (Lightning's
    ``BitsandbytesPrecision`` replaces every ``nn.Linear``, the head's included)."""
    require(base_format in QLORA_BASES,
            f"--qlora-base must be one of {', '.join(QLORA_BASES)}, got {show(base_format)}")
    require(not head_4bit or base_format == "nf4", "a 4-bit LM head is modelled with the nf4 base")
    require(not head_4bit or not cfg.tied_embeddings, "a 4-bit LM head is modelled for an untied head")
    if base_format == "nf4":
        return weight_bytes(cfg, "nf4", extra_parts=("head",) if head_4bit else ())
    return weight_bytes(cfg, "int8", group_size=0, scale_bytes=4)


def finetune_states(cfg: ModelConfig, lora: LoraCount, *, mode: str = "lora", dtype: str = "bf16",
                    optimizer: str = "adamw", base_format: str = "nf4", dp: int = 1, zero: int = 0,
                    upcast_fp32: bool = False, adapter_bytes: float = ADAPTER_BYTES,
                    head_4bit: bool = False) -> FinetuneStates:
    """The frozen base (``dtype`` for LoRA, ``base_format`` for QLoRA) and the fp32 adapters with
    their gradients and ``optimizer`` state, on one of ``dp`` data-parallel GPUs at ZeRO stage
    ``zero``: stage 1 shards the adapters' optimizer state, 2 also their gradients, 3 (FSDP,
    DeepSpeed ZeRO-3) also every parameter, the frozen base's included (each GPU keeps
    ``ceil(bytes / dp)``; FSDP's padding of a first dimension to a multiple of ``dp`` is not
    counted). ``upcast_fp32`` (QLoRA): the base's unquantised parameters (embeddings, head, norms)
    in fp32, as peft's ``prepare_model_for_kbit_training`` casts every 16-bit parameter that is not
    a ``Params4bit``. ``head_4bit`` (QLoRA): the LM head in NF4 as well (:func:`qlora_base`)."""
    require(mode in ("lora", "qlora"), f"--finetune must be lora or qlora for adapter states, got {show(mode)}")
    if mode == "qlora":
        wb = qlora_base(cfg, base_format, head_4bit=head_4bit)
        base, rule = wb.total, wb.rule
        if upcast_fp32:
            base += (FP32_BYTES - HALF_BYTES) * wb.kept_params
            rule = (rule.replace(f"{wb.kept_params:,} other params x {HALF_BYTES} B",
                                 f"{wb.kept_params:,} other params x {FP32_BYTES} B")
                    + " (prepare_model_for_kbit_training: fp32)")
    else:
        per = dtype_bytes(dtype)
        base, rule = int(lora.base * per), f"{lora.base:,} frozen params x {per:g} B"
    n = lora.trainable

    def shard(value: int, stage: int) -> int:
        return math.ceil(value / dp) if zero >= stage else value

    if zero >= 3 and dp > 1:
        rule += f", sharded over dp {dp}"
    if optimizer == "adam8bit":  # bitsandbytes' blockwise 8-bit Adam on each adapter matrix (A and B)
        opt_bytes = adapter_adam8bit_bytes(cfg, lora, pure=adapter_bytes < ADAPTER_BYTES,
                                           adapter_bytes=adapter_bytes)
    else:
        opt_bytes = math.ceil(n * shape_free_states(optimizer, adapter_bytes, pure=adapter_bytes < ADAPTER_BYTES))
    return FinetuneStates(mode=mode, base_weights=shard(base, 3),
                          adapter_weights=shard(math.ceil(n * adapter_bytes), 3),
                          adapter_gradients=shard(math.ceil(n * adapter_bytes), 2),
                          adapter_optimizer=shard(opt_bytes, 1),
                          base_rule=rule)


def adapter_adam8bit_bytes(cfg: ModelConfig, lora: LoraCount, *, pure: bool = False,
                           adapter_bytes: float = ADAPTER_BYTES) -> int:
    """bitsandbytes' 8-bit Adam state of the adapters: per adapter tensor (``A``: rank x fan_in, ``B``:
    fan_out x rank) of at least ADAM8BIT_MIN_SIZE values two uint8 states and two fp32 absmax per
    block of ADAM8BIT_BLOCK values, a smaller one two fp32 states (the rule of
    :mod:`ffnlab.sizing.memory.optimizers`), plus an fp32 master copy below 32-bit adapters."""
    from ffnlab.sizing.memory.optimizers import ADAM8BIT_BLOCK, ADAM8BIT_MIN_SIZE

    total = 0
    for m in adapted_matrices(cfg, lora.targets):
        for numel in (lora.rank * m.fan_in, m.fan_out * lora.rank):
            one = (2 * numel + 2 * FP32_BYTES * math.ceil(numel / ADAM8BIT_BLOCK) if numel >= ADAM8BIT_MIN_SIZE
                   else 2 * FP32_BYTES * numel)
            total += one * m.count
    return total + math.ceil(lora.trainable * master_bytes(adapter_bytes, pure=pure))


def finetune_step(cfg: ModelConfig, lora: LoraCount, *, mode: str = "lora", dtype: str = "bf16",
                  input_grads: bool = False, grouped_experts: bool = True, upcast_fp32: bool = False,
                  adapter_bytes: float = ADAPTER_BYTES, dropout_mask_bytes: float | None = None,
                  base_keeps_inputs: bool = False, attn_out_copied: bool = False, head_4bit: bool = False,
                  dequant_copies: int = 1) -> FinetuneStep:
    """Where the adapters sit, layer by layer, for the step timeline; QLoRA's dequantised weight
    (the largest attention and FFN matrix in the compute ``dtype``, ``dequant_copies`` copies of it:
    2 where the weight was quantised from another 16-bit dtype than the compute dtype, as
    ``MatMul4Bit`` dequantises to the quantised-from dtype and then casts); ``head_4bit``: the LM
    head's weight, dequantised the same way in its forward and backward. ``upcast_fp32`` (QLoRA,
    peft's ``prepare_model_for_kbit_training``): the residual stream in fp32
    (:data:`UPCAST_STREAM_BYTES`). ``dropout_mask_bytes``: peft's lora_dropout > 0, each adapter
    keeping its dropped-out input and a mask of that many bytes per element (None: lora_dropout 0).
    ``base_keeps_inputs`` / ``attn_out_copied``: :class:`ffnlab.sizing.memory.step.FinetuneStep`."""
    n_all = cfg.n_layers + cfg.encoder_layers
    specs = [cfg.layer_ffn(min(i, cfg.n_layers - 1)) for i in range(n_all)]
    qv = QV in lora.targets
    attn = "attention" in lora.targets or qv
    ffn = "ffn" in lora.targets
    attn_total = lora_params(cfg, lora.rank, (QV,) if qv else ("attention",)).trainable if attn else 0
    attn_per = [attn_total // n_all + (attn_total % n_all if i == 0 else 0) for i in range(n_all)]
    ffn_per = [lora.rank * (cfg.d_model + f.d_ff) * ffn_adapters(f) if ffn and not f.is_moe else 0 for f in specs]
    dequant = (0, 0)
    head_dequant = 0
    if mode == "qlora":
        b = dtype_bytes(dtype, ACTIVATION_DTYPES, "compute dtype")
        att = max((m.fan_in * m.fan_out for m in adapted_matrices(cfg, ("attention",))), default=0)  # q|k|v fused
        ff = max((m.fan_in * m.fan_out for m in matrices(cfg) if m.part in ("ffn", "expert")), default=0)
        dequant = (math.ceil(dequant_copies * att * b), math.ceil(dequant_copies * ff * b))
        if head_4bit:
            head = sum(m.fan_in * m.fan_out for m in matrices(cfg) if m.part == "head")
            head_dequant = math.ceil(dequant_copies * head * b)
    return FinetuneStep(attention=attn, ffn=ffn, rank=lora.rank, qv_only=qv, base_keeps_inputs=base_keeps_inputs,
                        attn_out_copied=attn_out_copied, head_dequant=head_dequant,
                        layer_params=tuple(a + f for a, f in zip(attn_per, ffn_per, strict=True)),
                        ffn_params=tuple(ffn_per), input_grads=input_grads, dequant=dequant,
                        adapter_bytes=adapter_bytes, grouped_experts=grouped_experts,
                        stream_bytes=UPCAST_STREAM_BYTES if upcast_fp32 else None,
                        dropout_mask_bytes=dropout_mask_bytes)


@dataclass(frozen=True)
class FinetunePeak:
    """A fine-tuning step: its states and its timeline (the peak and what is alive then)."""

    states: FinetuneStates
    timeline: StepTimeline
    input_grads: bool

    @property
    def peak_bytes(self) -> int:
        return self.timeline.peak_bytes

    @property
    def peak_moment(self) -> str:
        return self.timeline.peak.name

    @property
    def peak_alive(self) -> tuple[Alive, ...]:
        """What is alive at the peak."""
        return self.timeline.peak_alive()

    @property
    def activations_bytes(self) -> int:
        """What backward keeps at the end of forward: every layer's kept set and the head's."""
        return self.timeline.kept_activations_bytes

    def as_dict(self) -> dict[str, Any]:
        t = self.timeline.as_dict()  # its peak and moments; the step's options under "step"
        return {**{k: t[k] for k in ("peak_bytes", "peak_moment", "peak_alive")},
                **({"host_activation_bytes": t["host_activation_bytes"]} if "host_activation_bytes" in t else {}),
                "activations_bytes": self.activations_bytes, "input_grads": self.input_grads, "step": t["options"],
                "moments": t["moments"]}


def finetune_working(cfg: ModelConfig, lora: LoraCount, ft: FinetuneStep, states: FinetuneStates,
                     layout: Layout) -> list[WorkTerm]:
    """What the data-parallel engine holds beyond a LoRA step's shards on one GPU
    (:func:`ffnlab.sizing.memory.sharding.working_terms` with the frozen base's bytes per
    parameter): FSDP gathers a layer of the frozen base (and its adapters) at a time and the root
    unit (embeddings, norm, head) from forward to the end of backward, but only the adapters have
    gradients, so the unsharded gradients and the reduce-scatter buffer are one layer's adapters
    (fp32) and the head has none; DDP's bucket copy and DeepSpeed's buckets hold adapter
    gradients only."""
    if layout.dp == 1:
        return []
    base_params = max(1, lora.base)
    unsharded_base = states.base_weights * (layout.dp if layout.zero >= 3 else 1)
    w = unsharded_base / base_params  # bytes of a frozen parameter: 16-bit, or NF4 / int8 with its scales
    ab = ft.adapter_bytes
    adapter_grads = math.ceil(lora.trainable * ab)
    terms = working_terms(cfg, layout.zero, layout.sharding, dp=layout.dp, tp=layout.tp, pp=layout.pp, ep=layout.ep,
                          w=w, g=ab, grads_on_gpu=adapter_grads)
    if layout.zero < 3 or layout.sharding.zero3 != "fsdp":
        if layout.zero in (1, 2):  # a bucket never holds more than the adapters' gradients
            terms = [replace(t, bytes=min(t.bytes, adapter_grads)) for t in terms]
        return terms
    layer_adapters = math.ceil(max(ft.layer_params, default=0) * ab)
    out = []
    for t in terms:
        if t.kind in ("layer gradients", "reduce-scatter buffer"):
            t = replace(t, bytes=layer_adapters,
                        rule=f"one layer's adapters {max(ft.layer_params, default=0):,} params "
                                                      f"x {ab:g} B (the frozen base has no gradients)")
        elif t.kind == "head gradients":
            continue  # a frozen head
        elif t.kind in ("gathered layer", "prefetched layers"):
            n = layout.sharding.prefetch if t.kind == "prefetched layers" else 1
            t = replace(t, bytes=t.bytes + n * layer_adapters, rule=t.rule + " (frozen base), with its adapters")
        out.append(t)
    return out


def finetune_peak(cfg: ModelConfig, work: Workload, *, input_grads: bool | None = None,
                  grouped_experts: bool = True, layout: Layout | None = None) -> FinetunePeak:
    """The peak of one LoRA / QLoRA step (``work.finetune``) of ``work.batch`` x ``work.seq_len``
    tokens on one GPU, of ``layout.dp`` data-parallel GPUs (``layout.zero`` shards the states:
    :func:`finetune_states`; the engine's working memory: :func:`finetune_working`).

    ``input_grads`` (default: with ``work.recompute`` full) is whether the embeddings' output requires
    grad: transformers' ``gradient_checkpointing_enable`` turns it on (``enable_input_require_grads``).
    ``grouped_experts``: frozen MoE experts run as transformers 5's grouped experts (False: one
    expert at a time, as ffnlab's ``MoEFFN``)."""
    opts = work.finetune
    require(opts is not None and opts.adapters, "a fine-tuning step needs --finetune lora or qlora")
    assert opts is not None
    lora = lora_params(cfg, opts.rank, opts.targets)
    step, optimizer = work.step, work.optimizer
    lay = layout or Layout()
    require(lay.tp == 1 and lay.pp == 1 and lay.ep == 1 and not lay.sp,
            f"--finetune {opts.mode} is modelled data parallel (--dp, --zero): not with --tp, --pp, --ep or --sp")
    states = finetune_states(cfg, lora, mode=opts.mode, dtype=work.dtype, optimizer=optimizer,
                             base_format=opts.base_format, dp=lay.dp, zero=lay.zero, upcast_fp32=opts.upcast_fp32,
                             adapter_bytes=opts.adapter_bytes, head_4bit=opts.head_4bit)
    grads_in = work.recompute == "full" if input_grads is None else input_grads
    ft = finetune_step(cfg, lora, mode=opts.mode, dtype=work.dtype, input_grads=grads_in,
                       grouped_experts=grouped_experts, upcast_fp32=opts.upcast_fp32, adapter_bytes=opts.adapter_bytes,
                       dropout_mask_bytes=work.dropout_mask_bytes if opts.lora_dropout else None,
                       base_keeps_inputs=opts.base_keeps_inputs, attn_out_copied=opts.attn_out_copied,
                       head_4bit=opts.head_4bit, dequant_copies=opts.dequant_copies)
    largest = max((lora.rank * max(m.fan_in, m.fan_out) for m in adapted_matrices(cfg, lora.targets)), default=0)
    stepped = math.ceil(lora.trainable / lay.dp) if lay.zero >= 1 else lora.trainable  # the optimizer steps its shard
    inputs = StepInputs(weights=states.base_weights + states.adapter_weights, gradients=states.adapter_gradients,
                        optimizer=states.adapter_optimizer,
                        working=sum(t.bytes for t in finetune_working(cfg, lora, ft, states, lay)),
                        opt_temp=optimizer_temp_bytes(cfg, step.optimizer_impl, optimizer, stepped,
                                                      largest=largest, state_bytes=opts.adapter_bytes))
    tl = step_timeline(cfg, work, inputs, finetune=ft)
    return FinetunePeak(states, tl, grads_in)


@dataclass(frozen=True)
class FinetuneOptions(Result):
    """How a model is fine-tuned: ``full`` (every weight trains: the training step of
    :mod:`ffnlab.sizing.memory.parallel`), ``lora`` or ``qlora`` (adapters of rank ``rank`` on
    ``targets``, the base frozen; QLoRA's base in ``base_format``). ``alpha`` scales the update
    and changes no memory. ``upcast_fp32`` (QLoRA): peft's ``prepare_model_for_kbit_training``
    has cast the base's unquantised parameters to fp32 (the ``hf-trainer`` engine's fact
    ``kbit_upcast``; ``--upcast``). ``lora_dropout`` (peft's): above 0 each adapter keeps its own
    dropped-out copy of its input and the dropout's mask (``--lora-dropout``)."""

    mode: str = "full"
    rank: int = 16
    targets: tuple[str, ...] = TARGET_GROUPS
    alpha: float | None = None
    base_format: str = "nf4"
    upcast_fp32: bool = False
    # the adapters' dtype, and so their gradients' and AdamW moments': fp32 as peft keeps them, bf16
    # where the trainer runs them in the model's dtype (torchtune checks they load in its bf16 dtype)
    adapter_dtype: str = "fp32"
    lora_dropout: float = 0.0
    # QLoRA under bitsandbytes before 0.43.2: each 4-bit layer keeps its input for the graph's life
    base_keeps_inputs: bool = False
    # with base_keeps_inputs: the output projection's input is a copy of the attention kernel's output
    # (the trainer's q is head-major in memory, as LitGPT builds it), kept by its 4-bit layer too
    attn_out_copied: bool = False
    # QLoRA: the LM head quantised to 4 bits too (Lightning's BitsandbytesPrecision), dequantised for
    # each of its matmuls
    head_4bit: bool = False
    # QLoRA: copies of a weight alive while MatMul4Bit dequantises it: 2 where it was quantised from
    # another 16-bit dtype than the compute dtype (dequantised to that dtype, then cast), else 1
    dequant_copies: int = 1

    @property
    def adapters(self) -> bool:
        return self.mode != "full"

    @property
    def adapter_bytes(self) -> float:
        """Bytes of one adapter parameter (its gradient and each AdamW moment alike)."""
        return DTYPE_BYTES[self.adapter_dtype]

    def check(self) -> None:
        """Each option against its flag's rule (the messages the command line gives)."""
        choice(self.mode, "--finetune", FINETUNE_MODES)
        integer(self.rank, "--lora-rank", 1, MAX_RANK)
        require(self.alpha is None or (math.isfinite(self.alpha) and self.alpha > 0),
                f"--lora-alpha must be a number > 0, got {self.alpha}")
        choice(self.base_format, "--qlora-base", QLORA_BASES)
        choice(self.adapter_dtype, "adapter_dtype", ADAPTER_DTYPES)
        require(not self.base_keeps_inputs or self.mode == "qlora", "--bnb-keeps-inputs applies with --finetune qlora")
        require(not self.attn_out_copied or self.base_keeps_inputs,
                "attn_out_copied applies with base_keeps_inputs (bitsandbytes before 0.43.2)")
        require(not self.head_4bit or (self.mode == "qlora" and self.base_format == "nf4"),
                "a 4-bit LM head applies with --finetune qlora and the nf4 base")
        require(self.dequant_copies in (1, 2), f"dequant_copies must be 1 or 2, got {self.dequant_copies}")
        require(isinstance(self.lora_dropout, (int, float)) and math.isfinite(self.lora_dropout)
                and 0 <= self.lora_dropout < 1, f"--lora-dropout must be a number in [0, 1), got {self.lora_dropout}")

    def describe(self) -> str:
        base = f", base {self.base_format}" if self.mode == "qlora" else ""
        return f"{self.mode} rank {self.rank} on {'+'.join(self.targets)}{base}"

    def _shown(self, name: str) -> bool:
        """``upcast_fp32``, ``adapter_dtype`` and ``lora_dropout`` are keys only where they differ from the
        default."""
        if name == "upcast_fp32":
            return self.upcast_fp32
        if name == "lora_dropout":
            return self.lora_dropout != 0
        if name in ("base_keeps_inputs", "attn_out_copied", "head_4bit"):
            return bool(getattr(self, name))
        if name == "dequant_copies":
            return self.dequant_copies != 1
        if name == "adapter_dtype":
            return self.adapter_dtype != "fp32"
        return True


def not_counted(mode: str, upcast_fp32: bool = False, lora_dropout: float = 0.0) -> list[str]:
    """What the fine-tuning figures leave out (each a sentence)."""
    out = ["torch.autocast (modelled: the base in --dtype, fp32 adapters; under autocast each adapter keeps a "
           "16-bit cast of its input instead of an fp32 copy)"]
    out.append("lora_dropout's extra gradient copies in a recomputed layer's backward (modelled: each adapter's "
               "dropped-out input and mask)" if lora_dropout else
               "lora_dropout > 0 (modelled: 0, or --lora-dropout P: each adapter keeps a dropped-out copy of its "
               "input and a mask)")
    if mode == "qlora":
        out += ["prepare_model_for_kbit_training's fp32 branches (modelled: bitsandbytes returns a projection's "
                "output in its input's dtype, so behind the fp32 norms the residual stream, the adapters' input and a "
                "dense FFN's hidden tensors are fp32; the attention kernel's tensors and MoE experts' in the compute "
                "dtype)" if upcast_fp32 else
                "prepare_model_for_kbit_training's fp32 upcast of the embedding, head and norms",
                "the dequantised weight is modelled, not measured (bitsandbytes does not run on CPU)"]
    return out


@dataclass(frozen=True)
class FinetuneSummary(Result):
    """The ``finetune`` object of the JSON contract (:func:`finetune_summary`)."""

    mode: str
    lora: LoraCount
    states: FinetuneStates
    peak: FinetunePeak
    options: FinetuneOptions
    seq_len: int
    batch: int
    dtype: str
    recompute: str
    optimizer: str
    not_counted: tuple[str, ...]


def finetune_summary(cfg: ModelConfig, work: Workload, layout: Layout | None = None) -> FinetuneSummary:
    """The adapters' count, the states and the step's peak of the LoRA / QLoRA workload ``work``
    (``work.finetune``) on one GPU of ``layout`` (default one GPU; ``--dp N`` with ``--zero 0``:
    each data-parallel GPU holds the same, with ZeRO 1-3 / FSDP the states are sharded)."""
    opts = work.finetune
    require(opts is not None and opts.adapters, "finetune_summary needs --finetune lora or qlora")
    assert opts is not None
    peak = finetune_peak(cfg, work, layout=layout)
    return FinetuneSummary(mode=opts.mode, lora=lora_params(cfg, opts.rank, opts.targets), states=peak.states,
                           peak=peak, options=opts, seq_len=work.seq_len, batch=work.batch, dtype=work.dtype,
                           recompute=work.recompute, optimizer=work.optimizer,
                           not_counted=tuple(not_counted(opts.mode, opts.upcast_fp32, opts.lora_dropout)))


__all__ = ["ADAPTER_BYTES", "ALL_LINEAR", "FINETUNE_MODES", "FinetuneOptions", "FinetunePeak", "FinetuneStates",
           "FinetuneSummary", "LoraCount",
           "QLORA_BASES", "TARGET_GROUPS", "adapted_matrices", "finetune_peak", "finetune_states", "finetune_step",
           "finetune_summary", "finetune_working", "lora_params", "not_counted", "parse_targets", "qlora_base"]
