"""The memory rendering that ``size``, ``audit`` and ``fit`` share (their flags: :mod:`ffnlab.cli.memory_flags`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ffnlab import render
from ffnlab.cli.notes import say
from ffnlab.escape import one_line
from ffnlab.render import Column, gib, in_gib

if TYPE_CHECKING:
    from ffnlab.sizing.audit_row import AuditRow
    from ffnlab.sizing.config import ModelConfig
    from ffnlab.sizing.memory.engines import Engine
    from ffnlab.sizing.memory.fit import ServingFigures
    from ffnlab.sizing.memory.parallel import Layout, MemorySummary
    from ffnlab.sizing.memory.step import Alive
    from ffnlab.sizing.memory.step_figure import StepFigure
    from ffnlab.sizing.memory.workload import Workload

# what the sum of the terms is not: the terms are never all alive at once, and they leave out the
# tensors the step makes and frees (the loss's, a recomputed layer's), so the peak may be above it
TERMS_SUM_NOTE = "not all alive at once, the step's transients left out"


def note(text: str) -> None:
    """A line that tells the user a flag had no effect (stderr, so tables stay clean), said once
    the command is past its checks (:func:`ffnlab.cli.notes.say`: a refusal is the one line)."""
    say(f"note: {text}")


def engine_text(engine: Engine | None) -> str:
    """``, engine trl@1.9.0 (published peaks: ...; flags overrode: recompute)`` for a title: the
    engine, its version and the error measured for it on the published-peak suite; empty without one."""
    if engine is None:
        return ""
    over = f"; flags overrode: {', '.join(engine.overridden)}" if engine.overridden else ""
    return f", engine {engine.label} ({engine.published}{over})"


def engine_notes(engine: Engine | None) -> None:
    """The engine's note (an unknown version) on stderr."""
    if engine is not None and engine.note:
        note(engine.note)


def step_plot(cfg: ModelConfig, name: str, work: Workload, lay: Layout) -> StepFigure:
    """The figure of the step ``size`` and ``fit`` price for ``work`` on ``lay`` (its title: the
    model, the micro-batch, the layout and the engine priced)."""
    from ffnlab.sizing.memory.step_figure import step_figure, timeline_of

    what = f"{work.finetune.mode} rank {work.finetune.rank}" if work.finetune and work.adapters else "training"
    layout = lay.describe() if not work.adapters else "1 GPU (each holds the whole model)"
    engine = f", engine {work.engine.label}" if work.engine is not None else ""
    title = f"{name}: one {what} step, batch {work.batch} x {work.seq_len:,}, {layout}{engine}"
    return step_figure(timeline_of(cfg, work, lay), title=title)


def write_step_plot(path: str, cfg: ModelConfig, name: str, work: Workload, lay: Layout,
                    overwrite: bool = False) -> None:
    """``--plot FILE``: the step's figure written to ``path`` (.svg, or .png with matplotlib) via
    temp + rename, an existing file replaced only with ``overwrite``; a line on stderr says where."""
    from ffnlab.experiments.reporting.step_figure import write_figure

    fig = step_plot(cfg, name, work, lay)
    written = write_figure(path, fig, overwrite)
    print(one_line(f"wrote the step figure to {written} ({fig.peak_label})"), file=sys.stderr)


def gpus_text(n: int) -> str:
    return f"{n:,} GPU" + ("" if n == 1 else "s")


def layout_text(lay: Layout) -> str:
    return (f"{gpus_text(lay.gpus)}: dp {lay.dp}, tp {lay.tp}, pp {lay.pp}, ep {lay.ep}, "
            f"zero {lay.zero}{', sp' if lay.sp else ''}")


def memory_pairs(mem: MemorySummary) -> list[tuple[str, Any]]:
    """Rows for a key-value table: the memory section of ``size``."""
    lay = mem.layout
    where = "per GPU" if lay.gpus > 1 else "1 GPU"
    opt = "AdamW moments" if mem.optimizer == "adamw" else mem.optimizer
    opt_rule = next((r.rule for r in mem.training_terms or () if r.term == "optimizer"), "")
    master = "" if mem.dtype == "fp32" or "pure bf16" in opt_rule else " + fp32 master"
    if "pure bf16" in opt_rule:
        opt += ", bf16"
    pairs: list[tuple[str, Any]] = [
        ("memory layout", f"{layout_text(lay)} ({mem.engine}){engine_text(mem.trainer)}"),
        (f"training: weights ({mem.dtype}, {where})", gib(mem.weights_bytes)),
        (f"training: gradients ({mem.grad_dtype})", gib(mem.gradients_bytes)),
        (f"training: optimizer ({opt}{master})", gib(mem.optimizer_bytes)),
        ("training: model states (weights + gradients + optimizer)", gib(mem.states_bytes)),
        (f"training: activations (batch {mem.batch} x {mem.seq_len}, recompute {mem.recompute}, "
         f"{mem.attention}{', dropout' if mem.dropout else ''})", gib(mem.activations_bytes)),
    ]
    working = [r for r in mem.training_terms or () if r.group == "working"]
    pairs += [(f"training: {r.term}", gib(r.per_gpu_bytes)) for r in working]
    pairs += [
        (f"training: sum of the terms ({TERMS_SUM_NOTE})", gib(mem.terms_sum_bytes)),
        (f"training: peak of the step, at {mem.peak_moment}", gib(mem.peak_bytes)),
        ("training: alive at the peak", alive_text(mem.peak_alive or ())),
    ]
    if mem.host_bytes is not None:  # --offload: the states moved to host memory, per GPU's process
        why = {"none": "paged optimizer states", "activations": "--offload-acts"}.get(
            mem.offload or "none", f"--offload {mem.offload}")
        pairs += [(f"host memory ({why}), per GPU", gib(mem.host_bytes)),
                  ("host memory holds", "; ".join(f"{r.term.removeprefix('host: ')} {in_gib(r.per_gpu_bytes)}"
                                                  for r in mem.host_terms or ()) + " (GiB)")]
    pairs += [
        (f"serving: weights ({mem.weights_dtype})", gib(mem.serving_weights_bytes)),
        (f"serving: KV cache ({mem.kv_dtype}, batch {mem.batch} x {mem.seq_len})", gib(mem.kv_cache_bytes)),
        ("serving: total", gib(mem.serving_total_bytes)),
    ]
    return pairs


