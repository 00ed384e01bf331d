"""``ffnlab fit``: the smallest parallel layout on N GPUs that holds a model (never imports torch)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import typer

from ffnlab import render
from ffnlab.cli.app import (
    ENGINE_CONFIG_OPTION,
    FORMAT_OPTION,
    JSON_OPTION,
    OVERWRITE_PLOT_OPTION,
    PLOT_OPTION,
    SIZING,
    TIMEOUT_OPTION,
    WIDE_OPTION,
    CountError,
    app,
    check_format,
    counted,
)
from ffnlab.cli.memory_flags import (
    LAYOUT,
    MemoryFlags,
    apply_engine_config,
    memory_flags,
    split_engine_config,
)
from ffnlab.cli.memory_view import (
    TERM_COLS,
    TERMS_SUM_NOTE,
    alive_text,
    engine_notes,
    engine_text,
    gpus_text,
    note,
    serving_lines,
    term_rows,
    write_step_plot,
)
from ffnlab.cli.serving_engine import (
    BLOCK_SIZE,
    ENFORCE_EAGER,
    ENGINE_PANEL,
    GPU_MEMORY_UTILIZATION,
    MAX_NUM_BATCHED_TOKENS,
    MAX_NUM_SEQS,
    MEM_FRACTION_STATIC,
    EngineFlags,
)
from ffnlab.errors import require
from ffnlab.escape import markdown, one_line
from ffnlab.netwait import set_timeout
from ffnlab.render import Column, gib
from ffnlab.sizing.engine_spec import engine_name
from ffnlab.sizing.memory.hardware import load_accelerators
from ffnlab.validation import count, integer, number, show

if TYPE_CHECKING:
    from ffnlab.sizing.config import ModelConfig
    from ffnlab.sizing.memory.fit import AcceleratorFit, FitResult, Suggestion
    from ffnlab.sizing.memory.sharding import Sharding
    from ffnlab.sizing.memory.workload import Workload
MAX_TOKENS = 10**30  # a quintillion times today's largest runs; keeps the time arithmetic finite
MAX_TOP = 10_000
MIN_MFU = 1e-3  # 0.1%: with MAX_TOKENS, keeps every training time finite (1e-300 made it infinite)
EXIT_NO_FIT = 1  # fit's status when nothing fits (0: something does; 2: bad input)


def gpus_or_auto(value: Any) -> str:
    """``--gpus``: ``auto``, or a count read as every count flag is (``8``, ``1K`` = 1,024)."""
    if str(value).strip().lower() == "auto":
        return "auto"
    try:
        return str(counted("--gpus")(value))
    except CountError as e:  # every count flag's line, with auto among the forms
        said, _, forms = e.message.rpartition("; expected ")
        raise CountError(f"{said}; expected a whole number of GPUs or auto: {forms}") from None


gpus_or_auto.__name__ = "count"  # <count> in --help, whose text says "or auto" (<count|auto> narrowed every help)


def tokens_text(value: Any) -> str:
    """``--tokens``: a total read as every count flag is, decimal (``15T`` = 15e12; one error line
    naming the flag, :class:`CountError`), kept as written for the titles (``time for 15T
    tokens``); echoed by :func:`_count` only when a training time uses it."""
    try:
        count(value, "--tokens", total=True)
    except ValueError as e:
        raise CountError(str(e)) from None
    return str(value).strip()


tokens_text.__name__ = "count"  # <count>, as every count flag


def _count(text: str) -> int:
    from ffnlab.sizing.plan import parse_count

    n = parse_count(text, "--tokens")  # a total: 15T is 15e12 (the one count parser, decimal)
    require(n <= MAX_TOKENS, f"--tokens must be at most 1e30, got {show(text)}")
    if not text.strip().isdigit():
        note(f"--tokens {text.strip()} read as {n:,}")
    return n


def _mfu_line(mfu: float | None) -> str:
    from ffnlab.sizing.memory.hardware import DEFAULT_MFU, published_mfu

    if mfu is not None:
        return f"MFU {mfu:.0%} (--mfu)"
    pub = "; ".join(f"{r['model']} {r['mfu']} on {r['hardware']} ({r['cite']})" for r in published_mfu())
    return f"MFU {DEFAULT_MFU:.0%} is an assumption, not a measurement (--mfu to change it); published: {pub}"


def _precision_line(precision: str) -> str:
    if precision == "fp8":
        return ("fp8 peak for the blocks' linear layers only; attention scores and the LM head at the bf16 peak "
                "(fp8 recipes keep them in bf16)")
    return "bf16 dense tensor-core peak"


# the listed cards, from data/accelerators.json, so the help cannot fall behind the data
GPU_HELP = ("Accelerator: " + " ".join(a.name for a in load_accelerators())
            + " (A100 is the 80GB; aliases too, e.g. rtx-a6000; default: compare all).")


@dataclass(frozen=True)
class FitAsk:
    """What ``fit`` is asked beyond the workload: the mode, the search's bounds and the ZeRO-3
    engine of every layout it tries (the keywords :func:`ffnlab.sizing.memory.fit.fit`,
    ``suggestions`` and ``fit_all`` share), passed on by name."""

    mode: str
    reserve_gib: float | None
    max_tp: int
    sharding: Sharding
    context_limit: int | None

    def fit(self, cfg: ModelConfig, work: Workload, gpus: int, accelerator: Any) -> FitResult:
        from ffnlab.sizing.memory.fit import fit

        return fit(cfg, work, gpus=gpus, accelerator=accelerator, mode=self.mode, reserve_gib=self.reserve_gib,
                   max_tp=self.max_tp, sharding=self.sharding, context_limit=self.context_limit)

    def suggestions(self, cfg: ModelConfig, work: Workload, gpus: int, accelerator: Any) -> list[Suggestion]:
        from ffnlab.sizing.memory.fit import suggestions

        return suggestions(cfg, work, gpus=gpus, accelerator=accelerator, mode=self.mode,
                           reserve_gib=self.reserve_gib, max_tp=self.max_tp, sharding=self.sharding,
                           context_limit=self.context_limit)

    def fit_all(self, cfg: ModelConfig, work: Workload, gpus: int, tokens: int | None, mfu: float | None,
                precision: str) -> list[AcceleratorFit]:
        from ffnlab.sizing.memory.fit import fit_all

        return fit_all(cfg, work, gpus=gpus, tokens=tokens, mfu=mfu, precision=precision, mode=self.mode,
                       reserve_gib=self.reserve_gib, max_tp=self.max_tp, sharding=self.sharding,
                       context_limit=self.context_limit)


def _print_suggestions(res: FitResult, fmt: str) -> None:
    """What would change a "no": each one-setting change tried, or that none of them applies."""
    lines = [_suggestion_line(x) for x in res.suggestions or ()]
    _print_lines("what would change it (one setting at a time):",
                 lines or ["none of the one-setting changes fit tries applies to these settings"], fmt)


def _print_lines(title: str, lines: list[str], fmt: str) -> None:
    """The assumptions under the tables (not in CSV, which stays one table), each one line with its
    controls shown as escapes, as the tables show theirs: a launch line's words or a file's name
    among them never clear the screen or fake a line."""
    if fmt == "csv":
        return
    if fmt == "markdown":
        print(f"\n**{markdown(title)}**\n")
        for line in lines:
            print(f"- {markdown(line)}")
        return
    import textwrap

    print(one_line(title))
    width = max(40, render.table_width())
    for line in lines:  # wrapped to the terminal, as the tables are
        print(textwrap.fill(one_line(line), width, initial_indent="  - ", subsequent_indent="    "))


@app.command(rich_help_panel=SIZING)
@memory_flags(without=LAYOUT)
def fit(
    targets: list[str] = typer.Argument(..., help="Zoo name (see 'ffnlab zoo'), path to a config.json, or Hub id "
                                                  "org/name[@rev]; several: one table, one row each (needs --gpu)."),
    gpus_flag: str = typer.Option("8", "--gpus", parser=gpus_or_auto,
                                  help="GPUs available, or auto: the fewest GPUs of --gpu that fit "
                                                      "(powers of two up to --max-gpus)."),
    max_gpus: int = typer.Option(1024, "--max-gpus", parser=counted("--max-gpus"),
                                 help="With --gpus auto: the most GPUs to try; with --target-tokens-per-s: the "
                                      "most GPUs the target may take (more: not reached, exit 1)."),
    gpu: str = typer.Option(None, "--gpu", help=GPU_HELP),
    gpu_memory: float = typer.Option(None, "--gpu-memory", help="Any other card: its usable memory in GiB (with "
                                                                "--gpu, that card's peaks for the time estimate)."),
    mode: str = typer.Option("train", "--mode", help="train | serve."),
    seq_len: int = typer.Option(2048, "--seq-len", parser=counted("--seq-len"),
                                help="Sequence length (training) or context (serving)."),
    dtype: str = typer.Option("bf16", "--dtype", help="Training dtype (weights, activations)."),
    mem: MemoryFlags = MemoryFlags(),  # the memory flags (memory_flags puts them here)
    mla: str = typer.Option("latent", "--mla-cache", help="MLA KV cache: latent (vLLM/SGLang) | expanded."),
    tokens: str = typer.Option(None, "--tokens", parser=tokens_text,
                               help="Training token budget for the time estimate, e.g. 2T."),
    mfu: float = typer.Option(None, "--mfu", help="Model FLOPs utilisation for the time estimate (default: 40%, "
                                                  "an assumption)."),
    precision: str = typer.Option("bf16", "--precision", help="Tensor-core peak used for time: bf16 | fp8."),
    reserve: float = typer.Option(None, "--reserve", help="GiB per GPU held back for what no term counts (CUDA "
                                                          "context, NCCL, fragmentation; default 10% of memory)."),
    max_tp: int = typer.Option(8, "--max-tp", parser=counted("--max-tp"),
                               help="Largest tensor-parallel group (one node)."),
    top: int = typer.Option(8, "--top", parser=counted("--top"), help="Layouts to list with --gpu."),
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
    max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS,
    max_num_seqs: int = MAX_NUM_SEQS,
    block_size: int = BLOCK_SIZE,
    enforce_eager: bool = ENFORCE_EAGER,
    mem_fraction_static: float = MEM_FRACTION_STATIC,
    engine_config: str = ENGINE_CONFIG_OPTION,
    plot: str = PLOT_OPTION,
    overwrite: bool = OVERWRITE_PLOT_OPTION,
    target_tokens_per_s: float = typer.Option(None, "--target-tokens-per-s", metavar="N",
                                              rich_help_panel=ENGINE_PANEL,
                                              help="With --mode serve: the GPUs that reach N tokens/s of decode at "
                                                   "--batch, at the measured fraction of the roofline bound (at "
                                                   "most --max-gpus of them: more is not reached, exit 1)."),
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Smallest parallel layout on N GPUs that holds a model for training or serving, and time to train.

    Several models (fit A B C --gpu H100) are compared in one table on one kind of GPU.

    Exit status: 0 when a layout fits (on some accelerator, when comparing them; for every model,
    when comparing models), 1 when nothing fits (said as borderline when it would fit only inside
    the reserve) or --target-tokens-per-s needs more than --max-gpus GPUs, 2 on bad input."""
    set_timeout(timeout)
    from ffnlab.sizing.memory.fit import MAX_GPUS, context_limit
    from ffnlab.sizing.models import resolve

    auto = gpus_flag == "auto"
    require(auto or gpus_flag.isdigit(), f"--gpus must be a whole number of GPUs or auto, got {show(gpus_flag)}")
    if auto:
        require(gpu is not None or gpu_memory is not None,
                "--gpus auto searches one kind of GPU: give --gpu (or --gpu-memory)")
    if auto or target_tokens_per_s is not None:  # the GPUs either may take
        integer(max_gpus, "--max-gpus", 1, MAX_GPUS)
    gpus = 1 if auto else int(gpus_flag)
    _check_flags(fmt, gpus, max_tp, top, mode, precision, mfu, reserve)
    serving_config, trainer_config = split_engine_config(engine_config)
    knobs = EngineFlags.of(serving_config, gpu_memory_utilization=gpu_memory_utilization,
                           max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
                           block_size=block_size, enforce_eager=enforce_eager,
                           mem_fraction_static=mem_fraction_static)
    knobs.check()
    serving_engine = None
    if mode == "serve":  # --engine names the serving engine
        serving_engine = mem.engine if "engine" in mem.given else None  # else the serving default
        mem = replace(mem, engine=MemoryFlags().engine)
    if target_tokens_per_s is not None:
        number(target_tokens_per_s, "--target-tokens-per-s", 0, None)
        require(target_tokens_per_s > 0, "--target-tokens-per-s must be > 0")
        require(mode == "serve", "--target-tokens-per-s sizes serving: give --mode serve")
        require(gpu is not None, "--target-tokens-per-s needs --gpu (a card with a bandwidth on record)")
    if mode != "serve" and knobs.given():
        note("the serving engine's flags (--gpu-memory-utilization ... --engine-config) apply with --mode serve; "
             "ignored")
    require(plot is not None or not overwrite, "--overwrite replaces an existing --plot FILE: give --plot")
    if plot is not None:
        from ffnlab.experiments.reporting.step_figure import check_plot_path

        require(mode == "train", "--plot draws a training step: not with --mode serve")
        require(gpu is not None or gpu_memory is not None, "--plot draws the layout that fits one kind of GPU: "
                                                           "give --gpu (or --gpu-memory)")
        check_plot_path(plot, overwrite)
    mem, seq_len, dtype = apply_engine_config(mem, trainer_config, seq_len=seq_len, dtype=dtype, layout=False)
    work = mem.workload(seq_len=seq_len, dtype=dtype, mla=mla)
    sharding = mem.layout().sharding
    require(work.offload == "none", f"fit searches layouts without CPU offload: price --offload {work.offload} with "
                                    "size --dp N --zero Z")
    ft = work.finetune
    if ft is not None:
        require(mode == "train", f"--finetune {ft.mode} sizes a training step: not with --mode serve")
        require(tokens is None, f"--tokens gives a pretraining time (6 x params FLOPs per token): not modelled "
                                f"with --finetune {ft.mode}")
    batch, recompute, kv_dtype = work.batch, work.recompute, work.kv_dtype
    if len(targets) > 1:
        require(gpu is not None or gpu_memory is not None,
                "several models are compared on one kind of GPU: give --gpu (or --gpu-memory)")
        require(not auto, "--gpus auto searches for one model: give a GPU count to compare several")
        require(plot is None, "--plot draws one model's step: give one model")
        require(target_tokens_per_s is None, "--target-tokens-per-s sizes one model: give one model")
        ask = FitAsk(mode=mode, reserve_gib=reserve, max_tp=max_tp, sharding=sharding, context_limit=None)
        all_fit = _compare_models(targets, gpus, gpu, gpu_memory, tokens, mfu, precision, work, ask,
                                  as_json=as_json, fmt=fmt, wide=wide,
                                  engine=(serving_engine, knobs) if mode == "serve" else None)
        if not all_fit:
            raise typer.Exit(EXIT_NO_FIT)
        return
    model = resolve(targets[0])  # a Hub id's config.json is fetched; zoo names and paths never are
    name, cfg, raw = model.name, model.sized(), model.raw
    n_tokens = _count(tokens) if tokens else None
    if mfu is not None and (n_tokens is None or mode == "serve"):
        note("--mfu is used only for the training time, which needs --tokens and --mode train; ignored")
    if tokens and mode == "serve":
        note("--tokens gives a training time; ignored with --mode serve")
    ask = FitAsk(mode=mode, reserve_gib=reserve, max_tp=max_tp, sharding=sharding, context_limit=context_limit(raw))
    tried: list[int] = []
    if auto:  # powers of two from one GPU; the first that fits, else max_gpus
        acc = _accelerator(gpu, gpu_memory)
        while gpus < max_gpus and ask.fit(cfg, work, gpus, acc).best is None:
            tried.append(gpus)
            gpus = min(2 * gpus, max_gpus)
        tried.append(gpus)
    what = (f"{name}, " + (f"{ft.mode} fine-tuning (rank {ft.rank})" if ft else mode) + f", {gpus_text(gpus)}, "
            f"batch {batch} x {seq_len}"
            + (f", recompute {recompute}" if mode == "train" else f", KV {kv_dtype or dtype}"))
    if mode == "train":
        what += engine_text(work.engine)
        engine_notes(work.engine)
    if gpu is None and gpu_memory is None:
        if not _compare(cfg, name, what, gpus, n_tokens, mfu, precision, tokens, work, ask, as_json, fmt, wide,
                        engine=(serving_engine, knobs) if mode == "serve" else None):
            raise typer.Exit(EXIT_NO_FIT)
        return
    timed = bool(n_tokens) and mode == "train"
    res = _fit_on(cfg, gpus, gpu, gpu_memory, n_tokens if timed else None, mfu, precision, work, ask)
    search = {"gpus_search": {"tried": tried, "max_gpus": max_gpus,
                              "found": gpus if res.best else None}} if auto else {}
    engine = _engine(cfg, res, work, ask, serving_engine, knobs, gpu, gpu_memory) if mode == "serve" else None
    speed = _speed(res, serving_engine, gpu, work.batch, target_tokens_per_s, max_gpus) if mode == "serve" else None
    if as_json:
        render.emit_json({"model": name, **_options_json(work, ask), "verdict": _verdict(res), **search,
                          **res.as_dict(), **({"engine": engine[0].as_dict()} if engine else {}),
                          **(speed or {})})
    else:
        if auto:
            found = (f"the fewest GPUs that fit: {gpus}" if res.best else
                     f"nothing fits on up to {gpus_text(max_gpus)} (--max-gpus)")
            print(f"--gpus auto tried {', '.join(map(str, tried))} x {res.accelerator}: {found}")
        _show_fit(res, name, what, gpus, top, tokens, mfu, precision, timed=timed, batch=batch, ask=ask, fmt=fmt,
                  wide=wide)
        if speed:
            measured = "measured_fractions" in speed
            title = "measured fraction of the roofline bound:" if measured else "target throughput:"
            _print_lines(title, _speed_lines(speed), fmt)
        if engine:
            from ffnlab.cli.serving_engine import engine_lines, engine_title

            est, said = engine
            _print_lines(engine_title(est), said + engine_lines(est) +
                         [f"assumed: {a}" for a in est.assumptions], fmt)
    if plot is not None:
        if res.best is not None:
            write_step_plot(plot, cfg, name, work, res.best.layout, overwrite)
        else:
            note("--plot draws the smallest layout that fits: nothing fits, so no figure was written")
    if res.best is None or not (speed or {}).get("target", {}).get("reached", True):
        raise typer.Exit(EXIT_NO_FIT)  # nothing fits, or the target needs more than --max-gpus GPUs


