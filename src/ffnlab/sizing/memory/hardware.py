"""Named accelerators (``data/accelerators.json``: dense peaks, datasheet memory and the memory
the device reports, each with its source) and training time for a token budget at a stated MFU.

Time = training FLOPs / (GPUs x peak x MFU), where the training FLOPs are ffnlab's model FLOPs
(3 x forward matmul FLOPs per token, attention at the sequence length, MoE counting the active
experts, a declared multi-token-prediction module included; :func:`ffnlab.sizing.flops.flops_per_token`)
times the tokens. MFU is *model* FLOPs utilisation (Chowdhery et al. 2022, PaLM App. B), so
recomputation is not added to the FLOPs: it shows up as a lower MFU. MFU is an input, never a
measurement: :data:`DEFAULT_MFU` is an assumption, and :func:`published_mfu` lists measured figures
to calibrate it against.

With ``precision="fp8"`` only the linear layers of the blocks (attention projections and the FFN)
run at the fp8 peak; attention scores and the LM head stay at the bf16 peak, as fp8 training recipes
keep them (DeepSeek-V3 report §3.3.1; Transformer Engine and torchao convert ``nn.Linear`` layers
only), so the time is the sum of the two parts at their own peaks.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import TypedDict

from ffnlab.errors import FfnlabError, require
from ffnlab.render import GIB, MIB, gib
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.flops import flops_per_token
from ffnlab.validation import show

PRECISIONS = ("bf16", "fp8")
DEFAULT_MFU = 0.4  # an assumption, printed as one; see published_mfu()
MAX_CUSTOM_GIB = 2**20  # a "GPU" of a pebibyte: far past any device, keeps the arithmetic bounded


@dataclass(frozen=True)
class Accelerator:
    name: str
    display: str
    memory_gb: float  # the datasheet's figure
    usable_mib: int  # what the device reports as its total (nvidia-smi / rocm-smi)
    bf16_tflops: float | None
    fp8_tflops: float | None
    source: str
    usable_source: str
    aliases: tuple[str, ...] = field(default=())
    # fp32 matmuls: on the FP32 units, or on TF32 tensor cores where torch allows it (MFU's denominator)
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp32_source: str = ""
    # memory bandwidth (GB/s, 10^9 bytes) from the datasheet: the decode roofline's denominator
    bandwidth_gbps: float | None = None
    bandwidth_source: str = ""
    # what CUDA itself reports as the total (torch.cuda.mem_get_info; vLLM's total_gpu_memory), below
    # nvidia-smi's figure, with the quoted line it was read from and that line's address; None where
    # no measurement or published figure was found, and then the source says so
    cuda_reported_bytes: int | None = None
    cuda_reported_source: str = ""
    cuda_reported_quote: str = ""
    cuda_reported_url: str = ""

    @property
    def cuda_total_bytes(self) -> int:
        """The total CUDA reports (what a serving engine sizes its cache from): the recorded
        figure, or the device's own total where none is known (:meth:`cuda_total_assumption`)."""
        return self.cuda_reported_bytes if self.cuda_reported_bytes is not None else self.memory_bytes

    def cuda_total_assumption(self) -> str:
        """Where :attr:`cuda_total_bytes` comes from, in one line: the figure once, then its
        source, the quoted line and its address; or that it is not known and what is used instead."""
        if self.cuda_reported_bytes is not None:
            return (f"{self.name}: CUDA reports {gib(self.cuda_reported_bytes)} in total "
                    f"({self.cuda_reported_source}: \"{self.cuda_reported_quote}\", {self.cuda_reported_url})")
        if self.usable_source.startswith("--gpu-memory"):
            return f"{self.name}: CUDA's total taken as the --gpu-memory figure, {self.usable_mib:,} MiB"
        tool = "rocm-smi" if "rocm-smi" in self.usable_source else "nvidia-smi"
        reason = self.cuda_reported_source.removeprefix("not known: ") or "no measurement or published figure"
        effect = ("CUDA shows 1-3% less on the cards measured, so the cache is overstated by about as much"
                  if tool == "nvidia-smi" else "what HIP reports may differ from it either way")
        return (f"{self.name}: CUDA total not known ({reason}); ffnlab uses {tool}'s {self.usable_mib:,} MiB "
                f"instead ({effect})")

    @property
    def memory_bytes(self) -> int:
        """The memory a framework can allocate from: the device's reported total."""
        return self.usable_mib * MIB

    def peak_flops(self, precision: str = "bf16") -> float:
        require(precision in PRECISIONS, f"precision must be one of {', '.join(PRECISIONS)}, got {show(precision)}")
        tf = self.bf16_tflops if precision == "bf16" else self.fp8_tflops
        require(tf is not None, f"{self.name} has no {precision} peak on record"
                + ("" if self.bf16_tflops is not None else " (a --gpu-memory card: give --gpu for its peaks)"))
        assert tf is not None
        return float(tf) * 1e12

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["aliases"] = list(self.aliases)
        out["memory_bytes"] = self.memory_bytes
        return out


