"""The memory options and memory rendering that ``size``, ``audit`` and ``fit`` share (no commands here)."""

from __future__ import annotations

import sys
from typing import Any

import typer

from ffnlab import render
from ffnlab.errors import require
from ffnlab.render import Column
from ffnlab.validation import choice, integer

# -- options shared with size and audit ----------------------------------------------------------
BATCH_OPTION = typer.Option(1, "--batch", help="Sequences per micro-batch (training) or concurrent sequences (serving).")
RECOMPUTE_OPTION = typer.Option("none", "--recompute", help="Activation recomputation: none | selective | full.")
ATTENTION_OPTION = typer.Option("fused", "--attention", help="Attention implementation: fused (flash) | eager (s x s kept).")
KV_DTYPE_OPTION = typer.Option(None, "--kv-dtype", help="KV-cache dtype: bf16 fp16 fp32 fp8 int8 int4 (default --dtype).")
WEIGHTS_DTYPE_OPTION = typer.Option(
    None, "--weights-dtype",
    help="Serving weights: bf16 fp16 fp32, or a quantised format: awq gptq gptq-3bit gptq-8bit fp8 (per tensor) "
         "fp8-channel fp8-block128 nf4 mxfp4 int8 int4 (default --dtype).")
GROUP_SIZE_OPTION = typer.Option(None, "--group-size",
                                 help="Quantisation group size for awq, gptq, int8, int4 (default 128; 0 = one group "
                                      "over the whole input).")
DP_OPTION = typer.Option(1, "--dp", help="Data-parallel GPUs.")
TP_OPTION = typer.Option(1, "--tp", help="Tensor-parallel GPUs.")
PP_OPTION = typer.Option(1, "--pp", help="Pipeline stages.")
EP_OPTION = typer.Option(1, "--ep", help="Expert-parallel GPUs (MoE; divides --dp).")
ZERO_OPTION = typer.Option(0, "--zero", help="ZeRO stage 0-3 (0 = DDP, 3 = --zero3 engine).")
SP_OPTION = typer.Option(False, "--sp/--no-sp", help="Sequence parallelism (with --tp).")
GRAD_DTYPE_OPTION = typer.Option(None, "--grad-dtype",
                                 help="Gradient dtype: bf16 fp16 fp32 (default --dtype; fp32 = Megatron-style accumulation).")
OPTIMIZER_OPTION = typer.Option("adamw", "--optimizer",
                                help="Optimizer state: adamw (fp32 moments) | adam8bit | adafactor | sgd-momentum | sgd.")
DROPOUT_OPTION = typer.Option(False, "--dropout/--no-dropout", help="Training with dropout: count its masks.")
ZERO3_OPTION = typer.Option("fsdp", "--zero3", help="What ZeRO stage 3 runs as: fsdp (PyTorch fully_shard) | deepspeed.")
PREFETCH_OPTION = typer.Option(1, "--prefetch", help="FSDP: layers whose all-gather runs ahead of use (FSDP2 default 1).")
RESHARD_OPTION = typer.Option(True, "--reshard-after-forward/--no-reshard-after-forward",
                              help="FSDP: free a layer's gathered weights after its forward (off = SHARD_GRAD_OP).")
LOSS_OPTION = typer.Option("full", "--loss", help="Loss implementation: full (cross-entropy over all logits: "
                                                  "transformers, torchtitan, nanoGPT) | chunked (torchtune) | fused "
                                                  "(fused linear cross-entropy, Liger).")
LOSS_CHUNKS_OPTION = typer.Option(8, "--loss-chunks", help="Chunks of --loss chunked (torchtune's default 8).")
OPTIMIZER_IMPL_OPTION = typer.Option("foreach", "--optimizer-impl",
                                     help="PyTorch optimizer implementation: foreach (default on GPU) | fused | for-loop.")