def _speed(res: FitResult, engine: str | None, gpu: str | None, batch: int,
           target: float | None, max_gpus: int) -> dict[str, Any] | None:
    """The published fractions of the roofline bound for this engine, GPU and batch, and, with a
    target, the GPUs that reach it (not ``reached`` past ``max_gpus``); None when there is neither."""
    from ffnlab.sizing.serving_speed import gpus_for_target, matching_fractions

    sv = res.serving
    if sv is None or sv.speed is None or gpu is None:
        return None
    acc_name = res.accelerator
    fractions = matching_fractions(engine, acc_name, batch, sv.speed.tp)
    out: dict[str, Any] = {}
    if fractions:
        per_seq = sv.speed.tokens_per_s_per_sequence
        out["measured_fractions"] = [{**f.as_dict(), "here_tokens_per_s_per_sequence": f.fraction * per_seq}
                                     for f in fractions]
    if target is not None:
        best = res.best
        assert best is not None
        per_replica = best.layout.tp * best.layout.pp
        out["target"] = gpus_for_target(target, sv.speed.tokens_per_s_total, per_replica, fractions,
                                        max_gpus=max_gpus).as_dict()
    return out or None


def _speed_lines(speed: dict[str, Any]) -> list[str]:
    lines = [f"{f['engine']} reached {f['tokens_per_s']:g} tokens/s for {f['model']} on "
             f"{f['gpu'] if f['tp'] == 1 else str(f['tp']) + ' x ' + f['gpu'] + ' (tensor parallel)'} at batch "
             f"{f['batch']}: {f['fraction']:.2f} of its roofline bound ({f['bound_tokens_per_s']:,.1f}); at that "
             f"fraction this layout: about {f['here_tokens_per_s_per_sequence']:,.1f} tokens/s per sequence "
             f"({f['source']})"
             for f in speed.get("measured_fractions", [])]
    t = speed.get("target")
    if t:
        lines.append(f"for {t['target_tokens_per_s']:,g} tokens/s of decode: {t['replicas']:,} replicas x "
                     f"{t['gpus_per_replica']} GPUs = {t['gpus']:,} GPUs"
                     + ("" if t["reached"] else f", more than --max-gpus {t['max_gpus']:,}: not reached") +
                     f", each replica at {t['tokens_per_s_per_replica']:,.0f} "
                     f"tokens/s (fraction {t['fraction']:.2f} of the roofline bound, from {t['fraction_from']})")
    return lines