class _AcceleratorRecord(TypedDict):
    name: str
    display: str
    memory_gb: float
    usable_mib: int
    bf16_tflops: float | None
    fp8_tflops: float | None
    source: str
    usable_source: str


class AcceleratorRecord(_AcceleratorRecord, total=False):
    """One record of data/accelerators.json ``accelerators``: the fields of :class:`Accelerator`,
    ``aliases`` as a list."""

    aliases: list[str]
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp32_source: str
    bandwidth_gbps: float | None
    bandwidth_source: str
    cuda_reported_bytes: int | None
    cuda_reported_source: str
    cuda_reported_quote: str
    cuda_reported_url: str


class PublishedMfu(TypedDict):
    """A measured MFU a paper or report published (``mfu`` as printed: ``"38-43%"``)."""

    model: str
    hardware: str
    mfu: str
    cite: str
    source: str


class AcceleratorsFile(TypedDict):
    """data/accelerators.json."""

    note: str
    accelerators: list[AcceleratorRecord]
    published_mfu: list[PublishedMfu]


@lru_cache(maxsize=1)
def _data() -> AcceleratorsFile:
    data: AcceleratorsFile = json.loads(resources.files("ffnlab").joinpath("data/accelerators.json").read_text())
    return data


@lru_cache(maxsize=1)
def load_accelerators() -> tuple[Accelerator, ...]:
    return tuple(_accelerator(a) for a in _data()["accelerators"])


def _accelerator(a: AcceleratorRecord) -> Accelerator:
    """The record as an :class:`Accelerator`: a field the record leaves out keeps its default."""
    return Accelerator(
        name=a["name"], display=a["display"], memory_gb=a["memory_gb"], usable_mib=a["usable_mib"],
        bf16_tflops=a["bf16_tflops"], fp8_tflops=a["fp8_tflops"], source=a["source"], usable_source=a["usable_source"],
        aliases=tuple(a.get("aliases", ())), fp32_tflops=a.get("fp32_tflops"), tf32_tflops=a.get("tf32_tflops"),
        fp32_source=a.get("fp32_source", ""), bandwidth_gbps=a.get("bandwidth_gbps"),
        bandwidth_source=a.get("bandwidth_source", ""), cuda_reported_bytes=a.get("cuda_reported_bytes"),
        cuda_reported_source=a.get("cuda_reported_source", ""), cuda_reported_quote=a.get("cuda_reported_quote", ""),
        cuda_reported_url=a.get("cuda_reported_url", ""))


def published_mfu() -> list[PublishedMfu]:
    """Measured MFUs from papers and reports, each with its source (to calibrate ``--mfu``)."""
    return [r.copy() for r in _data()["published_mfu"]]


def _by_name() -> dict[str, Accelerator]:
    out: dict[str, Accelerator] = {}
    for a in load_accelerators():
        for key in (a.name, *a.aliases):
            out[key.lower()] = a
    return out


