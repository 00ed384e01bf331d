"""``ffnlab fit`` and the memory options ``size`` and ``audit`` share (never imports torch)."""

from __future__ import annotations

from typing import Any

import typer

from ffnlab import render
from ffnlab.cli.app import FORMAT_OPTION, JSON_OPTION, SIZING, app, check_format
from ffnlab.errors import FfnlabError, require
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


MEMORY_COLS = [
    Column("name", "model", justify="left"), Column("weights_bytes", "weights", gib),
    Column("gradients_bytes", "grads", gib), Column("optimizer_bytes", "optimizer", gib),
    Column("activations_bytes", "activations", gib), Column("training_total_bytes", "train total", gib),
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


def emit_memory(rows: list[dict[str, Any]], fmt: str) -> None:
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
    render.emit(mems, MEMORY_COLS, fmt, title=title)
    for r in rows:
        if r.get("memory_error"):
            print(f"{r['name']}: no memory estimate: {r['memory_error']}")


def _count(text: str) -> int:
    from ffnlab.sizing.plan import parse_count

    return parse_count(text)


@app.command(rich_help_panel=SIZING)
def fit(
    target: str = typer.Argument(..., help="Zoo name (see 'ffnlab zoo') or path to a config.json."),
    gpus: int = typer.Option(8, "--gpus", help="GPUs available."),
    gpu: str = typer.Option(None, "--gpu", help="Accelerator: A100 H100 H200 B200 MI300X (default: compare all)."),
    mode: str = typer.Option("train", "--mode", help="train | serve."),
    seq_len: int = typer.Option(2048, "--seq-len", help="Sequence length (training) or context (serving)."),
    batch: int = BATCH_OPTION,
    recompute: str = RECOMPUTE_OPTION,
    attention: str = ATTENTION_OPTION,
    dtype: str = typer.Option("bf16", "--dtype", help="Training dtype (weights, gradients, activations)."),
    kv_dtype: str = KV_DTYPE_OPTION,
    weights_dtype: str = WEIGHTS_DTYPE_OPTION,
    group_size: int = GROUP_SIZE_OPTION,
    mla: str = typer.Option("latent", "--mla-cache", help="MLA KV cache: latent (vLLM/SGLang) | expanded."),
    tokens: str = typer.Option(None, "--tokens", help="Training token budget for the time estimate, e.g. 2T."),
    mfu: float = typer.Option(0.4, "--mfu", help="Model FLOPs utilisation for the time estimate."),
    precision: str = typer.Option("bf16", "--precision", help="Tensor-core peak used for time: bf16 | fp8."),
    usable: float = typer.Option(0.9, "--usable", help="Share of GPU memory a layout may use."),
    max_tp: int = typer.Option(8, "--max-tp", help="Largest tensor-parallel group (one node)."),
    top: int = typer.Option(8, "--top", help="Layouts to list with --gpu."),
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
) -> None:
    """Smallest parallel layout on N GPUs that holds a model for training or serving, and time to train."""
    from ffnlab.sizing.fit import fit as run_fit
    from ffnlab.sizing.fit import fit_all, resolve_config
    from ffnlab.sizing.hardware import training_time

    check_format(fmt)
    check_train_dtype(dtype)
    name, cfg = resolve_config(target)
    if cfg is None:
        raise FfnlabError(f"{name} has no published architecture to size")
    n_tokens = _count(tokens) if tokens else None
    opts: dict[str, Any] = dict(mode=mode, seq_len=seq_len, batch=batch, dtype=dtype, recompute=recompute,
                                attention=attention, kv_dtype=kv_dtype, weights_dtype=weights_dtype,
                                group_size=group_size, mla=mla, usable=usable, max_tp=max_tp)
    what = (f"{name}, {mode}, {gpus} GPUs, batch {batch} x {seq_len}"
            + (f", recompute {recompute}" if mode == "train" else f", KV {kv_dtype or dtype}"))
    if gpu is None:
        rows = fit_all(cfg, gpus=gpus, tokens=n_tokens, mfu=mfu, precision=precision, **opts)
        if as_json:
            render.emit_json({"model": name, "gpus": gpus, **opts, "tokens": n_tokens, "mfu": mfu,
                              "precision": precision, "accelerators": rows})
            return
        cols = [Column("accelerator", "GPU", justify="left"), Column("fits", "fits", lambda x: "yes" if x else "no"),
                Column("layout", "smallest layout", justify="left"),
                Column("per_gpu_bytes", "per GPU (or least needed)", gib), Column("usable_bytes", "usable", gib)]
        if n_tokens:
            cols += [Column("days", "days", lambda x: "-" if x is None else f"{x:,.1f}"),
                     Column("gpu_hours", "GPU-hours", lambda x: "-" if x is None else f"{x:,.0f}")]
        title = what + (f"; time for {tokens} tokens at MFU {mfu:.0%} ({precision} dense peak)" if n_tokens else "")
        render.emit(rows, cols, fmt, title=title)
        return
    res = run_fit(cfg, gpus=gpus, accelerator=gpu, **opts)
    if n_tokens and mode == "train":
        res["time"] = training_time(cfg, tokens=n_tokens, gpus=gpus, accelerator=gpu, seq_len=seq_len, mfu=mfu,
                                    precision=precision).as_dict()
    if as_json:
        render.emit_json({"model": name, **res})
        return
    rows = [{**r["terms"], "describe": r["describe"], "per_gpu_bytes": r["per_gpu_bytes"]}
            for r in res["candidates"][:top]]
    if not rows:
        print(f"{name} does not fit on {gpus} x {res['accelerator']} for {mode} at these settings: the least any "
              f"layout needs is {gib(res['smallest_need_bytes'])} per GPU, {gib(res['usable_bytes'])} usable")
        return
    keys = ("weights", "gradients", "optimizer", "activations") if mode == "train" else ("weights", "kv_cache")
    cols = [Column("describe", "layout", justify="left"), *(Column(k, k, gib) for k in keys),
            Column("per_gpu_bytes", "per GPU", gib)]
    render.emit(rows, cols, fmt, title=f"{what} on {res['accelerator']} ({gib(res['usable_bytes'])} usable): "
                                       "layouts that fit, smallest first")
    best = res["best"]
    render.emit(best["table"], TERM_COLS, fmt, title=f"{best['describe']}: each term and its rule")
    if "time" in res:
        t = res["time"]
        print(f"time for {tokens} tokens at MFU {mfu:.0%}: {t['days']:,.1f} days, {t['gpu_hours']:,.0f} GPU-hours "
              f"({t['flops']:.3g} FLOPs)")