def _engine(cfg: Any, res: FitResult, work: Workload, ask: FitAsk, spec: str | None, knobs: EngineFlags,
            gpu: str | None, gpu_memory: float | None) -> Any:
    """The serving engine's sizing of the best layout's GPU, with what an --engine-config line
    gave; None when nothing fits or the engine has published speeds only."""
    from ffnlab.cli.serving_engine import estimate
    from ffnlab.sizing.serving_engines import engine_names
    from ffnlab.sizing.serving_speed import speed_engines

    if spec is not None and engine_name(spec) in speed_engines() - set(engine_names()):
        note(f"{spec}: published speeds only, no memory profile: the engine's cache sizing is not shown")
        return None
    eng, engine_knobs, said = knobs.resolve(spec, work.seq_len)  # a bad --engine-config is refused either way
    if res.best is None:  # nothing fits: no layout for the engine to size
        return None
    tp = res.best.layout.tp
    est = estimate(cfg, _accelerator(gpu, gpu_memory), eng, engine_knobs, tp=tp, weights_dtype=work.serving_weights,
                   kv_dtype=work.kv, context_limit=ask.context_limit, group_size=work.group_size)
    return est, said


def _setting_text(work: Workload, mode: str, gpus: int) -> str:
    """``train, 8 GPUs, batch 1 x 2048, recompute none``: what every model of a comparison is fitted at."""
    ft = work.finetune
    return ((f"{ft.mode} fine-tuning (rank {ft.rank})" if ft else mode) + f", {gpus_text(gpus)}, "
            f"batch {work.batch} x {work.seq_len}"
            + (f", recompute {work.recompute}" if mode == "train" else f", KV {work.kv_dtype or work.dtype}"))


