"""Bytes per element of each number format, and per parameter of each optimizer: the one home of
these rules (``tests/project/test_house.py`` fails if a second table of them appears in ``src/``).

Every memory figure of ffnlab (training terms, the step's peak, model states of models counted
through transformers, serving weights, the audit's states column) takes its bytes from here.
"""

from __future__ import annotations

from ffnlab.errors import require
from ffnlab.validation import show

# bytes per element; int4 packs two elements in a byte
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
# which formats each role takes
TRAIN_DTYPES = ("fp32", "bf16", "fp16")  # weights that train
GRAD_DTYPES = TRAIN_DTYPES  # gradients
PLAIN_WEIGHT_DTYPES = TRAIN_DTYPES  # serving weights stored as plain floats (no scales)
ACTIVATION_DTYPES = ("fp32", "bf16", "fp16", "fp8")
KV_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
# serving weights of a model whose matrix shapes are unknown: plain floats, or a generic format at
# these bits with one 2-byte scale per group (named formats, AWQ, GPTQ, NF4, ..., need the shapes)
GENERIC_WEIGHT_DTYPES = KV_DTYPES
SCALE_BYTES = 2  # one fp16/bf16 scale per quantisation group
# the formats of the tensors no dtype flag chooses
FP32_BYTES = int(DTYPE_BYTES["fp32"])
HALF_BYTES = int(DTYPE_BYTES["bf16"])  # a 16-bit float: what a quantised model keeps unquantised
STAT_BYTES = FP32_BYTES  # norm statistics, log-sum-exp, router probabilities, logits: fp32
INDEX_BYTES = 8  # int64 indices and targets
DROPOUT_MASK_BYTES = 1  # torch.native_dropout (the CUDA path of F.dropout) keeps a bool mask
ADAPTER_BYTES = FP32_BYTES  # peft casts 16-bit adapters to fp32 (autocast_adapter_dtype=True)
ADAPTER_DTYPES = ("fp32", "bf16")  # bf16: torchtune's and LitGPT's pure-bf16 LoRA

# Optimizer state. Below 32-bit mixed-precision training every optimizer also keeps fp32 master weights
# (MASTER_BYTES per parameter), counted with the optimizer state as ZeRO counts them
# (Rajbhandari et al. 2020: K = 12 for AdamW is its 8 B of moments plus the 4 B master copy).
# Pure bf16 training (the model cast to bf16 before the optimizer is made: torchtune's default) has
# no master copy, and PyTorch's optimizer state is made like the parameter: bf16 moments.
MASTER_BYTES = FP32_BYTES
OPTIMIZERS = ("adamw", "adam8bit", "paged-adam8bit", "adafactor", "sgd-momentum", "sgd")
# state bytes per parameter of the optimizers whose state follows from the parameter count alone
# (PyTorch AdamW: two fp32 moments; SGD with momentum: one fp32 buffer); adam8bit and adafactor
# depend on the matrix shapes (ffnlab.sizing.memory.optimizers)
STATE_BYTES_PER_PARAM: dict[str, int] = {"adamw": 8, "sgd-momentum": 4, "sgd": 0}


def dtype_bytes(dtype: str, allowed: tuple[str, ...] = tuple(DTYPE_BYTES), what: str = "dtype") -> float:
    """Bytes per element of ``dtype``, refused with one line unless it is one of ``allowed``."""
    require(dtype in allowed, f"{what} must be one of {', '.join(allowed)}, got {show(dtype)}")
    return DTYPE_BYTES[dtype]


def master_bytes(weight_bytes: float, *, pure: bool = False) -> int:
    """fp32 master-weight bytes per parameter for weights of ``weight_bytes`` (0 in 32-bit training,
    and in pure low-precision training, ``pure``: the optimizer steps the bf16 weights themselves)."""
    return MASTER_BYTES if weight_bytes < MASTER_BYTES and not pure else 0


def state_scale(weight_bytes: float, *, pure: bool = False) -> float:
    """What the fp32 state of an elementwise optimizer (AdamW's moments, SGD's momentum) is scaled by:
    1, or in pure low-precision training (``pure``), where PyTorch's optimizers make their state
    ``zeros_like`` the parameter, the weights' bytes over fp32's (0.5 for bf16)."""
    return weight_bytes / MASTER_BYTES if pure else 1.0


def shape_free_states(optimizer: str, weight_bytes: float, *, pure: bool = False) -> float:
    """Optimizer state plus master weights per parameter, for an optimizer that needs no shapes
    (``pure``: pure low-precision training, state in the weights' dtype and no master copy)."""
    require(optimizer in STATE_BYTES_PER_PARAM,
            f"--optimizer {optimizer} needs the matrix shapes of a translated model; models counted through "
            f"transformers take {', '.join(STATE_BYTES_PER_PARAM)}")
    return STATE_BYTES_PER_PARAM[optimizer] * state_scale(weight_bytes, pure=pure) + master_bytes(weight_bytes,
                                                                                                 pure=pure)


def states_per_param(dtype: str = "bf16", optimizer: str = "adamw", *, pure: bool = False) -> float:
    """Weights + gradients + optimizer state + master weights per parameter, all in ``dtype``
    (16 B for bf16 AdamW: 2 + 2 + 8 + 4; pure bf16, ``pure``: 2 + 2 + 4)."""
    w = dtype_bytes(dtype, TRAIN_DTYPES, "training dtype")
    return 2 * w + shape_free_states(optimizer, w, pure=pure)
