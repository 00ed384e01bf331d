"""The memory options and memory rendering that ``size``, ``audit`` and ``fit`` share (no commands here)."""

from __future__ import annotations

from typing import Any

import typer

from ffnlab import render
from ffnlab.errors import require
from ffnlab.render import Column

# -- options shared with size and audit ----------------------------------------------------------
BATCH_OPTION = typer.Option(1, "--batch", help="Sequences per micro-batch (training) or concurrent sequences (serving).")
RECOMPUTE_OPTION = typer.Option("none", "--recompute", help="Activation recomputation: none | selective | full.")
ATTENTION_OPTION = typer.Option("fused", "--attention", help="Attention implementation: fused (flash) | eager (s x s kept).")
KV_DTYPE_OPTION = typer.Option(None, "--kv-dtype", help="KV-cache dtype: bf16 fp16 fp32 fp8 int8 int4 (default --dtype).")
WEIGHTS_DTYPE_OPTION = typer.Option(None, "--weights-dtype", help="Serving weights: bf16 fp16 fp32 fp8 int8 int4 (default --dtype).")
GROUP_SIZE_OPTION = typer.Option(128, "--group-size", help="Quantisation group size (one 2-byte scale per group; 0 = per matrix).")
DP_OPTION = typer.Option(1, "--dp", help="Data-parallel GPUs.")
TP_OPTION = typer.Option(1, "--tp", help="Tensor-parallel GPUs.")
PP_OPTION = typer.Option(1, "--pp", help="Pipeline stages.")
EP_OPTION = typer.Option(1, "--ep", help="Expert-parallel GPUs (MoE; divides --dp).")
ZERO_OPTION = typer.Option(0, "--zero", help="ZeRO stage 0-3 (3 = FSDP full sharding).")
SP_OPTION = typer.Option(False, "--sp/--no-sp", help="Sequence parallelism (with --tp).")
TRAIN_DTYPES = ("fp32", "bf16", "fp16")


def memory_options(*, batch: int, recompute: str, attention: str, kv_dtype: str | None,
                   weights_dtype: str | None, group_size: int, dp: int, tp: int, pp: int, ep: int, zero: int,
                   sp: bool) -> dict[str, Any]:
    """Keyword arguments of :func:`ffnlab.sizing.parallel.memory_summary` from the CLI flags."""
    from ffnlab.sizing.parallel import Layout

    require(batch >= 1, f"--batch must be >= 1, got {batch}")
    return {"batch": batch, "recompute": recompute, "attention": attention, "kv_dtype": kv_dtype,
            "weights_dtype": weights_dtype, "group_size": group_size,
            "lay": Layout(dp=dp, tp=tp, pp=pp, ep=ep, zero=zero, sp=sp)}


def check_train_dtype(dtype: str) -> str:
    require(dtype in TRAIN_DTYPES, f"--dtype must be one of {', '.join(TRAIN_DTYPES)} for the memory estimate, got {dtype!r}")
    return dtype


def gib(n: float | None) -> str:
    return "-" if n is None else f"{n / 2**30:,.2f} GiB"


def memory_pairs(mem: dict[str, Any]) -> list[tuple[str, Any]]:
    """Rows for a key-value table: the memory section of ``size``."""
    lay = mem["layout"]
    where = "per GPU" if lay["gpus"] > 1 else "1 GPU"
    return [
        ("memory layout", f"{lay['gpus']} GPU(s): dp {lay['dp']}, tp {lay['tp']}, pp {lay['pp']}, ep {lay['ep']}, "
                          f"zero {lay['zero']}{', sp' if lay['sp'] else ''}"),
        (f"training: weights ({mem['dtype']}, {where})", gib(mem["weights_bytes"])),
        ("training: gradients", gib(mem["gradients_bytes"])),
        ("training: AdamW moments + fp32 master", gib(mem["optimizer_bytes"])),
        (f"training: activations (batch {mem['batch']} x {mem['seq_len']}, recompute {mem['recompute']}, "
         f"{mem['attention']})", gib(mem["activations_bytes"])),
        ("training: total", gib(mem["training_total_bytes"])),
        (f"serving: weights ({mem['weights_dtype']})", gib(mem["serving_weights_bytes"])),
        (f"serving: KV cache ({mem['kv_dtype']}, batch {mem['batch']} x {mem['seq_len']})",
         gib(mem["kv_cache_bytes"])),
        ("serving: total", gib(mem["serving_total_bytes"])),
    ]


MEMORY_COLS = [  # the terms are --wide columns, so the default table fits 80 columns
    Column("name", "model", justify="left"), Column("weights_bytes", "weights", gib, wide=True),
    Column("gradients_bytes", "grads", gib, wide=True), Column("optimizer_bytes", "optimizer", gib, wide=True),
    Column("activations_bytes", "activations", gib, wide=True), Column("training_total_bytes", "train total", gib),
    Column("kv_cache_bytes", "KV cache", gib), Column("serving_total_bytes", "serve total", gib),
]
TERM_COLS = [Column("term", "term", justify="left"), Column("total_bytes", "whole model", gib),
             Column("per_gpu_bytes", "per GPU", gib), Column("rule", "rule", justify="left")]


MEMORY_KEYS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "training_total_bytes",
               "kv_cache_bytes", "serving_weights_bytes", "serving_total_bytes")
MEMORY_CSV_COLS = [Column(f"memory.{k}", f"memory.{k}") for k in MEMORY_KEYS]


def flat_memory(row: dict[str, Any]) -> dict[str, Any]:
    """The byte counts of ``row["memory"]`` as ``memory.KEY`` cells (for CSV)."""
    mem = row.get("memory") or {}
    return {f"memory.{k}": mem.get(k) for k in MEMORY_KEYS}


def emit_memory(rows: list[dict[str, Any]], fmt: str, *, wide: bool = False) -> None:
    """The memory section of ``audit``: one line per model with an architecture."""
    mems = [{"name": r["name"], **r["memory"]} for r in rows if r.get("memory")]
    if not mems:
        return
    m = mems[0]
    lay = m["layout"]
    title = (f"memory per GPU ({lay['gpus']} GPU(s): dp {lay['dp']}, tp {lay['tp']}, pp {lay['pp']}, "
             f"ep {lay['ep']}, zero {lay['zero']}): training {m['dtype']} + AdamW, batch {m['batch']} x "
             f"{m['seq_len']}, recompute {m['recompute']}, {m['attention']} attention; serving weights "
             f"{m['weights_dtype']}, KV {m['kv_dtype']}")
    if fmt == "table":
        print()
    render.emit(mems, MEMORY_COLS, fmt, title=title, wide=wide)
    for r in rows:
        if r.get("memory_error"):
            render.note(f"{r['name']}: no memory estimate: {r['memory_error']}", fmt)
