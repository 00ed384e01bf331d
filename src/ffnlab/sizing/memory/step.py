"""The peak of one training step: live memory as a timeline of moments, not a sum of terms.

"Will the step fit" asks for the most memory alive at any moment of forward, loss, backward and
the optimizer step. The terms of :func:`ffnlab.sizing.memory.parallel.training_table` do not all
peak together (activations are freed layer by layer while gradients are made, and the loss has
tensors of its own that no term holds), so :func:`step_timeline` walks the step as moments, each
listing what is alive then per GPU, and the peak is the largest. How the step is run (loss
implementation, held logits, accumulation, recompute interval, compiled loss, activation
offload) is :class:`StepOptions`; the backward working tensors and optimizer temporaries were
read from live measurements of ffnlab's modules and PyTorch's optimizers on CPU, which the tests
repeat on whole steps of ffnlab's and transformers' models.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from ffnlab.errors import require
from ffnlab.sizing.config import FFNSpec, ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory.activations import (
    DOWN_INPUT_KEPT_BY_ACTIVATION,
    STAT_BYTES,
    FrozenLayer,
    divide_terms,
    each_layer_terms,
    graph_kept_inputs,
    head_activation_terms,
    op_selective_terms,
    selective_kept,
)
from ffnlab.sizing.memory.byte_rules import ACTIVATION_DTYPES, dtype_bytes
from ffnlab.sizing.result import Result, plain
from ffnlab.sizing.shapes import layer_params, root_params
from ffnlab.validation import choice, integer

if TYPE_CHECKING:  # the workload is built on StepOptions
    from ffnlab.sizing.memory.workload import Workload

LOSSES = ("full", "chunked", "fused")
OPTIMIZER_IMPLS = ("foreach", "fused", "for-loop")
MAX_STEP_COUNT = 2**40  # loss chunks, micro-batches, a checkpoint interval: past any run
# with the activations offloaded, what stays on the GPU (by role): the head's input (torchtune keeps the
# output layer out of OffloadActivations) and the loss's targets (the loss runs outside it)
ON_GPU_WHEN_OFFLOADED = ("head input", "targets")
# a compiled cross-entropy keeps two fp32 statistics per token (the row maximum and the log of the
# sum of exponentials: torch.compile's partition of log_softmax, measured in tests/sizing/memory/test_memory_offload.py)
COMPILED_LOSS_STATS = 2
# tensors a final RMSNorm computed op by op saves (torchtune's: pow's input, rsqrt's output and the
# product's two inputs; the fp32 input twice, one storage)
NORM_SAVED_TENSORS = 4
# tensors of width d_ff alive at once in a dense FFN's backward beyond the ones it kept: the
# gradient of the down projection's input and of the activation's input (plain), and for gated
# FFNs also the gradients of gate and up before they are joined (measured on ffnlab's modules)
FFN_BACKWARD_TEMPS: dict[str, int] = {
    "relu": 2, "gelu": 1, "gelu_tanh": 1, "silu": 1, "relu2": 1,
    "swiglu": 2, "geglu": 2, "reglu": 2, "glu": 2, "bilinear": 2,
}
# attention backward: the q, k, v gradients and their joined copy (units of dq + 2 dkv)
ATTENTION_BACKWARD_TEMPS = 1
EAGER_BACKWARD_TEMPS = 2  # eager attention: the probabilities' and the scores' gradients (heads x s each)
# d-wide tensors a norm's backward holds beside the gradient of its output: RMSNorm computed op by
# op (x * rsqrt(mean(x^2) + eps), transformers' and torch's CPU path) 4, LayerNorm's one kernel its
# input gradient (measured with LoRA steps, tests/sizing/memory/test_memory_finetune.py)
NORM_BACKWARD_TEMPS: dict[str, int] = {"rmsnorm": 4, "layernorm": 1, "layernorm-nobias": 1, "none": 1}
# LoRA: an adapted linear layer's input gradient through the frozen weight, through the adapter, and their sum
LORA_INPUT_GRADIENTS = 3


@dataclass(frozen=True)
class StepOptions:
    """How the step is run, beyond the term table's options. Loss implementations (``loss``):

    * ``full``: cross-entropy over the full logits, as transformers' ``ForCausalLMLoss``, torchtitan
      and nanoGPT compute it: the logits (activation dtype; held by the caller's output when
      ``logits_held``), their fp32 upcast (below 32-bit, transient in forward), the fp32 log-softmax
      (kept for backward), and in backward the gradient of the log-softmax output and of its input
      (fp32 each): ``b + 12`` bytes per token and vocabulary entry at the loss backward moment;
    * ``chunked``: torchtune's ``CEWithChunkedOutputLoss`` pattern, ``loss_chunks`` chunks of tokens:
      the logits are all held and every chunk's log-softmax is kept, but the upcast and the backward
      gradients exist one chunk at a time;
    * ``fused``: a fused linear cross-entropy (Liger-Kernel's ``LigerFusedLinearCrossEntropyLoss``;
      ``ffnlab.training.losses.fused_linear_cross_entropy`` is the same algorithm in PyTorch): no logits
      are kept; forward computes the loss and both gradients chunk by chunk, with chunks of
      ``ceil(N / ceil(V / d))`` tokens (Liger's rule: a chunk's logits are about as large as the
      hidden states), and keeps the input's gradient (``d`` per token) and the head weight's gradient
      from forward on.

    With tensor parallelism the vocabulary is split (Megatron's vocabulary-parallel cross-entropy)."""

    loss: str = "full"
    loss_chunks: int = 8  # loss "chunked"
    logits_held: bool = True  # the caller keeps the model's output (its logits) until the step ends
    optimizer_impl: str = "foreach"
    grad_accum: int = 1  # micro-batches per optimizer step
    recompute_every: int = 1  # with recompute "full": checkpoint every N-th layer
    # the loss compiled (torch.compile; torchtune's compile_loss): it keeps its input logits and two
    # fp32 statistics per token, not the fp32 log-softmax, and never materialises the fp32 upcast
    loss_compiled: bool = False
    # the layers' saved tensors moved to host memory in forward and brought back in backward
    # (torchtune's OffloadActivations, Unsloth's offloaded checkpointing; data/offload.json)
    offload_activations: bool = False
    offload_stash: int = 0  # offloaded tensors still on the GPU at forward end, waiting for their copy
    # a trainer's fused kernels in place of the eager modules (data/fused_kernels.json: "unsloth"),
    # priced from what each of its autograd Functions keeps (ffnlab.sizing.memory.fused_kernels)
    fused_kernels: str | None = None

    def check(self) -> None:
        """Each option against its flag's rule (the messages the command line gives)."""
        choice(self.loss, "--loss", LOSSES)
        choice(self.optimizer_impl, "--optimizer-impl", OPTIMIZER_IMPLS)
        for name in ("loss_chunks", "grad_accum", "recompute_every"):
            integer(getattr(self, name), "--" + name.replace("_", "-"), 1, MAX_STEP_COUNT)
        integer(self.offload_stash, "offload_stash", 0, MAX_STEP_COUNT)
        require(not (self.loss_compiled and self.loss == "fused"),
                "--compile-loss prices a compiled full or chunked loss; the fused loss keeps no logits to compile")
        require(self.offload_activations or not self.offload_stash, "offload_stash needs --offload-acts")
        if self.fused_kernels is not None:
            from ffnlab.sizing.memory.fused_kernels import engines

            choice(self.fused_kernels, "fused_kernels", engines())

    def as_dict(self) -> dict[str, object]:
        """Every option; the compiled loss and activation offload only when set."""
        out = asdict(self)
        for key in ("loss_compiled", "offload_activations", "offload_stash", "fused_kernels"):
            if not out[key]:
                del out[key]
        return out


@dataclass(frozen=True)
class Alive(Result):
    """One thing alive at the step's peak, and its bytes per GPU."""

    what: str
    bytes: int


@dataclass(frozen=True)
class Moment:
    """One moment of the step and what is alive then (per GPU, bytes by component)."""

    name: str
    alive: tuple[tuple[str, int], ...]

    @cached_property  # asked for by every look for the peak: once per moment, not once per look
    def total(self) -> int:
        return sum(b for _, b in self.alive)



@dataclass(frozen=True)
class StepTimeline:
    moments: tuple[Moment, ...]
    options: StepOptions = field(default_factory=StepOptions)
    # what backward keeps at the end of forward: every layer's kept set and the head's
    kept_activations_bytes: int = 0
    host_bytes: int = 0  # activations offloaded to host memory at forward end (StepOptions.offload_activations)

    @cached_property  # a pass over every moment (two per layer): once per timeline
    def peak(self) -> Moment:
        return max(self.moments, key=lambda m: m.total)  # max keeps the first of equals

    @property
    def peak_bytes(self) -> int:
        return self.peak.total

    def peak_alive(self) -> tuple[Alive, ...]:
        """What is alive at the peak."""
        return tuple(Alive(w, b) for w, b in self.peak.alive)

    def as_dict(self) -> dict[str, object]:
        return {"peak_bytes": self.peak_bytes, "peak_moment": self.peak.name, "peak_alive": plain(self.peak_alive()),
                "options": self.options.as_dict(),
                **({"host_activation_bytes": self.host_bytes} if self.host_bytes else {}),
                "moments": [{"moment": m.name, "bytes": m.total} for m in self.moments]}


@dataclass(frozen=True)
class StepInputs:
    """The per-GPU bytes the timeline is built from (from the term table and the activation model)."""

    weights: int
    gradients: int
    optimizer: int
    working: int
    opt_temp: int


def optimizer_temp_bytes(cfg: ModelConfig, impl: str, optimizer: str, params_on_gpu: float, *, tp: int = 1,
                         largest: int | None = None, state_bytes: float = STAT_BYTES) -> int:
    """Temporaries of the optimizer step on one GPU, in the state's dtype (``state_bytes``: fp32,
    or bf16 in pure bf16 training): foreach AdamW takes the square root of every second moment at
    once (one per parameter); the for-loop implementation a tensor's root and its quotient while
    the previous tensor's is still bound (three of the largest tensor: ``largest`` elements, by
    default the model's largest matrix); fused kernels, 8-bit Adam and SGD none."""
    if optimizer in ("sgd", "adam8bit",
                     "paged-adam8bit") or impl == "fused":  # no state to take a root of; blockwise kernels
        return 0
    if impl == "foreach" and optimizer in ("adamw", "sgd-momentum"):
        # foreach AdamW: sqrt of every second moment at once; SGD momentum updates in place
        return math.ceil(params_on_gpu * state_bytes) if optimizer == "adamw" else 0
    if largest is None:
        from ffnlab.sizing.shapes import matrices

        largest = max((m.fan_in * m.fan_out for m in matrices(cfg)), default=0)
    return math.ceil(3 * largest / tp * state_bytes)


@dataclass(frozen=True)
class FinetuneStep:
    """A LoRA / QLoRA step (:mod:`ffnlab.sizing.finetune`): the base frozen, adapters of rank
    ``rank`` on every layer's attention and/or FFN, ``layer_params`` / ``ffn_params`` adapter
    parameters per layer (all of it / its FFN's), whose gradients are ``adapter_bytes`` each.

    ``input_grads``: the embeddings' output is made to require grad (transformers'
    ``gradient_checkpointing_enable`` does it, and peft's ``prepare_model_for_kbit_training``
    with reentrant checkpointing), so layer 0 keeps what the layers above keep and backward runs
    down to the embeddings, whose output gets a gradient. ``dequant``: bytes of the largest
    attention and FFN weight dequantised for a backward matmul (QLoRA's bitsandbytes layers
    dequantise a frozen weight to the compute dtype in forward and again in backward; 0 for LoRA).
    ``grouped_experts``: frozen routed experts run as transformers 5 runs them (one grouped matmul
    for every routed copy, combined by a sum); False: one expert after another, combined by
    ``index_add_`` (ffnlab's ``MoEFFN``, transformers' eager experts). ``stream_bytes``: bytes per
    element of the residual stream when it is not the activation dtype (4 under peft's
    ``prepare_model_for_kbit_training``: the fp32 embedding's output is fp32 and each residual add
    of it and a 16-bit branch stays fp32), so each checkpointed layer's input, the gradients
    flowing between layers and the embeddings' output gradient are fp32; None: the activation
    dtype."""

    attention: bool
    ffn: bool
    rank: int
    layer_params: tuple[int, ...]
    ffn_params: tuple[int, ...]
    input_grads: bool = False
    dequant: tuple[int, int] = (0, 0)
    adapter_bytes: float = 4
    grouped_experts: bool = True
    stream_bytes: float | None = None
    dropout_mask_bytes: float | None = None  # peft's lora_dropout > 0: each adapter's mask (None: no dropout)
    qv_only: bool = False  # the attention's adapters on the query and value projections only (--lora-targets qv)
    # bitsandbytes before 0.43.2: each frozen 4-bit layer keeps its input as a ctx attribute for the
    # graph's life (:func:`ffnlab.sizing.memory.activations.graph_kept_inputs`)
    base_keeps_inputs: bool = False
    # with base_keeps_inputs: the output projection's input is a copy of the attention kernel's output
    # (the trainer's q is head-major in memory), kept by its 4-bit layer too
    attn_out_copied: bool = False
    # a 4-bit LM head (Lightning's BitsandbytesPrecision replaces every nn.Linear, the head's too):
    # bytes alive while its weight is dequantised for a matmul (every copy MatMul4Bit makes: float16
    # from a weight quantised from float16, then the compute dtype); 0: a 16-bit head
    head_dequant: int = 0

    def frozen(self, layer: int) -> FrozenLayer:
        """What layer ``layer`` keeps: every layer above the first carries adapters below it."""
        return FrozenLayer(attention=self.attention, ffn=self.ffn, rank=self.rank,
                           grad_below=self.input_grads or layer > 0, adapter_bytes=self.adapter_bytes,
                           grouped_experts=self.grouped_experts, branch_bytes=self.stream_bytes,
                           dropout_mask_bytes=self.dropout_mask_bytes, qv_only=self.qv_only)


def step_timeline(cfg: ModelConfig, work: Workload, states: StepInputs, *, tp: int = 1, sp: bool = False,
                  finetune: FinetuneStep | None = None) -> StepTimeline:
    """The moments of one training step of ``work.batch`` x ``work.seq_len`` tokens per
    micro-batch, run as ``work.step`` says (``finetune``: a LoRA step, whose ``states`` are the
    frozen base's and the adapters'). The moments:

    * **forward end**: weights, optimizer state, the engine's working memory, every layer's kept
      activations, the head's, and the loss's forward tensors (below); with gradient accumulation, from
      the second micro-batch on, all gradients too;
    * **loss backward**: as at forward end, with the loss's backward tensors;
    * **LM head backward**: the head's weight gradient and the gradient of its input;
    * **final norm backward**: the head's input freed, the norm's backward working tensors
      (:data:`NORM_BACKWARD_TEMPS`) beside the gradient of its output;
    * **backward, layer i** (top to bottom): the gradients made so far (head, layers above), the kept
      activations of the layers below, layer i's full set (recomputed first under full recompute),
      the gradient flowing in (``d`` per token) and the layer's backward working tensors
      (:data:`FFN_BACKWARD_TEMPS`, :data:`ATTENTION_BACKWARD_TEMPS`);
    * **embedding backward**: every gradient, and for a tied head the embedding's own gradient beside it
      before autograd adds the two;
    * **optimizer step**: weights, gradients, optimizer state and the step's temporaries
      (:func:`optimizer_temp_bytes`).

    The peak is the largest moment; ties go to the earlier one. A LoRA / QLoRA step
    (``finetune``, a :class:`FinetuneStep`) is the same timeline with the frozen base's kept set
    (:class:`ffnlab.sizing.memory.activations.FrozenLayer`), gradients and optimizer temporaries of the
    adapters only, no backward below the first adapter, and QLoRA's dequantised weight in each
    layer's backward (``tests/sizing/memory/test_memory_finetune.py`` measures peft steps).

    Recompute: ``none``, ``selective`` (drop the ``s x s`` terms, Korthikanti et al. 2022), ``full``
    (keep each checkpointed layer's input and recompute it in backward: ``torch.utils.checkpoint``,
    transformers' ``gradient_checkpointing_enable``); ``recompute_every`` N checkpoints every N-th
    layer only (torchtitan's ``selective_ac_option: N``), the others keep their full set;
    ``op-selective`` (torchtitan's op-level policy) keeps each block's input and its saved op outputs
    (:func:`ffnlab.sizing.memory.activations.op_selective_terms`), and in backward the block's full set
    is alive again, the saved outputs among it.

    Activation offload (``offload_activations``: torchtune's ``OffloadActivations``, Unsloth's offloaded
    checkpointing; ``data/offload.json``): every layer's kept set and the final norm's go to host memory
    in forward (the timeline's ``host_bytes``) and come back one layer at a time in backward, so no
    moment holds the kept activations of other layers; the LM head's input and the loss's tensors stay.
    ``offload_stash`` tensors still wait on the GPU for their copy at forward end (torchtune's forward
    stash of 5: the final norm's saved tensors and the last layer's input). A compiled loss
    (``loss_compiled``, torch.compile's partition of the cross-entropy) keeps its input logits and two
    fp32 statistics per token instead of the fp32 log-softmax, materialises no fp32 upcast and makes
    the logits' gradient one chunk at a time in their own dtype."""
    o = work.step
    ft = finetune
    # the trainer's own autograd Functions: what each keeps, from its source. They price the adapters'
    # step only: the full-training figure size and audit show beside a LoRA step is priced eager
    full_view = ft is None and work.finetune is not None and work.finetune.adapters
    if o.fused_kernels is not None and not full_view:
        from ffnlab.sizing.memory.fused_kernels import fused_step_timeline

        require(ft is not None and tp == 1 and not sp,
                f"--fused-kernels {o.fused_kernels} is priced for a LoRA or QLoRA step (--finetune lora or qlora) "
                "on one GPU, or give --fused-kernels none")
        assert ft is not None
        return fused_step_timeline(cfg, work, states, ft)
    seq_len, batch, dtype, recompute, attention = work.seq_len, work.batch, work.dtype, work.recompute, work.attention
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    d, n_tok = cfg.d_model, seq_len * batch
    n_layers = cfg.n_layers + cfg.encoder_layers
    layer_terms = each_layer_terms(cfg, ft.frozen if ft else None, seq_len=seq_len, batch=batch, dtype=dtype,
                                   attention=attention, capacity_factor=work.capacity_factor, dropout=work.dropout,
                                   dropout_mask_bytes=work.dropout_mask_bytes)  # identical layers share one list
    per_list: dict[int, tuple[int, int]] = {}  # id(terms) -> (kept bytes, FFN part): once per distinct layer
    for ts in layer_terms:
        if id(ts) not in per_list:
            per_list[id(ts)] = (divide_terms(selective_kept(ts) if recompute == "selective" else ts, tp, sp),
                                divide_terms([t for t in ts if t.part == "ffn"], tp, sp))
    full = [per_list[id(ts)][0] for ts in layer_terms]
    ffn_kept = [per_list[id(ts)][1] for ts in layer_terms]
    sb = ft.stream_bytes if ft and ft.stream_bytes else b  # the residual stream's dtype
    layer_input = math.ceil(n_tok * d * sb / (tp if sp else 1))
    checkpointed = [recompute == "full" and i % o.recompute_every == 0 for i in range(n_layers)]
    kept = [layer_input if c else f for c, f in zip(checkpointed, full, strict=True)]
    if recompute == "op-selective":  # every block checkpointed; the policy's saved op outputs kept
        require(ft is None, "--recompute op-selective prices full training (torchtitan's policy), not adapters")
        saved = {id(cfg.layer_ffn(j)): divide_terms(op_selective_terms(cfg, j, seq_len=seq_len, batch=batch,
                                                                       dtype=dtype,
                                                                       attention=attention), tp, sp)
                 for j in range(cfg.n_layers)}
        kept = [saved[id(cfg.layer_ffn(min(i, cfg.n_layers - 1)))] for i in range(n_layers)]
        checkpointed = [True] * n_layers
    head_terms = head_activation_terms(cfg, seq_len=seq_len, batch=batch, dtype=dtype, dropout=work.dropout,
                                       dropout_mask_bytes=work.dropout_mask_bytes,
                                       frozen=ft.frozen(0) if ft else None)
    head_other = divide_terms([t for t in head_terms if t.role != "log-softmax"], tp, sp)
    stash = host = 0
    if o.offload_activations:  # on the host: every layer's kept set and the final norm's; the head's input stays
        stays = [t for t in head_terms if t.role in ON_GPU_WHEN_OFFLOADED]
        host = sum(kept) + divide_terms([t for t in head_terms if t.role != "log-softmax" and t not in stays], tp, sp)
        head_other = divide_terms(stays, tp, sp)
        # the last offload_stash saved tensors wait on the GPU for their copy: the final norm's (computed op
        # by op it saves NORM_SAVED_TENSORS) and, for the rest of the stash, the last layers' inputs
        norm_saved = NORM_SAVED_TENSORS if cfg.final_norm and o.offload_stash else 0
        stash = (divide_terms([t for t in head_terms if t.role == "final norm"], tp, sp) if norm_saved else 0) \
            + min(max(0, o.offload_stash - norm_saved), n_layers) * layer_input

    # gradients by where backward makes them, proportional to the parameters on this GPU
    p_total = count_params(cfg).total or 1
    per_param_g = states.gradients / p_total
    if ft:  # only the adapters have gradients: none in the head, the embedding or a frozen weight
        per_param_g = 0.0
        g_layer = [math.ceil(p * ft.adapter_bytes) for p in ft.layer_params]
        g_ffn_part = [math.ceil(p * ft.adapter_bytes) for p in ft.ffn_params]
        g_head = head_matrix_g = 0
    else:
        layers_p = [lp.total for lp in layer_params(cfg)]
        root = root_params(cfg)
        head_p = root.head + (root.head_matrix if cfg.tied_embeddings else 0)
        g_layer = [math.ceil(p * per_param_g) for p in layers_p]
        g_head = math.ceil(head_p * per_param_g)
        head_matrix_g = math.ceil(root.head_matrix * per_param_g)

    nv = math.ceil(n_tok * cfg.vocab_size / tp)  # logits on this GPU (vocabulary parallel)
    logits_bytes = math.ceil(nv * b)
    held = logits_bytes if o.logits_held and o.loss != "fused" else 0
    grad_in = math.ceil(n_tok * d * sb / (tp if sp else 1))  # gradient of a layer's output or input

    base = [("weights", states.weights), ("optimizer state", states.optimizer)]
    if states.working:
        base.append(("engine working memory", states.working))
    acc_g = states.gradients if o.grad_accum > 1 else 0  # from the second micro-batch on

    def moment(name: str, *parts: tuple[str, int]) -> Moment:
        return Moment(name, tuple((w, v) for w, v in (*base, *parts) if v))

    grads_early = ("gradients (accumulated)", acc_g)
    acts = (("kept activations, all layers", sum(kept)) if not o.offload_activations else
            ("activations waiting for their copy to the host", stash))
    head_acts = ("head activations", head_other)
    moments: list[Moment] = []
    # bitsandbytes before 0.43.2: the 4-bit layers' inputs live with the graph, through backward and
    # the optimizer step; a caller that holds its logits (LitGPT's loop, nanoGPT's) holds the previous
    # step's graph, and its inputs, until the next forward returns
    graph_kept = sum(graph_kept_inputs(cfg, min(i, cfg.n_layers - 1), ft.frozen(i), n_tok, b,
                                       out_copied=ft.attn_out_copied)
                     for i in range(n_layers)) if ft and ft.base_keeps_inputs else 0
    if graph_kept and ft and ft.head_dequant:  # a 4-bit head keeps its input (the final norm's output) too
        graph_kept += math.ceil(n_tok * (cfg.embed_proj_dim or d) * b)
    # the previous step's graph, held by its logits until the next forward returns: its 4-bit inputs
    # and those logits
    previous = ((("the previous step's 4-bit inputs (its graph held by its logits)", graph_kept),
                 ("the previous step's logits", logits_bytes)) if graph_kept and o.logits_held else ())
    if graph_kept:
        base.append(("4-bit layers' inputs kept with the graph (bitsandbytes < 0.43.2)", graph_kept))
    head_dequant = ft.head_dequant if ft else 0
    if head_dequant:  # the 4-bit head's last matmul of the forward: its dequantised weight beside the
        # logits made so far (a chunked loss runs the head one chunk at a time: the chunks before the last)
        k = o.loss_chunks if o.loss == "chunked" else 1
        made = 0 if o.loss == "fused" else logits_bytes * (k - 1) // k
        moments.append(moment("LM head forward, its 4-bit weight dequantised" +
                              (" (the previous step's graph still held)" if previous else ""),
                              grads_early, acts, head_acts, ("logits, the chunks before the last", made),
                              ("QLoRA: the 4-bit LM head dequantised", head_dequant), *previous))
    if graph_kept and o.logits_held:
        moments.append(moment("forward end, before the loss (the previous step's graph still held)",
                              grads_early, acts, head_acts, ("logits", logits_bytes), *previous))
    if o.loss == "fused":
        chunk = math.ceil(n_tok / max(1, math.ceil(cfg.vocab_size / d)))
        chunk_bytes = math.ceil(math.ceil(chunk * cfg.vocab_size / tp) * (STAT_BYTES + (b if b < STAT_BYTES else 0)))
        fused_keep = grad_in
        head_g_fwd = g_head if not acc_g else 0
        moments.append(moment("forward end (fused loss, one chunk)", grads_early, acts, head_acts,
                              ("head gradients (made in forward)", head_g_fwd),
                              ("loss: input gradient kept", fused_keep), ("loss: one chunk's logits", chunk_bytes)))
        after_head = fused_keep
    else:
        k = o.loss_chunks if o.loss == "chunked" else 1
        upcast = math.ceil(nv * STAT_BYTES / k) if b < STAT_BYTES and not o.loss_compiled else 0
        logits_fwd = held if held else logits_bytes
        # compiled: its input logits and two fp32 statistics per token kept; gradients made in the logits' dtype
        if o.loss_compiled:
            kept_by_loss = ("loss: two fp32 statistics per token (kept)", n_tok * COMPILED_LOSS_STATS * STAT_BYTES)
            loss_grads = ("loss: one chunk's logits gradient", math.ceil(nv * b / k))
            logits_bwd = ("logits (kept by the compiled loss)", logits_bytes)
        else:
            kept_by_loss = ("loss: log-softmax (kept)", nv * STAT_BYTES)
            loss_grads = ("loss: log-softmax gradients", math.ceil(2 * nv * STAT_BYTES / k))
            logits_bwd = ("logits (held)", held)
        moments.append(moment("forward end (loss)", grads_early, acts, head_acts, ("logits", logits_fwd),
                              ("loss: fp32 upcast", upcast), kept_by_loss))
        moments.append(moment("loss backward", grads_early, acts, head_acts, logits_bwd, kept_by_loss, loss_grads))
        g_logits = logits_bytes
        moments.append(moment("LM head backward", grads_early, acts, head_acts, ("logits (held)", held),
                              ("logits gradient", g_logits), ("head gradients", g_head if not acc_g else 0),
                              ("gradient of the head input", grad_in),
                              ("QLoRA: the 4-bit LM head dequantised", head_dequant)))
        after_head = 0
    if cfg.final_norm:  # its backward's working tensors beside the gradient of its output; the head's input is freed
        after_lm_head = divide_terms([t for t in head_terms if t.role not in ("log-softmax", "head input")], tp, sp)
        moments.append(moment("final norm backward", grads_early, acts, ("head activations", after_lm_head),
                              ("logits (held)", held),
                              ("head gradients", g_head if not acc_g else 0),
                              ("gradient of the head input", grad_in if o.loss != "fused" else 0),
                              ("final norm backward temporaries",
                               math.ceil(n_tok * d * b * NORM_BACKWARD_TEMPS[cfg.norm] / (tp if sp else 1))),
                              ("loss: input gradient kept", after_head)))
    done = g_head
    grads_name = "gradients" if not acc_g else "gradients (accumulated)"
    kept_below = [0, *itertools.accumulate(kept)]  # kept_below[i] = sum(kept[:i]), once, not per layer
    attn_temps = _attention_backward_temps(cfg, attention, n_tok, seq_len, b, tp)
    for i in reversed(range(n_layers)):
        spec = cfg.layer_ffn(min(i, cfg.n_layers - 1))
        attn_part = full[i] - ffn_kept[i]
        g_ffn = g_ffn_part[i] if ft else math.ceil(_down_params(cfg, spec) * per_param_g)
        what = " (recomputed)" if checkpointed[i] else ""
        where = f"backward, layer {i + 1} of {n_layers}"
        below = ("kept activations, layers below", kept_below[i] if not o.offload_activations else 0)
        dequant = ft.dequant if ft else (0, 0)
        moments.append(moment(f"{where}, FFN{what}", (grads_name, acc_g or done + g_ffn), below,
                              ("this layer's activations" + what, full[i]), ("logits (held)", held),
                              ("gradient flowing in", grad_in),
                              ("FFN backward temporaries",
                               _ffn_backward_temps(cfg, spec, n_tok, b, per_param_g, tp, ft.frozen(i) if ft else None)),
                              ("QLoRA: a frozen weight dequantised", dequant[1]),
                              ("loss: input gradient kept", after_head)))
        if ft is None or ft.frozen(i).grad_below or ft.attention:  # else backward stops at this FFN
            moments.append(moment(f"{where}, attention{what}", (grads_name, acc_g or done + g_layer[i]), below,
                                  ("this layer's attention activations" + what, attn_part), ("logits (held)", held),
                                  ("gradients flowing in (residual and branch)", 2 * grad_in),
                                  ("attention backward temporaries", attn_temps),
                                  ("QLoRA: a frozen weight dequantised", dequant[0]),
                                  ("loss: input gradient kept", after_head)))
        done += g_layer[i]
    # a tied head: the embedding's own gradient beside the head's until autograd adds them; the
    # fused loss still holds the head's (saved in its context), so the sum is a third copy
    tied_extra = head_matrix_g * (2 if o.loss == "fused" else 1) if cfg.tied_embeddings else 0
    if ft is None or ft.input_grads:  # a frozen embedding: backward reaches it only when its output requires grad
        moments.append(moment("embedding backward", ("gradients", states.gradients), ("logits (held)", held),
                              ("gradient of the embeddings' output", grad_in),
                              ("tied embedding: its gradient before autograd adds the head's", tied_extra)))
    moments.append(moment("optimizer step", ("gradients", states.gradients), ("logits (held)", held),
                          ("optimizer temporaries", states.opt_temp)))
    return StepTimeline(tuple(moments), o, kept_activations_bytes=acts[1] + head_acts[1], host_bytes=host)


def _attention_backward_temps(cfg: ModelConfig, attention: str, n_tok: int, seq_len: int, b: float, tp: int) -> int:
    """The q, k, v gradients and their joined copy; eager attention the gradients of the ``s x s``
    probabilities and of the scores (:data:`EAGER_BACKWARD_TEMPS`) beside v's, if more."""
    per_token = ATTENTION_BACKWARD_TEMPS * (cfg.d_attn + 2 * cfg.d_kv)
    if attention == "eager":  # at the softmax's backward only v's gradient exists yet
        per_token = max(per_token, EAGER_BACKWARD_TEMPS * cfg.attn.n_heads * seq_len + cfg.d_attn)
    return math.ceil(n_tok * per_token * b / tp)


def _down_params(cfg: ModelConfig, spec: FFNSpec) -> int:
    """Parameters of the down projection(s), whose gradients exist at the FFN backward's largest moment."""
    one = spec.d_ff * cfg.d_model + (cfg.d_model if spec.bias else 0)
    return one * max(1, spec.n_experts)


def _ffn_backward_temps(cfg: ModelConfig, spec: FFNSpec, n_tok: int, b: float, g: float, tp: int,
                        frozen: FrozenLayer | None = None) -> int:
    """The working tensors an FFN's backward holds beyond its kept activations, at its largest.

    Dense: :data:`FFN_BACKWARD_TEMPS` x d_ff per token. Dropless MoE (experts run one after another
    on their tokens): the gradients of the weighted and of the raw expert outputs (``2 k d`` per
    token) at first; then the raw outputs' gradient (``k d``), one expert's share of the dense
    temporaries (``k / E`` of the tokens) and autograd's second full-size gradient of the stacked
    expert weights while it adds one expert's slice.

    LoRA (``frozen``): training's figure is net of the down projection's input, which its weight's
    backward frees as the activation's gradients are made; a frozen down projection kept no input,
    so one d_ff-wide tensor more is alive (not for ReLU, whose output stays kept by ReLU). An adapted
    down projection kept its input for the adapter, and its input gradient arrives twice (through
    the frozen weight and through the adapter) before autograd adds them out of place: three
    d_ff-wide tensors, less that freed input, at least. Frozen routed experts have no weight
    gradient; with transformers 5's grouped experts (``frozen.grouped_experts``) the dense
    temporaries span every routed copy at once, and the raw outputs' gradient and the expert
    outputs the routing weights' gradient kept are freed by then."""
    units = FFN_BACKWARD_TEMPS[spec.kind]
    if frozen is not None:
        own_input = 0 if spec.kind in DOWN_INPUT_KEPT_BY_ACTIVATION else 1
        units += own_input  # nothing kept for the frozen down weight, so nothing freed
        if frozen.ffn and not spec.is_moe:
            units = max(units, LORA_INPUT_GRADIENTS) - own_input
    dense = units * spec.d_ff
    if not spec.is_moe:  # behind an fp32 norm (upcast QLoRA) the dense FFN's gradients are fp32
        return math.ceil(n_tok * dense * (frozen.branch(b) if frozen else b) / tp)
    k, e = spec.top_k, spec.n_experts
    routed = n_tok * k * cfg.d_model * b
    if frozen is not None:
        grouped = frozen.grouped_experts
        share = n_tok * k if grouped else math.ceil(n_tok * k / e)
        outputs = routed * (1 if grouped else 2)  # the loop's index_add_ keeps the weighted copy too
        # grouped: the raw outputs' gradient is consumed by the one down matmul; the loop keeps it to the last expert
        return math.ceil(max(2 * routed, (0 if grouped else routed) + share * dense * b - outputs) / tp)
    per_expert = math.ceil(n_tok * k / e) * dense * b
    n_in = 2 if spec.gated else 1
    stacked = e * n_in * spec.d_ff * cfg.d_model * g
    return math.ceil(max(2 * routed, routed + per_expert + stacked) / tp)
