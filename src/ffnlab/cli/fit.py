"""``ffnlab fit``: the smallest parallel layout on N GPUs that holds a model (never imports torch)."""

from __future__ import annotations

from typing import Any

import typer

from ffnlab import render
from ffnlab.cli.app import FORMAT_OPTION, JSON_OPTION, SIZING, app, check_format
from ffnlab.cli.memory_view import (
    ATTENTION_OPTION,
    BATCH_OPTION,
    GROUP_SIZE_OPTION,
    KV_DTYPE_OPTION,
    RECOMPUTE_OPTION,
    TERM_COLS,
    WEIGHTS_DTYPE_OPTION,
    check_train_dtype,
    gib,
)
from ffnlab.render import Column


def _count(text: str) -> int:
    from ffnlab.sizing.plan import parse_count

    return parse_count(text)


@app.command(rich_help_panel=SIZING)
def fit(
    target: str = typer.Argument(..., help="Zoo name (see 'ffnlab zoo'), path to a config.json, or Hub id org/name[@rev]."),
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
    from ffnlab.sizing.fit import fit_all
    from ffnlab.sizing.hardware import training_time
    from ffnlab.sizing.hub import resolve_model

    check_format(fmt)
    check_train_dtype(dtype)
    name, cfg = resolve_model(target)  # a Hub id's config.json is fetched; zoo names and paths never are
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
