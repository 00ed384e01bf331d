"""Sizing, real-model and claim commands: size, plan, explain, audit, zoo, claims (never import torch)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import typer

from ffnlab import render
from ffnlab.cli.app import (
    ENGINE_CONFIG_OPTION,
    FORMAT_OPTION,
    JSON_OPTION,
    MODELS,
    OVERWRITE_PLOT_OPTION,
    PLOT_OPTION,
    SIZING,
    TIMEOUT_OPTION,
    WIDE_OPTION,
    WidthFlags,
    app,
    check_format,
    check_ints,
    counted,
    user_path_text,
)
from ffnlab.cli.memory_flags import (
    MemoryFlags,
    apply_engine_config,
    memory_flags,
    refuse_without_model,
    split_engine_config,
)
from ffnlab.cli.memory_view import (
    MEMORY_CSV_COLS,
    alive_text,
    emit_memory,
    engine_notes,
    flat_memory,
    layout_text,
    memory_pairs,
    note,
    serving_lines,
    write_step_plot,
)
from ffnlab.cli.serving_engine import (
    BLOCK_SIZE,
    ENFORCE_EAGER,
    GPU_MEMORY_UTILIZATION,
    MAX_NUM_BATCHED_TOKENS,
    MAX_NUM_SEQS,
    MEM_FRACTION_STATIC,
    EngineFlags,
)
from ffnlab.errors import FfnlabError, require
from ffnlab.netwait import set_timeout
from ffnlab.render import Column, decimals, gib, human, in_gib, mib, pct
from ffnlab.sizing.config import MAX_LAYERS
from ffnlab.sizing.engine_spec import engine_name
from ffnlab.sizing.kinds import DEFAULT_KIND
from ffnlab.validation import choice, number, show

if TYPE_CHECKING:
    from ffnlab.sizing.audit_row import AuditRow
    from ffnlab.sizing.claims import ClaimCheck
    from ffnlab.sizing.finetune import FinetuneSummary
    from ffnlab.sizing.memory.parallel import Layout
    from ffnlab.sizing.memory.workload import Workload
    from ffnlab.sizing.size import SizeSummary

MAX_PLAN_SHAPES = 8192  # (d_model, head size) pairs the plan search may try
MAX_PLAN_TARGET = 10**15  # a quadrillion parameters: far past any model, and the search stays bounded


# size's options that describe the shape; --from takes them from the model instead
SHAPE_OPTIONS = ("d_model", "n_layers", "n_heads", "n_kv_heads", "vocab", "untied", "norm", "positions",
                 "experts", "top_k", "bias")


@app.command(rich_help_panel=SIZING)
@memory_flags()
def size(
    ctx: typer.Context,
    d_model: int = typer.Option(None, "--d-model", parser=counted("--d-model"),
                                help="Model width (required unless --from)."),
    from_models: list[str] = typer.Option(None, "--from",
                                          help="Size a real model: a zoo name, a config.json or a Hub id "
                                               "org/name[@rev]; the width options re-size its FFN. Repeat it to "
                                               "compare models in one table."),
    ffn: str = typer.Option(None, "--ffn",
                            help=f"FFN kind: relu gelu gelu_tanh silu relu2 swiglu geglu reglu bilinear glu (default "
                                 f"{DEFAULT_KIND}, or the --from model's)."),
    ratio: str = typer.Option(None, "--ratio", help="Width ratio, e.g. 4, 2.5 or 8/3."),
    rule: str = typer.Option(None, "--rule", help="ratio | param-matched | llama | golden | explicit."),
    multiplier: str = typer.Option(None, "--multiplier", help="LLaMA ffn_dim_multiplier (llama rule)."),
    multiple_of: int = typer.Option(None, "--multiple-of", parser=counted("--multiple-of"),
                                    help="Round the width to this multiple."),
    rounding: str = typer.Option("up", "--rounding", help="up | nearest | down."),
    d_ff: int = typer.Option(None, "--d-ff", parser=counted("--d-ff"), help="Explicit width."),
    n_layers: int = typer.Option(None, "--n-layers", parser=counted("--n-layers"),
                                 help="Also size a whole decoder of this depth (at most 100,000 layers)."),
    n_heads: int = typer.Option(None, "--n-heads", parser=counted("--n-heads"),
                                help="Attention heads (default d_model/64, i.e. head_dim 64)."),
    n_kv_heads: int = typer.Option(None, "--n-kv-heads", parser=counted("--n-kv-heads"),
                                   help="KV heads for GQA/MQA (default n_heads)."),
    vocab: int = typer.Option(50257, "--vocab", parser=counted("--vocab"), help="Vocabulary size."),
    untied: bool = typer.Option(False, "--untied", help="Separate LM head (default: tied to the embedding)."),
    norm: str = typer.Option(None, "--norm",
                             help="rmsnorm | layernorm | layernorm-nobias | none (default: rmsnorm for gated FFNs, "
                                  "layernorm for plain)."),
    positions: str = typer.Option(None, "--positions",
                                  help="rope | learned | none | alibi (default: rope for gated FFNs, learned for "
                                       "plain)."),
    seq_len: int = typer.Option(2048, "--seq-len", parser=counted("--seq-len"),
                                help="Context length: attention FLOPs and the rows of a learned position table."),
    experts: int = typer.Option(0, "--experts", parser=counted("--experts"),
                                help="MoE: number of routed experts (0 = dense)."),
    top_k: int = typer.Option(2, "--top-k", parser=counted("--top-k"), help="MoE: experts per token."),
    bias: bool = typer.Option(False, "--bias/--no-bias", help="Biases in linear layers."),
    dtype: str = typer.Option("bf16", "--dtype", help="Training dtype for the memory estimate."),
    mem: MemoryFlags = MemoryFlags(),  # the memory flags (memory_flags puts them here; --finetune with --from)
    gpu: str = typer.Option(None, "--gpu", help="With --n-layers or --from: what the layout holds when serving "
                            "on this accelerator and a roofline bound on its speed (as fit --mode serve)."),
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
    max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS,
    max_num_seqs: int = MAX_NUM_SEQS,
    block_size: int = BLOCK_SIZE,
    enforce_eager: bool = ENFORCE_EAGER,
    mem_fraction_static: float = MEM_FRACTION_STATIC,
    engine_config: str = ENGINE_CONFIG_OPTION,
    plot: str = PLOT_OPTION,
    overwrite: bool = OVERWRITE_PLOT_OPTION,
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """d_ff, ratios and parameters for a width rule (--n-layers: whole model; --from: a real model).

    --from A --from B compares several models, one row each."""
    set_timeout(timeout)
    from_model = from_models[0] if from_models else None
    check_format(fmt)
    require(plot is not None or not overwrite, "--overwrite replaces an existing --plot FILE: give --plot")
    if plot is not None:
        from ffnlab.experiments.reporting.step_figure import check_plot_path

        check_plot_path(plot, overwrite)
    serving_config, trainer_config = split_engine_config(engine_config)
    if trainer_config is not None and (n_layers is not None or from_model is not None):
        mem, seq_len, dtype = apply_engine_config(mem, trainer_config, seq_len=seq_len, dtype=dtype)
    check_ints(d_model=(d_model, 1, 2**30), n_layers=(n_layers, 1, MAX_LAYERS), n_heads=(n_heads, 1, 2**20),
               n_kv_heads=(n_kv_heads, 1, 2**20), vocab=(vocab, 1, 2**32), seq_len=(seq_len, 1, 2**40),
               experts=(experts, 0, 2**16), top_k=(top_k, 1, 2**16))
    if mem.finetune != "full":
        require(from_model is not None, "--finetune needs --from MODEL (the model whose base is frozen)")
    # a width alone takes no memory flags (refused below if given): the memory model is not loaded
    whole = n_layers is not None or from_model is not None
    knobs = EngineFlags.of(serving_config, gpu_memory_utilization=gpu_memory_utilization,
                           max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
                           block_size=block_size, enforce_eager=enforce_eager,
                           mem_fraction_static=mem_fraction_static)
    knobs.check()
    serving_engine = None
    if mem.engine is not None and engine_name(mem.engine) in _serving_engines():
        serving_engine, mem = mem.engine, replace(mem, engine=MemoryFlags().engine)  # --engine names the serving engine
    if knobs.given() or serving_engine:
        require(gpu is not None and from_model is not None,
                f"a serving engine (--engine {', '.join(_serving_engines())}, or its flags --gpu-memory-utilization "
                "... --engine-config with a serving command line) needs --from MODEL and --gpu (size prices an engine "
                "for a real model)")
    work = mem.workload(seq_len=seq_len, dtype=dtype, finetune=from_model is not None) if whole else None
    engine_notes(work.engine if work else None)
    lay = mem.layout() if whole else None
    require(gpu is None or whole, "--gpu needs a whole model: give --n-layers (or --from MODEL)")
    width = WidthFlags(ratio=ratio, rule=rule, multiplier=multiplier, multiple_of=multiple_of, rounding=rounding,
                       d_ff=d_ff)
    if from_models and len(from_models) > 1:
        assert work is not None and lay is not None
        require(plot is None, "--plot draws one model's step: give one --from")
        require(not knobs.given() and serving_engine is None,
                "the serving engine's flags price one model: give one --from")
        _show_sizes([_size_from(ctx, m, ffn, width, work, lay, gpu=gpu)[0] for m in from_models], as_json, fmt)
        return
    if from_model is not None:
        assert work is not None and lay is not None
        out, engine = _size_from(ctx, from_model, ffn, width, work, lay, gpu=gpu, engine=serving_engine,
                                 knobs=knobs)
    else:
        from ffnlab.sizing.size import size_summary

        require(d_model is not None, "give --d-model (or --from MODEL to size a real model)")
        if n_layers is None:
            refuse_without_model(mem, dtype=(dtype, "bf16"), n_heads=(n_heads, None),
                                 n_kv_heads=(n_kv_heads, None), plot=(plot, None),
                                 engine_config=(engine_config, None))
        ffn = ffn or DEFAULT_KIND
        r = width.rule_for(ffn)
        out = size_summary(d_model, ffn, r, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads,
                           vocab_size=vocab, seq_len=seq_len, n_experts=experts, top_k=top_k, bias=bias,
                           dtype=dtype, tied=not untied, norm=norm, positions=positions, workload=work, layout=lay,
                           serving_on=gpu)
    _show_size(out, seq_len, dtype, as_json, fmt, engine if from_model is not None else None)
    if plot is not None and out.model is not None and work is not None and lay is not None:
        from ffnlab.sizing.config import make_config, validate
        from ffnlab.sizing.models import resolve

        m = out.model
        if from_model is None:  # the config size_summary built, from what it reports
            cfg = validate(make_config(out.d_model, m.n_layers, m.n_heads, out.d_ff, kind=out.ffn_kind,
                                       vocab_size=m.vocab_size, n_kv_heads=m.n_kv_heads, bias=bias,
                                       n_experts=experts, top_k=top_k if experts else 0, max_positions=seq_len,
                                       tied_embeddings=m.tied_embeddings, norm=m.norm, positions=m.positions))
        elif width.given or ffn is not None:
            note("--plot draws a --from model as it is: drop the width options to plot it; no figure written")
            return
        else:
            cfg = resolve(from_model).sized()
        write_step_plot(plot, cfg, out.from_model or f"d_model {out.d_model}, {m.n_layers} layers", work, lay,
                        overwrite)


def _serving_engines() -> tuple[str, ...]:
    from ffnlab.sizing.serving_engines import engine_names

    return engine_names()


def _size_from(ctx: typer.Context, target: str, ffn: str | None, width: WidthFlags, work: Workload,
               lay: Layout, gpu: str | None = None, engine: str | None = None,
               knobs: EngineFlags | None = None) -> tuple[SizeSummary, Any]:
    """``size --from``: the model's config (fetched for a Hub id), its FFN re-sized if a width is
    given, the memory of ``work`` on ``lay`` and, with LoRA / QLoRA, the fine-tuning step."""
    from ffnlab.sizing.size import size_model

    given = [f"--{n.replace('_', '-')}" for n in SHAPE_OPTIONS
             if getattr(ctx.get_parameter_source(n), "name", None) == "COMMANDLINE"]
    require(not given, f"--from takes the shape from the model; drop {', '.join(given)}")
    from ffnlab.sizing.models import resolve

    model = resolve(target)
    name, cfg = model.name, model.sized()
    kind = ffn or cfg.ffn.kind
    r = width.rule_for(kind) if width.given else None
    out = size_model(cfg, name, r, kind, seq_len=work.seq_len, dtype=work.dtype, workload=work, layout=lay,
                     serving_on=gpu)
    if work.adapters:
        from ffnlab.sizing.finetune import finetune_summary

        out = replace(out, finetune=finetune_summary(cfg, work, lay))
    est = None
    # the engine's view of the layout's GPU
    if gpu is not None and out.model is not None and out.model.serving is not None:
        from ffnlab.cli.serving_engine import estimate
        from ffnlab.sizing.memory.fit import context_limit
        from ffnlab.sizing.memory.hardware import find_accelerator

        eng, engine_knobs, said = (knobs or EngineFlags()).resolve(engine, work.seq_len)
        limit = _context_limit(out.from_model)
        est = (estimate(cfg, find_accelerator(gpu), eng, engine_knobs, tp=lay.tp, weights_dtype=work.serving_weights,
                        kv_dtype=work.kv, context_limit=limit if limit is not None else context_limit(None),
                        group_size=work.group_size), said)
    return out, est


def _show_sizes(outs: list[SizeSummary], as_json: bool, fmt: str) -> None:
    """``size --from A --from B``: one row per model (JSON: the list of ``size --from`` objects)."""
    if as_json:
        render.emit_json(outs)
        return
    rows = []
    for out in outs:
        m = out.model
        mem = m.memory if m is not None else None
        rows.append({"model": out.from_model, "ffn_kind": out.ffn_kind, "d_model": out.d_model, "d_ff": out.d_ff,
                     "ratio_param_matched": out.ratio_param_matched,
                     "params": m.params.total if m is not None else None,
                     "ffn_share": m.params.ffn_share if m is not None else None,
                     "train_peak": mem.peak_bytes if mem is not None else None,
                     "serve_total": mem.serving_total_bytes if mem is not None else None})
    cols = [Column("model", "model", justify="left"), Column("ffn_kind", "FFN", justify="left"),
            Column("d_model", "d_model"), Column("d_ff", "d_ff"),
            Column("ratio_param_matched", "p-m ratio", lambda x: f"{x:.2f}"),
            Column("params", "params", lambda x: "-" if x is None else human(x)),
            Column("ffn_share", "FFN share", lambda x: "-" if x is None else f"{x:.1%}"),
            Column("train_peak", "train peak", gib), Column("serve_total", "serve total", gib)]
    mem0 = outs[0].model.memory if outs[0].model is not None else None
    title = f"ffnlab size: {len(outs)} models"
    if mem0 is not None:
        title += (f"; memory per GPU ({layout_text(mem0.layout)}), training {mem0.dtype}, batch {mem0.batch} x "
                  f"{mem0.seq_len}, recompute {mem0.recompute}; train peak = the most alive at one moment of "
                  f"the step; serving weights {mem0.weights_dtype}, KV {mem0.kv_dtype}")
    render.emit(rows, cols, fmt, title=title)
    if fmt != "csv":
        render.note("p-m ratio = parameter-matched ratio (x3/2 for gated FFNs); ffnlab size --from MODEL shows "
                    "one model's every term and assumption", fmt)


def _context_limit(name: str | None) -> int | None:
    """The longest context a zoo model's config.json declares (None: not a zoo name, or none)."""
    from ffnlab.sizing.memory.fit import context_limit
    from ffnlab.sizing.zoo import find, is_zoo_name

    return context_limit(find(name).hf_config) if name is not None and is_zoo_name(name) else None