def _compare_models(targets: list[str], gpus: int, gpu: str | None, gpu_memory: float | None, tokens: str | None,
                    mfu: float | None, precision: str, work: Workload, ask: FitAsk, *, as_json: bool, fmt: str,
                    wide: bool, engine: tuple[str | None, EngineFlags] | None = None) -> bool:
    """``fit A B C --gpu NAME``: each model's fit on the same GPUs, one row (one JSON object, as
    ``fit MODEL --gpu NAME --json`` writes it) per model; True when every model fits. Serving
    (``engine`` given): each model's cache as the engine sizes it, its context limit and concurrency."""
    from ffnlab.sizing.memory.fit import context_limit
    from ffnlab.sizing.models import resolve

    n_tokens = _count(tokens) if tokens else None
    timed = bool(n_tokens) and ask.mode == "train"
    if mfu is not None and not timed:
        note("--mfu is used only for the training time, which needs --tokens and --mode train; ignored")
    if work.engine is not None and ask.mode == "train":
        engine_notes(work.engine)
    fitted: list[tuple[str, FitAsk, FitResult]] = []
    sized: dict[str, Any] = {}
    for target in targets:
        model = resolve(target)
        name, cfg, raw = model.name, model.sized(), model.raw
        each = replace(ask, context_limit=context_limit(raw))
        res = _fit_on(cfg, gpus, gpu, gpu_memory, n_tokens if timed else None, mfu, precision, work, each)
        fitted.append((name, each, res))
        if engine is not None:
            got = _engine(cfg, res, work, each, engine[0], engine[1], gpu, gpu_memory)
            if got is not None:
                sized[name] = got[0]
    if as_json:
        render.emit_json([{"model": name, **_options_json(work, each), "verdict": _verdict(res), **res.as_dict(),
                           **({"engine": sized[name].as_dict()} if name in sized else {})}
                          for name, each, res in fitted])
        return all(res.best is not None for _, _, res in fitted)
    rows = []
    for name, _, res in fitted:
        for w in res.warnings:
            note(f"{name}: {w}")
        best = res.best
        rows.append({"model": name, "verdict": _verdict(res), "layout": best.describe if best else "-",
                     "per_gpu_bytes": best.per_gpu_bytes if best else res.smallest_need_bytes,
                     "usable_bytes": res.usable_bytes,
                     "days": res.time.days if res.time else None,
                     "gpu_hours": res.time.gpu_hours if res.time else None})
    cols = [Column("model", "model", justify="left"), Column("verdict", "verdict", justify="left"),
            Column("layout", "smallest layout", justify="left"),
            Column("per_gpu_bytes", "per GPU (or least needed)", gib), Column("usable_bytes", "usable", gib, wide=True)]
    if timed:
        cols += [Column("days", "days", lambda x: "-" if x is None else f"{x:,.1f}"),
                 Column("gpu_hours", "GPU-hours", lambda x: "-" if x is None else f"{x:,.0f}")]
    if sized:
        cols += _engine_columns(rows, "model", sized, context=True)
    acc = fitted[0][2].accelerator
    trainer = engine_text(work.engine) if ask.mode == "train" else ""
    title = (f"{len(fitted)} models, {_setting_text(work, ask.mode, gpus)}{trainer} on {acc}"
             + (f"; time for {tokens} tokens" if timed else ""))
    render.emit(rows, cols, fmt, title=title, wide=wide)
    if fmt == "csv":
        return all(res.best is not None for _, _, res in fitted)
    res0 = fitted[0][2]
    shared = dict.fromkeys(line for _, _, res in fitted for line in res.assumptions)  # each once, in order
    lines = [f"usable = {gib(res0.memory_bytes)} reported by the device - {gib(res0.reserve_bytes)} reserve",
             *shared,
             "ffnlab fit MODEL --gpu NAME lists each term of one model's best layout, or what would make it fit"]
    if timed:
        lines += [_mfu_line(mfu), _precision_line(precision)]
    if sized:
        est0 = next(iter(sized.values()))
        lines += [f"KV cache as {est0.display} {est0.version} sizes it (--engine {est0.engine}@{est0.version}), "
                  "each model at its smallest layout's tp; context limit: the longest sequence each model accepts",
                  est0.total_source]
    _print_lines("assumed:", lines, fmt)
    return all(res.best is not None for _, _, res in fitted)