GRAD_ACCUM_OPTION = typer.Option(1, "--grad-accum", help="Micro-batches per optimizer step (gradients stay alive "
                                                        "across them).")
RECOMPUTE_EVERY_OPTION = typer.Option(1, "--recompute-every",
                                      help="With --recompute full: checkpoint every N-th layer only (torchtitan's "
                                           "selective_ac_option N).")
MAX_DEGREE = 2**40  # a parallel degree or batch past any cluster
MAX_SEQ_LEN = 2**40  # as size caps --seq-len


def memory_options(*, batch: int, recompute: str, attention: str, kv_dtype: str | None,
                   weights_dtype: str | None, group_size: int | None, dp: int, tp: int, pp: int, ep: int, zero: int,
                   sp: bool, grad_dtype: str | None = None, optimizer: str = "adamw", dropout: bool = False,
                   zero3: str = "fsdp", prefetch: int = 1, reshard_after_forward: bool = True,
                   loss: str = "full", loss_chunks: int = 8, optimizer_impl: str = "foreach", grad_accum: int = 1,
                   recompute_every: int = 1) -> dict[str, Any]:
    """Keyword arguments of :func:`ffnlab.sizing.parallel.memory_summary` from the CLI flags,
    each checked here, before any model is read (so every model gets the same answer)."""
    from ffnlab.sizing.byte_rules import GRAD_DTYPES, KV_DTYPES, OPTIMIZERS
    from ffnlab.sizing.memory import ATTENTION, RECOMPUTE
    from ffnlab.sizing.parallel import ZERO_STAGES, Layout
    from ffnlab.sizing.quant import WEIGHT_FORMATS
    from ffnlab.sizing.sharding import Sharding
    from ffnlab.sizing.step_memory import LOSSES, OPTIMIZER_IMPLS, StepOptions

    integer(batch, "--batch", 1, MAX_DEGREE)
    choice(loss, "--loss", LOSSES)
    choice(optimizer_impl, "--optimizer-impl", OPTIMIZER_IMPLS)
    integer(loss_chunks, "--loss-chunks", 1, MAX_DEGREE)
    integer(grad_accum, "--grad-accum", 1, MAX_DEGREE)
    integer(recompute_every, "--recompute-every", 1, MAX_DEGREE)
    for name, value in (("--dp", dp), ("--tp", tp), ("--pp", pp), ("--ep", ep)):
        integer(value, name, 1, MAX_DEGREE)
    require(zero in ZERO_STAGES, f"--zero must be 0, 1, 2 or 3, got {zero}")
    choice(recompute, "--recompute", RECOMPUTE)
    choice(attention, "--attention", ATTENTION)
    choice(optimizer, "--optimizer", OPTIMIZERS)
    if kv_dtype is not None:
        choice(kv_dtype, "--kv-dtype", KV_DTYPES)
    if weights_dtype is not None:
        choice(weights_dtype, "--weights-dtype", WEIGHT_FORMATS)
    if grad_dtype is not None:
        choice(grad_dtype, "--grad-dtype", GRAD_DTYPES)
    if group_size is not None:
        integer(group_size, "--group-size", 0, 2**20)
    require(not sp or tp > 1, "sequence parallelism (--sp) needs --tp > 1")
    sharding = Sharding(zero3=zero3, prefetch=prefetch, reshard_after_forward=reshard_after_forward)
    sharding.check()
    return {"batch": batch, "recompute": recompute, "attention": attention, "kv_dtype": kv_dtype,
            "weights_dtype": weights_dtype, "group_size": group_size, "grad_dtype": grad_dtype,
            "optimizer": optimizer, "dropout": dropout, "sharding": sharding,
            "step": StepOptions(loss=loss, loss_chunks=loss_chunks, optimizer_impl=optimizer_impl,
                                grad_accum=grad_accum, recompute_every=recompute_every),
            "lay": Layout(dp=dp, tp=tp, pp=pp, ep=ep, zero=zero, sp=sp)}