def alive_text(alive: Iterable[Alive]) -> str:
    """What is alive at the step's peak, largest first, in GiB (one line)."""
    ordered = sorted(alive, key=lambda a: -a.bytes)
    return "; ".join(f"{a.what} {in_gib(a.bytes)}" for a in ordered) + " (GiB)" if ordered else "-"


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
               "terms_sum_bytes", "training_total_bytes", "kv_cache_bytes", "serving_weights_bytes",
               "serving_total_bytes")
MEMORY_CSV_COLS = [Column(f"memory.{k}", f"memory.{k}") for k in MEMORY_KEYS]


def flat_memory(row: AuditRow) -> dict[str, Any]:
    """The byte counts of ``row.memory`` (a MemorySummary, or None) as ``memory.KEY`` cells (for CSV)."""
    mem = row.memory
    return {f"memory.{k}": None if mem is None else getattr(mem, k) for k in MEMORY_KEYS}


def emit_memory(rows: list[AuditRow], fmt: str, *, wide: bool = False) -> None:
    """The memory section of ``audit``: one line per model with an architecture, and one line for
    each model that has none (or cannot take the layout)."""
    found: list[tuple[str, MemorySummary]] = [(r.name, r.memory) for r in rows if r.memory is not None]
    if found:
        mems = [{"name": name, **m.as_dict()} for name, m in found]
        m = found[0][1]
        opt = "AdamW" if m.optimizer == "adamw" else m.optimizer
        title = (f"memory per GPU ({layout_text(m.layout)}, {m.engine}{engine_text(m.trainer)}): "
                 f"training {m.dtype} + {opt}, "
                 f"grads {m.grad_dtype}, batch {m.batch} x {m.seq_len}, recompute {m.recompute}, "
                 f"{m.attention} attention; train peak = the most alive at one moment of the step "
                 f"(the terms' sum is in --json); "
                 f"serving weights {m.weights_dtype}, KV {m.kv_dtype}")
        if fmt == "table":
            print()
        render.emit(mems, MEMORY_COLS, fmt, title=title, wide=wide)
    for r in rows:
        if r.memory_error:
            render.note(f"{r.name}: no memory estimate: {r.memory_error}", fmt)


def serving_lines(serving: ServingFigures, batch: int, context_limit: int | None = None) -> list[str]:
    """What fits and how fast, for a serving layout (``fit --mode serve``, ``size --gpu``). The KV
    cache's capacity (tokens, at batch 1) and the longest context the model accepts
    (``context_limit``, its config's ``max_position_embeddings``; None: not on record) are named
    apart; the concurrency at that length is capacity / limit, as vLLM's "Maximum concurrency" line."""
    cap, sp = serving.capacity, serving.speed
    each = f" (each of {serving.replicas} replicas)" if serving.replicas > 1 else ""
    tokens = cap.max_context_at_batch_1
    held = ("KV cache: every layer's sliding window caps it, so any context fits" if tokens is None
            else f"KV cache holds {tokens:,} tokens")
    if context_limit is None:
        limit = "no context limit on record"
    else:
        limit = f"the model accepts at most {context_limit:,} tokens per sequence"
        if tokens is not None:
            limit += f"; concurrency at {context_limit:,}: {tokens / context_limit:,.2f}x"
    if cap.context != context_limit or tokens is None:  # at the limit, the concurrency says it
        limit += f"; {cap.max_batch_at_context:,} sequences of {cap.context:,} tokens fit"
    lines = [f"{serving.layout}{each}: {held}; {limit}"]
    if sp:
        lines.append(f"decode roofline, batch {batch}: at most {sp.tokens_per_s_per_sequence:,.1f} tokens/s per "
                     f"sequence, {sp.tokens_per_s_total:,.0f} tokens/s per replica "
                     f"({sp.bound.replace('memory ', '')} bound: "
                     f"{gib(sp.bytes_per_step)} read per GPU per step, {sp.step_s * 1e3:,.2f} ms)")
        lines.append(f"prefill roofline, {sp.context:,} tokens: at least {sp.prefill_s * 1e3:,.1f} ms "
                     f"({sp.prefill_bound} bound)")
    return lines