def _verdict(res: FitResult) -> str:
    """fits; borderline (it would fit only inside the reserve); or does not fit."""
    if res.best is not None:
        return "fits"
    need = res.smallest_need_bytes
    return "borderline" if need is not None and need <= res.memory_bytes else "does not fit"


def _accelerator(gpu: str | None, gpu_memory: float | None) -> Any:
    from ffnlab.sizing.memory.hardware import custom_accelerator, find_accelerator

    return custom_accelerator(gpu_memory, gpu) if gpu_memory is not None else find_accelerator(str(gpu))


def _options_json(work: Workload, ask: FitAsk) -> dict[str, Any]:
    """The settings a fit was asked with, as its JSON shows them (the sharding and step options
    as their own objects; fine-tuning is the result's)."""
    return {"mode": ask.mode, "seq_len": work.seq_len, "batch": work.batch, "dtype": work.dtype,
            "recompute": work.recompute, "attention": work.attention, "kv_dtype": work.kv_dtype,
            "weights_dtype": work.weights_dtype, "group_size": work.group_size, "mla": work.mla,
            "reserve_gib": ask.reserve_gib, "max_tp": ask.max_tp, "grad_dtype": work.grad_dtype,
            "optimizer": work.optimizer, "dropout": work.dropout, "context_limit": ask.context_limit,
            "sharding": ask.sharding.as_dict(), "step": work.step.as_dict(),
            **({"trainer": work.engine.as_dict()} if work.engine else {})}