def check_train_dtype(dtype: str) -> str:
    from ffnlab.sizing.byte_rules import TRAIN_DTYPES

    require(dtype in TRAIN_DTYPES, f"--dtype must be one of {', '.join(TRAIN_DTYPES)} for the memory estimate, got {dtype!r}")
    return dtype


def check_seq_len(seq_len: int) -> int:
    return integer(seq_len, "--seq-len", 1, MAX_SEQ_LEN)


def note(text: str) -> None:
    """A line that tells the user a flag had no effect (stderr, so tables stay clean)."""
    print(f"note: {text}", file=sys.stderr)


def gib(n: float | None) -> str:
    return "-" if n is None else f"{n / 2**30:,.2f} GiB"


def gpus_text(n: int) -> str:
    return f"{n:,} GPU" + ("" if n == 1 else "s")


def layout_text(lay: dict[str, Any]) -> str:
    return (f"{gpus_text(lay['gpus'])}: dp {lay['dp']}, tp {lay['tp']}, pp {lay['pp']}, ep {lay['ep']}, "
            f"zero {lay['zero']}{', sp' if lay['sp'] else ''}")


def memory_pairs(mem: dict[str, Any]) -> list[tuple[str, Any]]:
    """Rows for a key-value table: the memory section of ``size``."""
    lay = mem["layout"]
    where = "per GPU" if lay["gpus"] > 1 else "1 GPU"
    opt = "AdamW moments" if mem["optimizer"] == "adamw" else mem["optimizer"]
    master = "" if mem["dtype"] == "fp32" else " + fp32 master"
    pairs: list[tuple[str, Any]] = [
        ("memory layout", f"{layout_text(lay)} ({mem['engine']})"),
        (f"training: weights ({mem['dtype']}, {where})", gib(mem["weights_bytes"])),
        (f"training: gradients ({mem['grad_dtype']})", gib(mem["gradients_bytes"])),
        (f"training: optimizer ({opt}{master})", gib(mem["optimizer_bytes"])),
        ("training: model states (weights + gradients + optimizer)", gib(mem["states_bytes"])),
        (f"training: activations (batch {mem['batch']} x {mem['seq_len']}, recompute {mem['recompute']}, "
         f"{mem['attention']}{', dropout' if mem['dropout'] else ''})", gib(mem["activations_bytes"])),
    ]
    working = [r for r in mem["training_terms"] if r["group"] == "working"]
    pairs += [(f"training: {r['term']}", gib(r["per_gpu_bytes"])) for r in working]
    pairs += [
        ("training: sum of the terms (not all alive at once)", gib(mem["terms_sum_bytes"])),
        (f"training: peak of the step, at {mem['peak_moment']}", gib(mem["peak_bytes"])),
        ("training: alive at the peak", peak_alive_text(mem)),
        (f"serving: weights ({mem['weights_dtype']})", gib(mem["serving_weights_bytes"])),
        (f"serving: KV cache ({mem['kv_dtype']}, batch {mem['batch']} x {mem['seq_len']})",
         gib(mem["kv_cache_bytes"])),
        ("serving: total", gib(mem["serving_total_bytes"])),
    ]
    return pairs


def peak_alive_text(mem: dict[str, Any]) -> str:
    """What is alive at the step's peak, largest first, in GiB (one line)."""
    alive = sorted(mem.get("peak_alive") or [], key=lambda a: -a["bytes"])
    return "; ".join(f"{a['what']} {a['bytes'] / 2**30:,.2f}" for a in alive) + " (GiB)" if alive else "-"


MEMORY_COLS = [  # the terms are --wide columns, so the default table fits 80 columns
    Column("name", "model", justify="left"), Column("weights_bytes", "weights", gib, wide=True),
    Column("gradients_bytes", "grads", gib, wide=True), Column("optimizer_bytes", "optimizer", gib, wide=True),
    Column("activations_bytes", "activations", gib, wide=True), Column("working_bytes", "buffers", gib, wide=True),
    Column("training_total_bytes", "train peak", gib),
    Column("kv_cache_bytes", "KV cache", gib), Column("serving_total_bytes", "serve total", gib),
]


