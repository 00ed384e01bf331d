"""Optimizer state per parameter, for the optimizers people train with.

* ``adamw``: two fp32 moments, 8 B per parameter (PyTorch ``AdamW`` on fp32 master weights; the
  ``K = 12`` of ZeRO, Rajbhandari et al. 2020, is these 8 B plus the 4 B master copy);
* ``adam8bit``: bitsandbytes' blockwise 8-bit Adam: two uint8 states and an fp32 absmax per 256
  values for each (``Optimizer2State``, blocksize 256), 2 + 8/256 B per parameter; tensors below
  ``min_8bit_size`` (4,096 values: norms, biases) keep 32-bit states (8 B);
* ``paged-adam8bit``: bitsandbytes' ``PagedAdamW8bit``: 8-bit Adam's bytes, but the two uint8
  states of every tensor of at least 1e5 values are paged (``get_state_buffer``: ``F.get_paged``,
  CUDA unified memory) and prefetched one parameter at a time in the step (``prefetch_state``;
  bitsandbytes/optim/optimizer.py at 06029dd6edcc719e5831443179bcb206c6355093): they need not be
  resident on the GPU outside the optimizer step, and the driver pages them to host memory under
  pressure. ffnlab counts them in host memory and, at the optimizer step, the largest tensor's
  paged state on the GPU (:func:`paged_state`); the absmax blocks and small tensors stay on the GPU;
* ``adafactor``: Shazeer & Stern 2018 with ``beta1 = None`` (the paper's and transformers'
  default): no first moment, the second moment of each matrix factored into a row and a column
  vector (fp32), a full fp32 second moment for vectors;
* ``sgd-momentum``: one fp32 momentum buffer, 4 B; ``sgd``: nothing.

Below 32-bit training every optimizer also keeps fp32 master weights (4 B per parameter), counted
with the optimizer state, as ZeRO counts them; in pure bf16 training (``pure``: the model cast to
bf16 before the optimizer is made, torchtune's default) there is no master copy and PyTorch's
optimizers make their state like the parameter, so AdamW's moments, SGD's momentum and Adafactor's
factors are bf16 (8-bit Adam's quantised state is unchanged).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory.byte_rules import (
    FP32_BYTES,
    GRAD_DTYPES,
    HALF_BYTES,
    OPTIMIZERS,
    STATE_BYTES_PER_PARAM,
    TRAIN_DTYPES,
    master_bytes,
    state_scale,
)
from ffnlab.sizing.memory.byte_rules import (
    dtype_bytes as bytes_of,
)
from ffnlab.sizing.shapes import matrices, vector_params
from ffnlab.validation import show

ADAM8BIT_BLOCK = 256
PAGED_MIN_SIZE = 100_000  # bitsandbytes' get_state_buffer pages tensors of at least 1e5 values
ADAM8BIT_MIN_SIZE = 4096
SHAPE_FREE_RULES = {"adamw": "AdamW: {p:,} params x 2 fp32 moments (" + f"{2 * FP32_BYTES} B)",
                    "sgd-momentum": "SGD momentum: {p:,} params x " + f"{FP32_BYTES} B", "sgd": "SGD: no state"}
PURE_RULES = {"adamw": "AdamW: {p:,} params x 2 bf16 moments (" + f"{2 * HALF_BYTES} B), no master copy (pure bf16)",
              "sgd-momentum": "SGD momentum: {p:,} params x " + f"{HALF_BYTES} B (pure bf16)"}


@dataclass(frozen=True)
class OptimizerState:
    name: str
    state_bytes: int  # the optimizer's own state for the whole model
    master_bytes: int  # fp32 master weights (0 in fp32 training)
    rule: str
    estimate: bool  # False when the state follows from the parameter count alone

    @property
    def total(self) -> int:
        return self.state_bytes + self.master_bytes

    @property
    def per_param(self) -> float:
        """Average bytes per parameter (state + master)."""
        return self.total


def _adam8bit(cfg: ModelConfig) -> tuple[int, str]:
    mats = matrices(cfg)
    big = sum(m.numel for m in mats if m.fan_in * m.fan_out >= ADAM8BIT_MIN_SIZE)
    small = count_params(cfg).total - big
    blocks = sum(math.ceil(m.fan_in * m.fan_out / ADAM8BIT_BLOCK) * m.count for m in mats
                 if m.fan_in * m.fan_out >= ADAM8BIT_MIN_SIZE)
    state = 2 * big + 2 * FP32_BYTES * blocks + 2 * FP32_BYTES * small
    return state, (f"8-bit Adam: {big:,} matrix params x 2 B + 2 x {blocks:,} fp32 absmax blocks of "
                   f"{ADAM8BIT_BLOCK} + {small:,} small params x {2 * FP32_BYTES} B")


def paged_state(cfg: ModelConfig) -> tuple[int, int]:
    """``paged-adam8bit``: (bytes of the paged uint8 states, those of the largest paged tensor):
    two bytes per value of each tensor of at least :data:`PAGED_MIN_SIZE` values."""
    paged = [m for m in matrices(cfg) if m.fan_in * m.fan_out >= PAGED_MIN_SIZE]
    return (sum(2 * m.numel for m in paged), max((2 * m.fan_in * m.fan_out for m in paged), default=0))


def _adafactor(cfg: ModelConfig, scale: float = 1.0) -> tuple[int, str]:
    mats = matrices(cfg)
    factored = sum((m.fan_in + m.fan_out) * m.count for m in mats)
    vectors = vector_params(cfg)
    per = FP32_BYTES * scale
    return (math.ceil(per * (factored + vectors)),
            f"Adafactor (beta1 None): row + column {'fp32' if scale == 1 else 'bf16'} factors of each matrix "
            f"({factored:,}) + "
            f"{vectors:,} vector params x {per:g} B")


def optimizer_state(cfg: ModelConfig, optimizer: str = "adamw", *, dtype_bytes: float = 2,
                    pure: bool = False) -> OptimizerState:
    """Optimizer state and master weights for the whole model (unsharded); ``pure``: pure
    low-precision training (state in the weights' dtype, no master copy)."""
    require(optimizer in OPTIMIZERS, f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {show(optimizer)}")
    p = count_params(cfg).total
    master = master_bytes(dtype_bytes, pure=pure) * p
    scale = state_scale(dtype_bytes, pure=pure)
    if optimizer in STATE_BYTES_PER_PARAM:
        state, estimate = math.ceil(STATE_BYTES_PER_PARAM[optimizer] * scale * p), False
        rule = SHAPE_FREE_RULES[optimizer].format(p=p)
        if scale != 1 and state:
            rule = PURE_RULES[optimizer].format(p=p)
    elif optimizer in ("adam8bit", "paged-adam8bit"):
        state, rule = _adam8bit(cfg)
        estimate = True
        if optimizer == "paged-adam8bit":
            rule += f"; paged (unified memory): {paged_state(cfg)[0]:,} B of it"
    else:
        state, rule = _adafactor(cfg, scale)
        estimate = True
    if master:
        rule += f" + fp32 master weights {p:,} x {FP32_BYTES} B"
    return OptimizerState(optimizer, state, master, rule, estimate)


@dataclass(frozen=True)
class TrainingMemory:
    """The model states of training, whole model, one copy: activations and the step's
    temporaries excluded (the step's peak is ``memory.training_total_bytes``)."""

    weights: float
    grads: float
    optimizer: float
    master_weights: float

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer + self.master_weights

    def as_dict(self) -> dict[str, float]:
        """The parts; their sum is :attr:`total` (a whole step's figure is the step's peak,
        ``memory.training_total_bytes``, which also counts activations and the loss)."""
        return dict(asdict(self))


def training_memory(cfg: ModelConfig, dtype: str = "bf16", *, optimizer: str = "adamw",
                    grad_dtype: str | None = None, pure: bool = False) -> TrainingMemory:
    """Bytes of weights (``dtype``), gradients (``grad_dtype``, default ``dtype``), optimizer state
    and master weights (:func:`optimizer_state`), activations excluded; ``optimizer="none"``: the
    weights alone (nothing trains)."""
    w = bytes_of(dtype, TRAIN_DTYPES, "training dtype")
    n = count_params(cfg).total
    if optimizer == "none":
        return TrainingMemory(weights=w * n, grads=0, optimizer=0, master_weights=0)
    g = bytes_of(grad_dtype or dtype, GRAD_DTYPES, "gradient dtype")
    opt = optimizer_state(cfg, optimizer, dtype_bytes=w, pure=pure)
    return TrainingMemory(weights=w * n, grads=g * n, optimizer=opt.state_bytes, master_weights=opt.master_bytes)