def _check_flags(fmt: str, gpus: int, max_tp: int, top: int, mode: str, precision: str,
                 mfu: float | None, reserve: float | None) -> None:
    """``fit``'s own flags checked, before any model is read (the workload's: :meth:`MemoryFlags.workload`)."""
    from ffnlab.sizing.memory.fit import MAX_GPUS
    from ffnlab.sizing.memory.hardware import PRECISIONS
    from ffnlab.validation import choice

    check_format(fmt)
    integer(gpus, "--gpus", 1, MAX_GPUS)
    integer(max_tp, "--max-tp", 1, 2**20)
    integer(top, "--top", 1, MAX_TOP)
    choice(mode, "--mode", ("train", "serve"))
    choice(precision, "--precision", PRECISIONS)
    if mfu is not None:
        number(mfu, "--mfu", MIN_MFU, 1)
    if reserve is not None:
        number(reserve, "--reserve", 0, None)


def _fit_on(cfg: Any, gpus: int, gpu: str | None, gpu_memory: float | None, n_tokens: int | None, mfu: float | None,
            precision: str, work: Workload, ask: FitAsk) -> FitResult:
    """The fit on one accelerator (``--gpu``, or ``--gpu-memory``): what would fit when nothing
    does (one setting changed at a time, or more GPUs), and the training time for ``n_tokens``."""
    from ffnlab.sizing.memory.hardware import training_time

    acc = _accelerator(gpu, gpu_memory)
    res = ask.fit(cfg, work, gpus, acc)
    if res.best is None:
        res = replace(res, suggestions=tuple(ask.suggestions(cfg, work, gpus, acc)))
    if n_tokens:
        if acc.bf16_tflops is None:
            note(f"{acc.name} has no peak on record: give --gpu with --gpu-memory for a training time")
        else:
            res = replace(res, time=training_time(cfg, tokens=n_tokens, gpus=gpus, accelerator=acc,
                                                  seq_len=work.seq_len, mfu=mfu, precision=precision))
    return res