def _term_name(row: dict[str, Any]) -> str:
    return row["term"] + (" *" if row.get("estimate") else "")


TERM_COLS = [Column("term", "term (* estimate)", justify="left"), Column("total_bytes", "whole model", gib),
             Column("per_gpu_bytes", "per GPU", gib), Column("rule", "rule", justify="left")]


def term_rows(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-term table with estimates marked and the whole-model column blank for buffers."""
    return [{**r, "term": _term_name(r), "total_bytes": None if r.get("group") == "working" else r["total_bytes"]}
            for r in table]


MEMORY_KEYS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "working_bytes",
               "terms_sum_bytes", "training_total_bytes", "kv_cache_bytes", "serving_weights_bytes", "serving_total_bytes")
MEMORY_CSV_COLS = [Column(f"memory.{k}", f"memory.{k}") for k in MEMORY_KEYS]


def flat_memory(row: dict[str, Any]) -> dict[str, Any]:
    """The byte counts of ``row["memory"]`` as ``memory.KEY`` cells (for CSV)."""
    mem = row.get("memory") or {}
    return {f"memory.{k}": mem.get(k) for k in MEMORY_KEYS}


def emit_memory(rows: list[dict[str, Any]], fmt: str, *, wide: bool = False) -> None:
    """The memory section of ``audit``: one line per model with an architecture, and one line for
    each model that has none (or cannot take the layout)."""
    mems = [{"name": r["name"], **r["memory"]} for r in rows if r.get("memory")]
    if mems:
        m = mems[0]
        opt = "AdamW" if m["optimizer"] == "adamw" else m["optimizer"]
        title = (f"memory per GPU ({layout_text(m['layout'])}, {m['engine']}): training {m['dtype']} + {opt}, "
                 f"grads {m['grad_dtype']}, batch {m['batch']} x {m['seq_len']}, recompute {m['recompute']}, "
                 f"{m['attention']} attention; train peak = the most alive at one moment of the step "
                 f"(the terms' sum is in --json); "
                 f"serving weights {m['weights_dtype']}, KV {m['kv_dtype']}")
        if fmt == "table":
            print()
        render.emit(mems, MEMORY_COLS, fmt, title=title, wide=wide)
    for r in rows:
        if r.get("memory_error"):
            render.note(f"{r['name']}: no memory estimate: {r['memory_error']}", fmt)


# the value each whole-model flag of ``size`` has when it is not given
WHOLE_MODEL_DEFAULTS: dict[str, Any] = {
    "dtype": "bf16", "batch": 1, "recompute": "none", "attention": "fused", "kv_dtype": None, "weights_dtype": None,
    "group_size": None, "dp": 1, "tp": 1, "pp": 1, "ep": 1, "zero": 0, "sp": False, "grad_dtype": None,
    "optimizer": "adamw", "dropout": False, "zero3": "fsdp", "prefetch": 1, "reshard_after_forward": True,
    "n_heads": None, "n_kv_heads": None, "loss": "full", "loss_chunks": 8, "optimizer_impl": "foreach",
    "grad_accum": 1, "recompute_every": 1,
}


def refuse_memory_flags_without_model(**given: Any) -> None:
    """``size`` without ``--n-layers`` sizes one FFN: refuse the flags that only a whole model uses."""
    used = [k for k, v in given.items() if v != WHOLE_MODEL_DEFAULTS[k]]
    flags = ", ".join("--" + k.replace("_", "-") for k in used)
    require(not used, f"{flags} size{'s' if len(used) == 1 else ''} a whole model: give --n-layers "
                      "(without it, size gives the FFN width and its parameters only)")
