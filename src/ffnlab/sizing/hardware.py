"""Named accelerators (``data/accelerators.json``: dense peaks and memory, each with its source)
and training time for a token budget at a stated MFU.

Time = training FLOPs / (GPUs x peak x MFU), where the training FLOPs are ffnlab's model FLOPs
(3 x forward matmul FLOPs per token, attention at the sequence length, MoE counting the active
experts; :func:`ffnlab.sizing.flops.flops_per_token`) times the tokens. MFU is *model* FLOPs
utilisation (Chowdhery et al. 2022, PaLM App. B), so recomputation is not added to the FLOPs:
it shows up as a lower MFU.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.flops import flops_per_token

PRECISIONS = ("bf16", "fp8")


@dataclass(frozen=True)
class Accelerator:
    name: str
    display: str
    memory_gib: float  # the datasheet's GB figure, which the devices report in GiB
    bf16_tflops: float
    fp8_tflops: float | None
    source: str
    # fp32 matmuls: on the FP32 units, or on TF32 tensor cores where torch allows it (MFU's denominator)
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp32_source: str = ""

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * 2**30)

    def peak_flops(self, precision: str = "bf16") -> float:
        require(precision in PRECISIONS, f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        tf = self.bf16_tflops if precision == "bf16" else self.fp8_tflops
        require(tf is not None, f"{self.name} has no {precision} tensor cores")
        return float(tf) * 1e12  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@lru_cache(maxsize=1)
def load_accelerators() -> tuple[Accelerator, ...]:
    data = json.loads(resources.files("ffnlab").joinpath("data/accelerators.json").read_text())
    return tuple(Accelerator(**a) for a in data["accelerators"])


def find_accelerator(name: str) -> Accelerator:
    by_name = {a.name.lower(): a for a in load_accelerators()}
    hit = by_name.get(name.lower())
    if hit is None:
        close = difflib.get_close_matches(name.lower(), by_name, n=3)
        hint = f"; did you mean {', '.join(by_name[c].name for c in close)}?" if close else ""
        raise FfnlabError(f"unknown accelerator {name!r}: choose one of "
                          f"{', '.join(a.name for a in load_accelerators())}{hint}")
    return hit


@dataclass(frozen=True)
class TrainingTime:
    tokens: int
    flops: int
    gpus: int
    accelerator: str
    precision: str
    mfu: float
    seconds: float

    @property
    def gpu_hours(self) -> float:
        return self.seconds * self.gpus / 3600

    @property
    def days(self) -> float:
        return self.seconds / 86400

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "gpu_hours": self.gpu_hours, "days": self.days}


def training_time(cfg: ModelConfig, *, tokens: int, gpus: int, accelerator: str, seq_len: int = 2048,
                  mfu: float = 0.4, precision: str = "bf16") -> TrainingTime:
    """Wall-clock seconds and GPU-hours to train ``cfg`` on ``tokens`` tokens."""
    require(tokens >= 1, f"tokens must be >= 1, got {tokens}")
    require(gpus >= 1, f"GPU count must be >= 1, got {gpus}")
    require(0 < mfu <= 1, f"MFU must be in (0, 1], got {mfu}")
    acc = find_accelerator(accelerator)
    flops = flops_per_token(cfg, seq_len).training * tokens
    seconds = flops / (gpus * acc.peak_flops(precision) * mfu)
    return TrainingTime(tokens, flops, gpus, acc.name, precision, mfu, seconds)