def _show_size(out: SizeSummary, seq_len: int, dtype: str, as_json: bool, fmt: str, engine: Any = None) -> None:
    width, gated = out.d_ff, out.gated
    if as_json:
        render.emit_json({**out.as_dict(), "engine": engine[0].as_dict()} if engine else out)
        return
    if fmt == "csv":  # one row: the JSON's values under their dotted keys (model.params.total)
        render.record(out)
        return
    a = out.alignment
    pairs: list[tuple[str, Any]] = [*([("from", out.from_model)] if out.from_model is not None else []),
        ("FFN kind", f"{out.ffn_kind} ({'gated, 3 matrices' if gated else 'plain, 2 matrices'})"),
        ("rule", out.rule), ("d_ff", width), ("raw ratio d_ff/d_model", f"{out.ratio_raw:.4f}"),
        ("parameter-matched ratio", f"{out.ratio_param_matched:.4f}"),
        ("FFN params / layer", f"{out.ffn_params_per_layer:,}"),
        ("alignment",
         f"2^{a.pow2_divisor.bit_length() - 1} divides d_ff; /64 {a.div64}, /128 {a.div128}, /256 {a.div256}"),
    ]
    if out.ffn_params_per_layer_active is not None:
        pairs.append(("FFN params / layer, active", f"{out.ffn_params_per_layer_active:,}"))
    if out.model is not None:
        m = out.model
        p, fl = m.params, m.flops_per_token
        pairs += [
            ("model", f"{m.n_layers} layers, {m.n_heads} heads ({m.n_kv_heads} kv), {m.norm}, "
                      f"{m.positions} positions" + (f" ({m.position_table_rows} rows)" if m.position_table_rows else "")
                      + f", embeddings {'tied' if m.tied_embeddings else 'untied'}"),
            ("params total", f"{p.total:,} ({human(p.total)})"),
            ("params non-embedding", f"{p.non_embedding:,} ({human(p.non_embedding)})"),
            ("FFN share of non-embedding", f"{p.ffn_share:.1%}"),
            (f"forward FLOPs/token @ {seq_len}", f"{human(fl.forward)}  (ffn {fl.ffn / fl.forward:.0%}, "
             f"attn proj {(fl.qkv + fl.attn_out) / fl.forward:.0%}, scores {fl.attn_scores / fl.forward:.0%}, "
             f"head {fl.lm_head / fl.forward:.0%})"),
            ("training FLOPs/token (3x fwd)", human(fl.training)),
        ]
        if m.memory is not None:  # always, from the command (a training --dtype is required)
            pairs += memory_pairs(m.memory)
        if m.serving is not None:
            sv = m.serving
            assert sv.batch is not None  # size sets it
            limit = _context_limit(out.from_model)
            pairs += [(f"serving on {sv.accelerator}", line) for line in serving_lines(sv, sv.batch, limit)]
            pairs += [("assumed", f"serving: {gib(sv.usable_bytes)} usable per GPU ({sv.accelerator}'s "
                                  f"reported memory less a {gib(sv.reserve_bytes)} reserve, as fit assumes)")]
            pairs += [("assumed", f"serving: {line}") for line in sv.assumptions]
            if engine:
                from ffnlab.cli.serving_engine import engine_lines

                est, said = engine
                label = f"{est.display} {est.version}, tp {est.tp}"
                pairs += [(label, line) for line in said + engine_lines(est)]
                pairs += [("assumed", a if a.startswith(f"{est.display}:") else f"{est.display}: {a}")
                          for a in est.assumptions]
        pairs += [("assumed", line) for line in m.assumed]
    if out.finetune is not None:
        pairs += finetune_pairs(out.finetune)
    render.key_values(pairs, fmt, title=f"ffnlab size: {out.from_model or 'd_model ' + str(out.d_model)}")