def _show_fit(res: FitResult, name: str, what: str, gpus: int, top: int, tokens: str | None, mfu: float | None,
              precision: str, *, timed: bool, batch: int, ask: FitAsk, fmt: str, wide: bool) -> None:
    """The layouts that fit (or what would change it), the best one's terms, serving and time."""
    mode = ask.mode
    for w in res.warnings:
        note(w)
    rows = [{**r.terms, "describe": r.describe, "per_gpu_bytes": r.per_gpu_bytes,
             "working": sum(t.per_gpu_bytes for t in r.table if t.group == "working")}
            for r in res.candidates[:top]]
    budget = (f"{gib(res.memory_bytes)} reported by the device - {gib(res.reserve_bytes)} reserve = "
              f"{gib(res.usable_bytes)} usable")
    held = budget if res.allocated_budget_bytes is None else (
        f"{budget}, {gib(res.allocated_budget_bytes)} of it for the allocated peak (the caching allocator's "
        f"{res.allocator_share:.1%} reserved share)")
    keys = ("weights", "gradients", "optimizer", "activations") if mode == "train" else ("weights", "kv_cache")
    cols = [Column("describe", "layout", justify="left"), *(Column(k, k, gib, wide=True) for k in keys)]
    if mode == "train":
        cols.append(Column("working", "buffers", gib, wide=True))
    cols.append(Column("per_gpu_bytes", "per GPU", gib))
    name = one_line(name)  # a name of bytes that are not UTF-8 shown as its bytes, as error lines show it
    if fmt == "csv":  # one table per stream: the layouts (the terms, time and assumptions are in --json)
        render.emit(rows, cols, fmt)
        if not rows:
            note(f"{name} does not fit on {gpus_text(gpus)} x {res.accelerator} for {mode} at these settings: "
                 f"the least any layout needs is {gib(res.smallest_need_bytes)} per GPU; {held}")
        return
    if not rows and _verdict(res) == "borderline":
        print(f"borderline: {name} fits within the reserve on {gpus_text(gpus)} x {res.accelerator} for {mode}, "
              f"not beside it: the least any layout needs is {gib(res.smallest_need_bytes)} per GPU; {held} "
              "(the reserve stands for what no term counts: allocator, CUDA context, communication buffers)")
        _print_suggestions(res, fmt)
    elif not rows:
        print(f"{name} does not fit on {gpus_text(gpus)} x {res.accelerator} for {mode} at these settings: "
              f"the least any layout needs is {gib(res.smallest_need_bytes)} per GPU; {held}")
        _print_suggestions(res, fmt)
    else:
        render.emit(rows, cols, fmt, title=f"{what} on {res.accelerator} ({budget}): layouts that fit, "
                                           "smallest first", wide=wide)
        _show_best(res, mode, fmt)
    if res.serving is not None:
        _print_lines("serving:", serving_lines(res.serving, batch, ask.context_limit), fmt)
    if res.time is not None:
        t = res.time
        print(f"time for {tokens} tokens: {t.days:,.1f} days, {t.gpu_hours:,.0f} GPU-hours "
              f"({t.flops:.3g} FLOPs)")
    lines = list(res.assumptions) + (list(res.serving.assumptions) if res.serving is not None else [])
    if timed:
        lines += [_mfu_line(mfu), _precision_line(precision)]
    _print_lines("assumed:", lines, fmt)


def _show_best(res: FitResult, mode: str, fmt: str) -> None:
    """The best layout's terms and, training, the peak of its step."""
    best = res.best
    assert best is not None
    render.emit(term_rows([t.as_dict() for t in best.table]), TERM_COLS, fmt,
                title=f"{best.describe}: each term and its rule")
    if mode == "train":
        import textwrap

        assert best.terms_sum_bytes is not None
        line = (f"peak of the step: {gib(best.per_gpu_bytes)} per GPU, at {best.peak_moment} (the terms "
                f"sum to {gib(best.terms_sum_bytes)}: {TERMS_SUM_NOTE}); alive then: "
                f"{alive_text(best.peak_alive or ())}")
        print(line if fmt == "markdown" else textwrap.fill(line, max(40, render.table_width())))


def _suggestion_line(x: Suggestion) -> str:
    if x.fits:
        return f"{x.change}: fits, {gib(x.per_gpu_bytes)} per GPU ({x.layout})"
    return f"{x.change}: still does not fit, the least any layout needs is {gib(x.per_gpu_bytes)} per GPU"


