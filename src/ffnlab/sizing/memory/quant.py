"""Weights for serving: plain dtypes and quantised checkpoint formats by name.

Each format stores the matrices it converts (:mod:`ffnlab.sizing.shapes`) as packed low-bit
values plus metadata laid out per matrix, and keeps everything else (embeddings, LM head, norms,
biases, and for some formats the router or the attention) in 16-bit. Per matrix of ``fan_in``
x ``fan_out`` weights (``g`` = group size along fan_in, ``G = ceil(fan_in / g)``):

=================  =============================================================================
``awq``            AutoAWQ GEMM: 4-bit values, per group and output column an fp16 scale and a
                   4-bit zero point (``qweight``, ``scales``, ``qzeros``); attention + FFN +
                   experts; ``g`` 128 by default
``gptq``           AutoGPTQ / GPTQ-for-LLaMa: 4-bit values, per group and output column an fp16
                   scale and a 4-bit zero point, and an int32 ``g_idx`` per input row;
                   ``gptq-3bit`` and ``gptq-8bit`` pack 3 and 8 bits (zero points too);
                   ``--group-size 0`` = one group over the whole input ("None" in model cards)
``fp8``            fp8 e4m3 with one fp32 scale per matrix (per-tensor)
``fp8-channel``    fp8 e4m3 with one fp32 scale per output channel (per-channel / row-wise)
``fp8-block128``   fp8 e4m3 with one fp32 scale per 128 x 128 tile (DeepSeek-V3's
                   ``weight_block_size`` [128, 128], ``weight_scale_inv``); the router stays 16-bit
``nf4``            bitsandbytes NF4 with double quantisation (QLoRA, Dettmers et al. 2023 §3):
                   4-bit values, an 8-bit absmax per 64 weights and an fp32 absmax per 256 of
                   those (0.127 bits per weight), plus a per-matrix quantisation state
                   (256 + 16 fp32 code tables, an estimate of what bitsandbytes serialises)
``mxfp4``          OCP microscaling FP4 as gpt-oss ships: the routed experts only, E2M1 values and
                   one E8M0 (1-byte) scale per 32; attention, router, embeddings and head in bf16
``int8``/``int4``  generic: ``bits/8`` per weight + one 2-byte scale per ``g`` weights (``--group-size
                   0`` = none), attention + FFN + experts
=================  =============================================================================

Checked against published checkpoint sizes in ``tests/sizing/memory/test_memory_quant.py`` (docs/memory.md lists
them with the error of each).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory.byte_rules import DTYPE_BYTES, FP32_BYTES, HALF_BYTES, PLAIN_WEIGHT_DTYPES
from ffnlab.sizing.shapes import Matrix, matrices, vector_params
from ffnlab.validation import show

PLAIN_BITS: dict[str, int] = {d: int(8 * DTYPE_BYTES[d]) for d in PLAIN_WEIGHT_DTYPES}
QUANTISED = ("attention", "ffn", "expert", "mtp_proj")  # what most formats convert


@dataclass(frozen=True)
class Format:
    name: str
    bits: int
    parts: tuple[str, ...]
    kind: str  # "group" (scale [+ zero] per group of fan_in), "tensor", "channel", "block", "nf4", "mx"
    group: int = 128  # default group along fan_in ("group" and "mx" kinds)
    scale_bytes: float = 2
    zero_bits: int = 0  # packed zero point per group and output column
    g_idx: bool = False  # an int32 per input row (GPTQ)
    describe: str = ""


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("awq", 4, QUANTISED, "group", 128, 2, 4, describe="AWQ 4-bit, fp16 scale + 4-bit zero per group"),
    Format("gptq", 4, QUANTISED, "group", 128, 2, 4, True, "GPTQ 4-bit, fp16 scale + 4-bit zero per group, g_idx"),
    Format("gptq-3bit", 3, QUANTISED, "group", 128, 2, 3, True, "GPTQ 3-bit, fp16 scale + 3-bit zero per group, g_idx"),
    Format("gptq-8bit", 8, QUANTISED, "group", 128, 2, 8, True, "GPTQ 8-bit, fp16 scale + 8-bit zero per group, g_idx"),
    Format("fp8", 8, QUANTISED, "tensor", scale_bytes=4, describe="fp8 e4m3, one fp32 scale per matrix"),
    Format("fp8-channel", 8, QUANTISED, "channel", scale_bytes=4,
           describe="fp8 e4m3, one fp32 scale per output channel"),
    Format("fp8-block128", 8, QUANTISED, "block", 128, 4, describe="fp8 e4m3, one fp32 scale per 128 x 128 tile"),
    Format("nf4", 4, QUANTISED, "nf4", 64, describe="NF4 + double quantisation (bitsandbytes, QLoRA)"),
    Format("mxfp4", 4, ("expert",), "mx", 32, 1, describe="MXFP4 (E2M1 + E8M0 scale per 32), routed experts only"),
    Format("int8", 8, QUANTISED, "group", 128, 2, describe="int8, one fp16 scale per group"),
    Format("int4", 4, QUANTISED, "group", 128, 2, describe="int4, one fp16 scale per group"),
)}
WEIGHT_FORMATS = (*PLAIN_BITS, *FORMATS)
NF4_STATE_BYTES = (256 + 16) * FP32_BYTES  # the nested absmax code table and the NF4 code, fp32, per matrix


def _meta(f: Format, m: Matrix, group: int) -> float:
    """Metadata bytes of one matrix (scales, zero points, indices)."""
    fi, fo = m.fan_in, m.fan_out
    if f.kind == "group":
        groups = math.ceil(fi / group) if group else 1
        return groups * fo * (f.scale_bytes + f.zero_bits / 8) + (4 * fi if f.g_idx else 0)
    if f.kind == "tensor":
        return f.scale_bytes
    if f.kind == "channel":
        return fo * f.scale_bytes
    if f.kind == "block":
        return math.ceil(fo / f.group) * math.ceil(fi / f.group) * f.scale_bytes
    if f.kind == "nf4":
        blocks = math.ceil(fi * fo / f.group)
        return blocks + math.ceil(blocks / 256) * 4 + NF4_STATE_BYTES
    return math.ceil(fi * fo / f.group) * f.scale_bytes  # "mx": one scale per block of 32


@dataclass(frozen=True)
class WeightBytes:
    quantised_params: int
    kept_params: int  # what the format keeps in 16-bit (embeddings, head, norms, biases, ...)
    data: int
    scales: int  # all per-matrix metadata: scales, zero points, g_idx, code tables
    kept: int
    rule: str
    expert_bytes: int = 0  # the routed experts' share of the total (what expert parallelism splits)

    @property
    def total(self) -> int:
        return self.data + self.scales + self.kept


def weight_bytes(cfg: ModelConfig, dtype: str = "bf16", *, group_size: int | None = None, scale_bytes: int = 2,
                 zero_point: bool = False, mtp: bool = False, extra_parts: tuple[str, ...] = ()) -> WeightBytes:
    """Serving weights of ``cfg`` in a plain dtype or a quantised format (:data:`FORMATS`).

    ``group_size`` overrides the format's group (AWQ, GPTQ, int8/int4; 0 = one group over the
    whole input); ``scale_bytes`` and ``zero_point`` shape the generic int8/int4 groups; ``mtp``
    adds the declared multi-token-prediction modules as DeepSeek-V3's checkpoint stores them;
    ``extra_parts`` converts more matrices than the format's own parts (e.g. the LM head, as
    Lightning's bitsandbytes plugin does).
    """
    require(dtype in WEIGHT_FORMATS, f"weights dtype must be one of {', '.join(WEIGHT_FORMATS)}, got {show(dtype)}")
    require(group_size is None or group_size >= 0, f"group size must be >= 0, got {group_size}")
    mats = matrices(cfg, mtp=mtp)
    total = sum(m.numel for m in mats) + vector_params(cfg, mtp=mtp)
    experts = sum(m.numel for m in mats if m.part == "expert")
    if dtype in PLAIN_BITS:
        b = PLAIN_BITS[dtype] // 8
        return WeightBytes(total, 0, total * b, 0, 0, f"{total:,} params x {b} B", expert_bytes=experts * b)
    f = FORMATS[dtype]
    if dtype in ("int8", "int4"):
        # a zero point as wide as the scale, per group (asymmetric schemes)
        f = Format(f.name, f.bits, f.parts, "group", f.group, scale_bytes, 8 * scale_bytes if zero_point else 0,
                   describe=f"{f.name}, {'scale + zero point' if zero_point else 'one scale'} of {scale_bytes} B "
                            "per group")
    group = f.group if group_size is None else group_size
    conv = [m for m in mats if m.part in f.parts or m.part in extra_parts]
    q = sum(m.numel for m in conv)
    rest = total - q
    data = math.ceil(q * f.bits / 8)
    meta = math.ceil(sum(_meta(f, m, group) * m.count for m in conv))
    if "expert" in f.parts:
        expert_bytes = math.ceil(experts * f.bits / 8 + sum(_meta(f, m, group) * m.count for m in conv
                                                             if m.part == "expert"))
    else:
        expert_bytes = HALF_BYTES * experts
    where = "+".join(sorted({m.part for m in conv})) or "nothing"
    grouping = (f" (group {group or 'none'})" if f.kind == "group" else "")
    rule = (f"{f.describe or f.name}{grouping}: {q:,} {where} params x {f.bits}/8 B + {meta:,} B of scales and "
            f"indices + {rest:,} other params x {HALF_BYTES} B")
    return WeightBytes(q, rest, data, meta, HALF_BYTES * rest, rule, expert_bytes)


def matmul_params(cfg: ModelConfig) -> int:
    """Attention and FFN parameters (all experts): the part weight quantisation applies to."""
    c = count_params(cfg)
    return c.attention + c.ffn