@app.command(rich_help_panel=SIZING)
def plan(
    target: str = typer.Argument(..., help="Target parameter count, e.g. 125M, 1.3B, 7B."),
    ffn: str = typer.Option(DEFAULT_KIND, "--ffn", help="FFN kind."),
    ratio: str = typer.Option(None, "--ratio", help="Width ratio (default 4 with --rule ratio or param-matched)."),
    rule: str = typer.Option(None, "--rule",
                             help="ratio | param-matched | llama | golden (default: llama for gated FFNs, ratio 4 for "
                                  "plain)."),
    multiplier: str = typer.Option(None, "--multiplier", help="LLaMA ffn_dim_multiplier."),
    multiple_of: int = typer.Option(None, "--multiple-of", parser=counted("--multiple-of"),
                                    help="Round d_ff to this multiple."),
    vocab: int = typer.Option(50257, "--vocab", parser=counted("--vocab"), help="Vocabulary size."),
    untied: bool = typer.Option(False, "--untied", help="Separate LM head (default: tied to the embedding)."),
    seq_len: int = typer.Option(2048, "--seq-len", parser=counted("--seq-len"),
                                help="Rows of a learned position table (plain FFNs)."),
    count: str = typer.Option("total", "--count", help="Match 'total' or 'non-embedding' parameters."),
    tolerance: float = typer.Option(0.02, "--tolerance", help="Refuse when no shape is this close (0.02 = 2%)."),
    d_multiple: int = typer.Option(64, "--d-multiple", parser=counted("--d-multiple"),
                                   help="d_model must be a multiple of this."),
    head_dims: str = typer.Option("64,128", "--head-dims", help="Allowed head sizes, comma-separated."),
    aspect_band: str = typer.Option("32:160", "--aspect-band", help="Allowed d_model/n_layers, LO:HI."),
    kv_groups: int = typer.Option(1, "--kv-groups", parser=counted("--kv-groups"),
                                  help="Query heads per KV head (1 = MHA)."),
    top: int = typer.Option(8, "--top", parser=counted("--top"), help="How many candidates to show."),
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
) -> None:
    """A model shape near a parameter target, with the nearest alternatives."""
    from ffnlab.sizing.plan import CONVENTIONS, default_rule, parse_count
    from ffnlab.sizing.plan import plan as make_plan

    check_format(fmt)
    check_ints(vocab=(vocab, 1, 2**32), d_multiple=(d_multiple, 1, 2**16), kv_groups=(kv_groups, 1, 2**10),
               top=(top, 1, 1000))
    choice(count, "--count", ("total", "non-embedding"))
    try:
        as_float: float | None = float(target)
    except ValueError:
        as_float = None
    require(as_float is None or math.isfinite(as_float), f"parameter count must be a finite number, got {show(target)}")
    n = parse_count(target, "plan TARGET (a parameter count)")  # the title echoes the count read
    require(n <= MAX_PLAN_TARGET, f"parameter count must be at most {MAX_PLAN_TARGET:.0e}, got {show(target)}")
    if rule is None:
        rule = default_rule(ffn).rule
    if ratio is None and rule in ("ratio", "param-matched"):
        ratio = "4"
    r = WidthFlags(ratio=ratio, rule=rule, multiplier=multiplier, multiple_of=multiple_of).rule_for(ffn)
    try:
        hds = tuple(int(x) for x in head_dims.split(","))
        lo, hi = (float(x) for x in aspect_band.split(":"))
    except ValueError:
        raise FfnlabError("--head-dims takes integers like 64,128 and --aspect-band takes LO:HI like 32:160") from None
    require(all(h > 0 for h in hds), "--head-dims must be positive")
    check_ints(**{f"head_dims[{i}]": (h, 1, 2**16) for i, h in enumerate(hds)})
    for x in (lo, hi):
        number(x, "--aspect-band", 0, 10**6, lo_open=True)
    shapes = (32768 // d_multiple) * len(set(hds))  # the (d_model, head size) pairs plan tries
    require(shapes <= MAX_PLAN_SHAPES, f"--d-multiple {d_multiple} with {len(set(hds))} head size(s) would try "
            f"{shapes:,} shapes (at most {MAX_PLAN_SHAPES:,}); raise --d-multiple or give fewer --head-dims")
    cands = make_plan(n, ffn, r, vocab_size=vocab, count=count, d_multiple=d_multiple, head_dims=hds,
                      aspect_band=(lo, hi), kv_groups=kv_groups, n_candidates=top, tied=not untied,
                      seq_len=seq_len, tolerance=tolerance)
    rows = [c.as_dict() for c in cands]
    cfg = cands[0].config
    model = (f"{cfg.norm}, {cfg.positions} positions"
             + (f" ({cfg.max_positions} rows, --seq-len)" if cfg.positions == "learned" else "")
             + f", embeddings {'untied' if untied else 'tied (--untied for a separate LM head)'}, vocab {vocab}")
    if as_json:
        render.emit_json({"target": n, "count": count, "ffn_kind": ffn, "rule": r.describe(), "tolerance": tolerance,
                          "norm": cfg.norm, "positions": cfg.positions, "tied_embeddings": not untied,
                          "best": rows[0], "candidates": rows})
        return
    cols = [Column("d_model", "d_model"), Column("n_layers", "layers"), Column("n_heads", "heads"),
            Column("head_dim", "head_dim", wide=True), Column("d_ff", "d_ff"), Column("ratio_raw", "ratio", decimals),
            Column("aspect", "d/L", lambda x: f"{x:.0f}", wide=True), Column("params", count, human),
            Column("error", "error", pct),
            Column("trades", "trades", lambda t: ", ".join(t) if t else "-", justify="left")]
    render.emit(rows, cols, fmt, title=f"plan {human(n)} {count} params, {ffn}, {r.describe()}; {model} (best first)",
                wide=wide)
    if fmt == "table":
        render.note("trades = conventions a shape breaks for a smaller error: "
                    + "; ".join(f"{c.name}: {c.meaning}" for c in CONVENTIONS), fmt)


@app.command(rich_help_panel=SIZING)
def explain(
    d_model: int = typer.Option(..., "--d-model", parser=counted("--d-model"), help="Model width."),
    d_ff: int = typer.Option(..., "--d-ff", parser=counted("--d-ff"), help="FFN width to explain."),
    ffn: str = typer.Option(DEFAULT_KIND, "--ffn", help="FFN kind (gated kinds also try the LLaMA rule)."),
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
) -> None:
    """Which width rules reproduce a d_ff, and its hardware alignment."""
    from ffnlab.sizing.explain import explain as run_explain

    check_format(fmt)
    check_ints(d_model=(d_model, 1, 2**30), d_ff=(d_ff, 1, 2**40))
    out = run_explain(d_model, d_ff, ffn)
    if as_json:
        render.emit_json(out)
        return
    a = out.alignment
    title = (f"d_ff {d_ff} for d_model {d_model} ({ffn}): raw {out.ratio_raw:.4f}, "
             f"param-matched {out.ratio_param_matched:.4f}; largest power of two dividing it "
             f"{a.pow2_divisor} (/64 {a.div64}, /128 {a.div128}, /256 {a.div256})")
    cols = [Column("rule", "rule", justify="left"), Column("ratio", "ratio", str),
            Column("multiplier", "x d_model", lambda x: "-" if x is None else f"{x:.4g}", wide=True),
            Column("ffn_dim_multiplier", "ffn_dim_multiplier", lambda x: "-" if x is None else f"{x:g}", wide=True),
            Column("multiples_of", "multiple_of", lambda m: ", ".join(map(str, m)), justify="left"),
            Column("rounding", "rounding", justify="left"), Column("describe", "reads as", justify="left")]
    render.emit([r.as_dict() for r in out.rules], cols, fmt, title=title, wide=wide)
    if not out.rules and fmt == "table":
        render.note(f"no simple rule gives {d_ff} (raw ratio {out.ratio_raw_exact}): no common ratio or LLaMA "
                    "rule lands on it by rounding to a multiple well below d_ff", fmt)


AUDIT_COLS = [  # the default table fits 80 columns; --wide adds the rest
    Column("name", "model", justify="left"), Column("model_type", "type", justify="left", wide=True),
    Column("d_model", "d_model", wide=True), Column("d_ff", "d_ff"), Column("ffn_kind", "kind", justify="left"),
    Column("ratio_raw", "raw", lambda x: decimals(x, 2)), Column("ratio_param_matched", "p-m", lambda x: decimals(x,
                                                                                                                  2)),
    Column("deviation_param_matched", "vs 4", pct),
    Column("ffn_share", "FFN %", lambda x: "-" if x is None else f"{x:.0%}"),
    Column("params_total", "total", human), Column("params_non_embedding", "non-emb", human, wide=True),
    Column("pow2_divisor", "pow2", lambda x: "-" if x is None else str(x), wide=True),
    Column("flops_per_token", "GFLOP/tok@4096", lambda x: "-" if x is None else f"{x / 1e9:,.1f}", wide=True),
    Column("training_memory_bytes", "w+g+AdamW GiB",
           lambda x: "-" if x is None else in_gib(x, 0), wide=True),
]
VERDICT_COL = Column("verdict", "verdict", justify="left")


def defaults_notes(rows: list[AuditRow], fmt: str) -> None:
    """What transformers' defaults filled in for a config.json that left size keys out, and the keys
    it gives twice (read with their last value): a note per model in every format (never silent;
    beside CSV on stderr)."""
    from ffnlab.sizing.hf import DEFAULTS_NOTE, DUPLICATES_NOTE

    for r in rows:
        for part in (r.note or "").split("; "):
            if part.startswith((DEFAULTS_NOTE, DUPLICATES_NOTE)):
                render.note(f"{r.name}: {part}", fmt)


@app.command(rich_help_panel=MODELS)
@memory_flags()
def audit(
    targets: list[str] = typer.Argument(None,
                                        help="Zoo names (see 'ffnlab zoo'), paths to config.json files, or Hub ids "
                                             "org/name[@rev] (their config.json is fetched)."),
    all_models: bool = typer.Option(False, "--all", help="Audit every model in the zoo."),
    seq_len: int = typer.Option(2048, "--seq-len", parser=counted("--seq-len"),
                                help="Sequence length for the memory section."),
    dtype: str = typer.Option("bf16", "--dtype", help="Training dtype for the memory section."),
    mem: MemoryFlags = MemoryFlags(),  # the memory flags (memory_flags puts them here)
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Audit real models (zoo, config.json, Hub): ratios vs 4, FFN share."""
    set_timeout(timeout)
    from ffnlab.cli.notes import transient_note
    from ffnlab.sizing.audit import audit_entry, audit_resolved, entry_basis
    from ffnlab.sizing.hf.fallback import announced
    from ffnlab.sizing.models import resolve
    from ffnlab.sizing.zoo import load_zoo
    from ffnlab.training.hf_count import count_with_transformers

    check_format(fmt)
    require(bool(targets) or all_models, "name at least one model or config.json, or use --all")
    work, lay = mem.workload(seq_len=seq_len, dtype=dtype), mem.layout()
    engine_notes(work.engine)
    audited = [(audit_entry(e), entry_basis(e)) for e in load_zoo()] if all_models else []
    counter = announced(count_with_transformers, transient_note)
    audited += [audit_resolved(resolve(t), counter) for t in targets or []]  # a Hub id's config is fetched
    alone = len(audited) == 1
    rows = [_audit_sections(row, cfg, work, lay, alone=alone) for row, cfg in audited]
    if as_json:
        render.emit_json(rows)
        return
    title = ("FFN audit (p-m = parameter-matched ratio: x3/2 for gated FFNs; vs 4 = p-m against the 4x convention; "
             "pow2 = largest power of 2 dividing d_ff)")
    shown = [{**r.as_dict(), "pow2_divisor": None if r.alignment is None else r.alignment.pow2_divisor}
             for r in rows]
    if fmt == "csv":  # one table: the memory bytes as extra columns
        extra = FINETUNE_CSV_COLS if work.adapters else []
        render.emit([{**cells, **flat_memory(r), **flat_finetune(r)} for cells, r in zip(shown, rows, strict=True)],
                    [*AUDIT_COLS, VERDICT_COL, *MEMORY_CSV_COLS, *extra], fmt)
        defaults_notes(rows, fmt)  # on stderr: the CSV stream stays one table
        return
    if fmt != "table":
        render.emit(shown, [*AUDIT_COLS, VERDICT_COL], fmt, title=title)
        defaults_notes(rows, fmt)
        emit_memory(rows, fmt)
        if work.adapters:
            emit_finetune(rows, fmt)
        return
    render.emit(shown, AUDIT_COLS, fmt, title=title, wide=wide)
    for r in rows:
        render.note(f"{r.name}: {r.verdict}", fmt)
        defaults_notes([r], fmt)
    emit_memory(rows, fmt, wide=wide)
    if work.adapters:
        emit_finetune(rows, fmt)
    for r in rows:  # models counted through transformers: which layers keep a cache or a state
        m = r.memory
        if m is not None and m.counted_by_structure:
            render.note(f"{r.name}: KV cache {gib(m.kv_cache_bytes)} from {m.cache_rule}; "
                        f"recurrent state {mib(m.state_bytes or 0)} per batch; {m.note}", fmt)


def _audit_sections(row: AuditRow, cfg: Any, work: Workload, lay: Layout, *, alone: bool) -> AuditRow:
    """``row`` with the sections the command adds: ``finetune`` (with ``--finetune``) and
    ``memory``, or why not (``finetune_error``, ``memory_error``; raised when it is the only row,
    unless it was counted through transformers). ``cfg`` None: an estimate, no memory model."""
    from ffnlab.sizing.audit import memory_of

    if work.adapters:
        row = _audit_finetune(row, cfg, work, lay, alone=alone)
    if cfg is None:
        return replace(row, memory_error="no published architecture" if row.model_type is None else
                       "no architecture to model its memory")
    try:
        return replace(row, memory=memory_of(cfg, work, lay))
    except FfnlabError as e:  # a layout this model cannot take (e.g. --tp not dividing its heads)
        if alone and row.counted_by != "transformers":
            raise
        return replace(row, memory_error=str(e))


def _audit_finetune(row: AuditRow, cfg: Any, work: Workload, lay: Layout, *, alone: bool) -> AuditRow:
    """``row`` with its ``finetune`` object, or ``finetune_error`` (raised when it is the only row)."""
    from ffnlab.sizing.config import ModelConfig
    from ffnlab.sizing.finetune import finetune_summary

    if not isinstance(cfg, ModelConfig):  # counted through transformers: no activation model
        return replace(row, finetune_error="no architecture to model its fine-tuning step")
    try:
        return replace(row, finetune=finetune_summary(cfg, work, lay))
    except FfnlabError as e:  # e.g. LoRA on routed experts
        if alone:
            raise
        return replace(row, finetune_error=str(e))


FINETUNE_KEYS = ("peak_bytes", "activations_bytes")
FINETUNE_CSV_COLS = [Column(f"finetune.{k}", f"finetune.{k}") for k in (*FINETUNE_KEYS, "states_bytes", "trainable")]


def flat_finetune(row: AuditRow) -> dict[str, Any]:
    """The fine-tuning figures of ``row`` as ``finetune.KEY`` cells (for CSV)."""
    ft = row.finetune
    if ft is None:
        return {c.key: None for c in FINETUNE_CSV_COLS}
    return {**{f"finetune.{k}": getattr(ft.peak, k) for k in FINETUNE_KEYS}, "finetune.states_bytes": ft.states.total,
            "finetune.trainable": ft.lora.trainable}


def emit_finetune(rows: list[AuditRow], fmt: str) -> None:
    """``audit --finetune lora|qlora``: one line per model, the step's peak and what makes it."""
    for r in rows:
        ft = r.finetune
        if ft is not None:
            pk, st = ft.peak, ft.states
            render.note(f"{r.name}: {ft.mode} rank {ft.lora.rank} ({'+'.join(ft.lora.targets)}), "
                        f"batch {ft.batch} x {ft.seq_len}: step peak {gib(pk.peak_bytes)} at "
                        f"{pk.peak_moment} (frozen base {gib(st.base_weights)}, adapter states "
                        f"{gib(st.total - st.base_weights)}, activations {gib(pk.activations_bytes)})", fmt)
        elif r.finetune_error:
            render.note(f"{r.name}: no fine-tuning estimate: {r.finetune_error}", fmt)


@app.command(rich_help_panel=MODELS)
def zoo(
    family: str = typer.Option(None, "--family", help="Only this family (case-insensitive substring)."),
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
) -> None:
    """The published models ffnlab knows, with sources."""
    from ffnlab.sizing.audit import entry_shape
    from ffnlab.sizing.zoo import load_zoo

    check_format(fmt)
    entries = load_zoo()
    known = sorted({e.family for e in entries})
    require(not family or any(family.lower() in f.lower() for f in known),
            f"zoo: no family matches {show(family)}; families: {', '.join(known)}")
    rows = []
    for e in entries:
        if family and family.lower() not in e.family.lower():
            continue
        d_model, d_ff, kind = entry_shape(e)
        rows.append({"name": e.name, "display": e.display, "family": e.family, "model_type": e.model_type,
                     "d_model": d_model, "d_ff": d_ff, "ffn_kind": kind, "source": e.source,
                     "verified_against": e.verified_against, "note": e.note})
    cols = [Column("name", "name", justify="left"), Column("family", "family", justify="left"),
            Column("model_type", "type", justify="left"), Column("d_model", "d_model"), Column("d_ff", "d_ff"),
            Column("ffn_kind", "kind", justify="left"), Column("source", "source", justify="left", wide=True)]
    render.output(rows, cols, as_json=as_json, fmt=fmt, title=f"ffnlab zoo: {len(rows)} models", wide=wide)


CLAIM_COLS = [Column("id", "claim id", justify="left"), Column("verdict", "verdict", justify="left"),
              Column("claim", "claim (paraphrased)", justify="left"), Column("evidence", "evidence", justify="left")]
CLAIM_COMPACT = [Column("head", "claim: verdict", justify="left", wrap=False),
                 Column("text", "what it says; the evidence", justify="left")]


def verdict_count(rows: Sequence[ClaimCheck]) -> str:
    """``N claims: a true, b false, ...`` (verdicts in :data:`ffnlab.sizing.verdicts.VERDICTS` order)."""
    from ffnlab.sizing.verdicts import count_line

    return count_line((r.verdict for r in rows), "claims")


@app.command(rich_help_panel=MODELS)
def claims(
    evidence: str = typer.Option(None, "--evidence", parser=user_path_text,
                                 help="A report's claims.json, its folder, or a sweep folder (its report/) whose "
                                      "experiments settle the needs-experiment claims."),
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
) -> None:
    """Check every claim of the two source texts; evidence computed now."""
    from ffnlab.sizing.claims import check_claims, evidence_file, load_evidence

    check_format(fmt)
    rows = check_claims(load_evidence(evidence) if evidence else None)
    if as_json:
        render.emit_json(rows)
        return
    title = "Claims of the golden-ratio note and the FFN primer (docs/sources.md)"
    if fmt == "table" and not wide:  # two columns, so the prose gets the width of an 80-column terminal
        shown = [{**r.as_dict(), "head": f"{r.id}:\n{r.verdict}", "text": f"{r.claim}\nevidence: {r.evidence}"}
                 for r in rows]
        render.emit(shown, CLAIM_COMPACT, fmt, title=title, lines=True)
    else:
        render.emit([r.as_dict() for r in rows], CLAIM_COLS, fmt, title=None if fmt == "csv" else title)
    if fmt != "csv":  # CSV stays one table
        print(verdict_count(rows))
    if evidence:
        from ffnlab.experiments.analysis.maturity import sweep_of_report, sweep_warning

        sweep = sweep_of_report(evidence_file(evidence))
        warning = sweep_warning(sweep) if sweep is not None else None
        if warning:
            render.note(f"note: {warning}", fmt)


def finetune_pairs(ft: FinetuneSummary) -> list[tuple[str, Any]]:
    """``size --finetune``: the adapters, the states and the fine-tuning step's peak."""
    lo, st, pk, m = ft.lora, ft.states, ft.peak, ft.mode
    how = (f"batch {ft.batch} x {ft.seq_len}, recompute {ft.recompute}"
           + (", the embeddings' output requiring grad" if pk.input_grads else ""))
    return [
        (f"{m} trainable params", f"{lo.trainable:,} of {lo.total:,} ({lo.trainable / lo.total:.4%}"
                                  f"), rank {lo.rank} on {lo.adapted_matrices:,} linear layers "
                                  f"({'+'.join(lo.targets)})"),
        (f"{m} frozen base", f"{gib(st.base_weights)} ({st.base_rule})"),
        (f"{m} adapters", f"{gib(st.adapter_weights, 3)} weights + {gib(st.adapter_gradients, 3)} gradients + "
                          f"{gib(st.adapter_optimizer, 3)} optimizer (fp32, as peft keeps them)"),  # small: 3 decimals
        (f"{m} states total", gib(st.total)),
        (f"{m} activations ({how})", f"{gib(pk.activations_bytes)} kept for backward at the end of "
                                     "forward"),
        (f"{m} peak of the step, at {pk.peak_moment}", gib(pk.peak_bytes)),
        (f"{m} alive at the peak", alive_text(pk.peak_alive)),
        *([(f"{m} host memory (--offload-acts)", gib(pk.timeline.host_bytes))] if pk.timeline.host_bytes else []),
        (f"{m} not counted", "; ".join(ft.not_counted)),
    ]