def _compare(cfg: Any, name: str, what: str, gpus: int, n_tokens: int | None, mfu: float | None, precision: str,
             tokens: str | None, work: Workload, ask: FitAsk, as_json: bool, fmt: str, wide: bool = False,
             engine: tuple[str | None, EngineFlags] | None = None) -> bool:
    """Every accelerator's fit, shown; True when the model fits on at least one. Serving (``engine``
    given): each fitting card's cache as the engine sizes it, in tokens and blocks, with the
    context limit and the concurrency."""
    rows = ask.fit_all(cfg, work, gpus, n_tokens, mfu, precision)
    fits = any(r.fits for r in rows)
    mode = ask.mode
    sized = _engines_for(cfg, rows, work, ask, *engine) if engine is not None else {}
    if as_json:
        ft = work.finetune
        listed = [{**r.as_dict(), **({"engine": sized[r.accelerator].as_dict()} if r.accelerator in sized else {})}
                  for r in rows] if engine is not None else rows
        render.emit_json({"model": name, "gpus": gpus, **_options_json(work, ask), "tokens": n_tokens, "mfu": mfu,
                          "precision": precision, "accelerators": listed,
                          **({"finetune": ft.as_dict()} if ft is not None else {})})
        return fits
    cols = [Column("accelerator", "GPU", justify="left"), Column("fits", "fits", lambda x: "yes" if x else "no"),
            Column("layout", "smallest layout", justify="left"),
            Column("per_gpu_bytes", "per GPU (or least needed)", gib), Column("usable_bytes", "usable", gib, wide=True)]
    timed = bool(n_tokens) and mode == "train"
    if timed:
        cols += [Column("days", "days", lambda x: "-" if x is None else f"{x:,.1f}"),
                 Column("gpu_hours", "GPU-hours", lambda x: "-" if x is None else f"{x:,.0f}")]
    table = [r.as_dict() for r in rows]
    if sized:
        cols += _engine_columns(table, "accelerator", sized, context=False)
    title = what + (f"; time for {tokens} tokens" if timed else "")
    render.emit(table, cols, fmt, title=title, wide=wide)
    from ffnlab.sizing.memory.fit import NOT_COUNTED

    held = "10% of it (assumed; --reserve GiB)" if ask.reserve_gib is None else f"{ask.reserve_gib:g} GiB"
    lines = [f"usable = the memory each device reports - a reserve of {held} for what no term "
             f"counts: {', '.join(NOT_COUNTED[mode])}",
             "ffnlab fit MODEL --gpu NAME lists each term of the best layout and the rest of the assumptions"]
    if mode == "train":
        from ffnlab.sizing.memory.allocator import assumption

        lines.insert(1, assumption())
    if timed:
        lines += [_mfu_line(mfu), _precision_line(precision)]
        if precision == "fp8":
            lines.append("'-': no fp8 tensor cores on that card")
    if sized:
        from ffnlab.cli.serving_engine import context_line
        from ffnlab.sizing.memory.hardware import find_accelerator

        est0 = next(iter(sized.values()))
        lines += [f"KV cache as {est0.display} {est0.version} sizes it (--engine {est0.engine}@{est0.version}) on "
                  "each card that fits, from the CUDA total of data/accelerators.json (ffnlab fit MODEL --gpu NAME "
                  "--mode serve shows each part and that total's source)", context_line(est0)]
        unknown = [n for n in sized if find_accelerator(n).cuda_reported_bytes is None]
        if unknown:
            lines.append(f"{', '.join(unknown)}: CUDA total not known, so the device's own total is used instead "
                         "(--gpu NAME says which)")
    _print_lines("assumed:", lines, fmt)
    return fits


def _engine_columns(rows: list[dict[str, Any]], key: str, sized: dict[str, Any], *, context: bool) -> list[Column]:
    """The serving engine's columns of a comparison (its KV cache, the context limit when
    ``context``, the concurrency), each row's cells filled from ``sized`` by the row's ``key``
    ("-" where the engine sized nothing)."""
    for row in rows:
        est = sized.get(str(row[key]))
        row["kv"] = f"{est.tokens:,} tokens ({est.blocks:,} blocks)" if est else "-"
        if context:
            row["context"] = f"{est.context_limit:,}" if est and est.context_limit else "-"
        row["concurrency"] = f"{est.concurrency:,.2f}x" if est else "-"
    est0 = next(iter(sized.values()))
    return [Column("kv", f"KV cache ({est0.display} {est0.version})", justify="right"),
            *([Column("context", "context limit", justify="right")] if context else []),
            Column("concurrency", f"concurrency at {est0.max_model_len:,}", justify="right")]


def _engines_for(cfg: Any, rows: list[Any], work: Workload, ask: FitAsk, spec: str | None,
                 knobs: EngineFlags) -> dict[str, Any]:
    """The serving engine's sizing on each listed card that fits, at its smallest layout's tp;
    empty when the engine has published speeds only."""
    from ffnlab.cli.serving_engine import estimate
    from ffnlab.sizing.memory.hardware import find_accelerator
    from ffnlab.sizing.serving_engines import engine_names
    from ffnlab.sizing.serving_speed import speed_engines

    if spec is not None and engine_name(spec) in speed_engines() - set(engine_names()):
        note(f"{spec}: published speeds only, no memory profile: the engine's cache sizing is not shown")
        return {}
    eng, engine_knobs, _ = knobs.resolve(spec, work.seq_len)
    out: dict[str, Any] = {}
    for r in rows:
        if not r.fits or r.tp is None:
            continue
        out[r.accelerator] = estimate(cfg, find_accelerator(r.accelerator), eng, engine_knobs, tp=r.tp,
                                      weights_dtype=work.serving_weights, kv_dtype=work.kv,
                                      context_limit=ask.context_limit, group_size=work.group_size)
    return out