def find_accelerator(name: str, otherwise: str = ", or give --gpu-memory GiB") -> Accelerator:
    """The listed accelerator called ``name`` (case-insensitive, aliases too); an unknown name is
    refused with the list, ``otherwise`` (what else the command takes) and the closest names."""
    by_name = _by_name()
    hit = by_name.get(name.lower())
    if hit is None:
        close = difflib.get_close_matches(name.lower()[:100], by_name, n=3)
        hint = f"; did you mean {', '.join(dict.fromkeys(by_name[c].name for c in close))}?" if close else ""
        raise FfnlabError(f"unknown accelerator {show(name)}: choose one of "
                          f"{', '.join(a.name for a in load_accelerators())}{otherwise}{hint}")
    return hit


def custom_accelerator(memory_gib: float, like: str | None = None) -> Accelerator:
    """A card of ``memory_gib`` GiB usable memory; with ``like``, that accelerator's peaks."""
    require(0 < memory_gib <= MAX_CUSTOM_GIB, f"--gpu-memory must be in (0, {MAX_CUSTOM_GIB}] GiB, got {memory_gib}")
    base = find_accelerator(like) if like else None
    mib = int(memory_gib * (GIB // MIB))
    require(mib >= 1, f"--gpu-memory must be at least 1 MiB, got {memory_gib} GiB")
    return Accelerator(
        name=f"{base.name if base else 'custom'} ({memory_gib:g} GiB)",
        display=f"{base.display if base else 'a GPU'} with {memory_gib:g} GiB usable (--gpu-memory)",
        memory_gb=memory_gib, usable_mib=mib,
        bf16_tflops=base.bf16_tflops if base else None, fp8_tflops=base.fp8_tflops if base else None,
        source=base.source if base else "--gpu-memory (no peak on record)",
        usable_source="--gpu-memory, as given",
        bandwidth_gbps=base.bandwidth_gbps if base else None, bandwidth_source=base.bandwidth_source if base else "")


@dataclass(frozen=True)
class TrainingTime:
    tokens: int
    flops: int
    fp8_flops: int  # the part run at the fp8 peak (0 in bf16)
    gpus: int
    accelerator: str
    precision: str
    mfu: float
    mfu_assumed: bool
    seconds: float

    @property
    def gpu_hours(self) -> float:
        return self.seconds * self.gpus / 3600

    @property
    def days(self) -> float:
        return self.seconds / 86400

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "gpu_hours": self.gpu_hours, "days": self.days}


def training_time(cfg: ModelConfig, *, tokens: int, gpus: int, accelerator: str | Accelerator, seq_len: int = 2048,
                  mfu: float | None = None, precision: str = "bf16") -> TrainingTime:
    """Wall-clock seconds and GPU-hours to train ``cfg`` on ``tokens`` tokens (``mfu`` None: the
    :data:`DEFAULT_MFU` assumption)."""
    require(tokens >= 1, f"tokens must be >= 1, got {tokens}")
    require(gpus >= 1, f"GPU count must be >= 1, got {gpus}")
    assumed = mfu is None
    rate = DEFAULT_MFU if mfu is None else mfu
    require(0 < rate <= 1, f"MFU must be in (0, 1], got {rate}")
    acc = accelerator if isinstance(accelerator, Accelerator) else find_accelerator(accelerator)
    fl = flops_per_token(cfg, seq_len)
    flops = fl.training * tokens
    if precision == "fp8":
        fast = 3 * fl.linear * tokens
        seconds = (fast / acc.peak_flops("fp8") + (flops - fast) / acc.peak_flops("bf16")) / (gpus * rate)
    else:
        fast = 0
        seconds = flops / (gpus * acc.peak_flops(precision) * rate)
    return TrainingTime(tokens, flops, fast, gpus, acc.name, precision, rate, assumed, seconds)
