"""What is run: one frozen, validated description of a training or serving workload.

A :class:`Workload` is the model's load, everything the memory model needs besides the model and
its parallel layout (:class:`ffnlab.sizing.memory.parallel.Layout`): the sequence and the batch,
the dtypes, the activation policy (recompute, attention, dropout), the optimizer, how the step is
run (:class:`ffnlab.sizing.memory.step.StepOptions`: loss, gradient accumulation, the
optimizer's implementation) and the fine-tuning (:class:`ffnlab.sizing.finetune.FinetuneOptions`,
None: every weight trains). It is built once, from the command line
(:meth:`ffnlab.cli.memory_flags.MemoryFlags.workload`) or in Python, and passed whole::

    from ffnlab.sizing.memory.parallel import Layout, memory_summary
    from ffnlab.sizing.memory.workload import Workload

    work = Workload(seq_len=4096, batch=2, recompute="full")
    memory_summary(cfg, work, Layout(dp=8, zero=3)).peak_bytes

It is checked when it is made (:meth:`Workload.check`): a bad field raises
:class:`ffnlab.errors.FfnlabError` with one line naming its command-line flag, the line the CLI
prints. The model is not part of it: ``audit`` and ``fit`` put one workload to many models, and
the flags are checked before any model is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ffnlab.errors import require
from ffnlab.sizing.memory.activations import ATTENTION, DROPOUT_MASK_BYTES, MLA_FORMS, RECOMPUTE
from ffnlab.sizing.memory.byte_rules import (
    DTYPE_BYTES,
    GRAD_DTYPES,
    KV_DTYPES,
    OPTIMIZERS,
    TRAIN_DTYPES,
)
from ffnlab.sizing.memory.quant import WEIGHT_FORMATS
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.validation import choice, integer, number, show

if TYPE_CHECKING:  # ffnlab.sizing.finetune builds on the memory model
    from ffnlab.sizing.finetune import FinetuneOptions
    from ffnlab.sizing.memory.engines import Engine

MAX_SEQ_LEN = 2**40  # as size caps --seq-len
MAX_BATCH = 2**40  # a batch past any cluster
MAX_GROUP_SIZE = 2**20


def check_seq_len(seq_len: int) -> int:
    """``seq_len`` checked as ``--seq-len``."""
    return integer(seq_len, "--seq-len", 1, MAX_SEQ_LEN)


def check_train_dtype(dtype: str) -> str:
    """``dtype`` checked as the training ``--dtype`` of the memory estimate."""
    require(dtype in TRAIN_DTYPES,
            f"--dtype must be one of {', '.join(TRAIN_DTYPES)} for the memory estimate, got {show(dtype)}")
    return dtype


OFFLOAD = ("none", "optimizer", "params")


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One training (or serving) workload, checked when made; the defaults are the CLI's.

    ``kv_dtype``, ``weights_dtype`` and ``grad_dtype`` None: the training ``dtype``
    (:attr:`kv`, :attr:`serving_weights`, :attr:`grads` resolve them). ``group_size`` None: the
    quantised format's default. ``capacity_factor`` None: MoE tokens routed without a cap.
    ``finetune`` None: full training (what ``--finetune full`` gives); LoRA / QLoRA adapters
    otherwise (:func:`ffnlab.sizing.finetune.finetune_summary`, ``fit``; :func:`memory_summary`
    always models full training).
    """

    seq_len: int = 2048
    batch: int = 1
    dtype: str = "bf16"  # weights and activations
    grad_dtype: str | None = None
    kv_dtype: str | None = None
    weights_dtype: str | None = None  # serving weights, possibly quantised
    group_size: int | None = None
    mla: str = "latent"  # MLA's KV cache: latent (vLLM/SGLang) or expanded
    recompute: str = "none"
    attention: str = "fused"
    capacity_factor: float | None = None
    dropout: bool = False
    dropout_mask_bytes: float = DROPOUT_MASK_BYTES
    optimizer: str = "adamw"
    pure_bf16: bool = False  # bf16 weights, gradients and optimizer state; no fp32 master copy
    offload: str = "none"  # CPU offload (data/offload.json): none, optimizer (ZeRO-Offload), params (+ weights)
    step: StepOptions = field(default_factory=StepOptions)
    finetune: FinetuneOptions | None = None
    # the training engine whose facts were applied (ffnlab.sizing.memory.engines.apply_engine);
    # None: the fields as given
    engine: Engine | None = None

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Each field against its flag's rule; the first bad one raises its one line."""
        check_seq_len(self.seq_len)
        check_train_dtype(self.dtype)
        integer(self.batch, "--batch", 1, MAX_BATCH)
        self.step.check()
        choice(self.recompute, "--recompute", RECOMPUTE)
        choice(self.attention, "--attention", ATTENTION)
        choice(self.optimizer, "--optimizer", OPTIMIZERS)
        choice(self.offload, "--offload", OFFLOAD)
        require(not self.step.offload_activations or self.recompute in ("full", "op-selective"),
                "--offload-acts needs --recompute full or op-selective (the offloaded tensors are each "
                f"checkpointed layer's input; torchtune refuses it without checkpointing), got {self.recompute}")
        require(not self.pure_bf16 or self.dtype == "bf16",
                f"--pure-bf16 trains in bf16: give --dtype bf16, not {self.dtype}")
        for value, flag, allowed in ((self.kv_dtype, "--kv-dtype", KV_DTYPES),
                                     (self.weights_dtype, "--weights-dtype", WEIGHT_FORMATS),
                                     (self.grad_dtype, "--grad-dtype", GRAD_DTYPES)):
            if value is not None:
                choice(value, flag, allowed)
        if self.group_size is not None:
            integer(self.group_size, "--group-size", 0, MAX_GROUP_SIZE)
        choice(self.mla, "--mla-cache", MLA_FORMS)
        if self.capacity_factor is not None:
            number(self.capacity_factor, "capacity_factor", 0, None, lo_open=True)
        number(self.dropout_mask_bytes, "dropout_mask_bytes", 0, None, lo_open=True)
        if self.finetune is not None:
            self.finetune.check()

    @property
    def adapters(self) -> bool:
        """True for a LoRA / QLoRA workload."""
        return self.finetune is not None and self.finetune.adapters

    @property
    def state_bytes(self) -> float:
        """Bytes of one element of the optimizer's state: fp32, or bf16 in pure bf16 training."""
        return DTYPE_BYTES["bf16"] if self.pure_bf16 else DTYPE_BYTES["fp32"]

    @property
    def grads(self) -> str:
        """The gradient dtype."""
        return self.grad_dtype or self.dtype

    @property
    def kv(self) -> str:
        """The KV cache's dtype."""
        return self.kv_dtype or self.dtype

    @property
    def serving_weights(self) -> str:
        """The serving weights' format."""
        return self.weights_dtype or self.dtype


__all__ = ["MAX_BATCH", "MAX_SEQ_LEN", "OFFLOAD", "Workload", "check_seq_len", "check_train_dtype"]
