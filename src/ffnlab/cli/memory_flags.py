"""The memory flags of ``size``, ``audit`` and ``fit``, declared once.

:class:`MemoryFlags` holds them as given; :func:`memory_flags` adds them to a command's
parameters (where the command declares ``mem: MemoryFlags``) and hands the command one
:class:`MemoryFlags`. :meth:`MemoryFlags.workload` and :meth:`MemoryFlags.layout` make them the
one :class:`ffnlab.sizing.memory.workload.Workload` and :class:`ffnlab.sizing.memory.parallel.Layout`
the memory model takes, each checking its flags when made, before any model is read (so every
model gets the same answer).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import typer

from ffnlab.errors import require
from ffnlab.validation import choice

if TYPE_CHECKING:
    from ffnlab.sizing.finetune import FinetuneOptions
    from ffnlab.sizing.memory.parallel import Layout
    from ffnlab.sizing.memory.workload import Workload

# name -> (its flag(s), its help); the order is the order of --help. Types and defaults are
# MemoryFlags' own (memory_flags reads them from there)
OPTIONS: dict[str, tuple[str, str]] = {
    "batch": ("--batch", "Sequences per micro-batch (training) or concurrent sequences (serving)."),
    "recompute": ("--recompute", "Activation recomputation: none | selective | full | op-selective (torchtitan's "
                  "op-level policy: each block keeps its input, every other matmul's output and the attention's)."),
    "attention": ("--attention", "Attention implementation: fused (flash) | eager (s x s kept)."),
    "kv_dtype": ("--kv-dtype", "KV-cache dtype: bf16 fp16 fp32 fp8 int8 int4 (default --dtype)."),
    "weights_dtype": ("--weights-dtype",
        "Serving weights: bf16 fp16 fp32, or a quantised format: awq gptq gptq-3bit gptq-8bit fp8 "
        "(per tensor) fp8-channel fp8-block128 nf4 mxfp4 int8 int4 (default --dtype)."),
    "group_size": ("--group-size",
        "Quantisation group size for awq, gptq, int8, int4 (default 128; 0 = one group over the "
        "whole input)."),
    "dp": ("--dp", "Data-parallel GPUs."),
    "tp": ("--tp", "Tensor-parallel GPUs."),
    "pp": ("--pp", "Pipeline stages."),
    "ep": ("--ep", "Expert-parallel GPUs (MoE; divides --dp)."),
    "zero": ("--zero", "ZeRO stage 0-3 (0 = DDP, 3 = --zero3 engine)."),
    "sp": ("--sp/--no-sp", "Sequence parallelism (with --tp)."),
    "grad_dtype": ("--grad-dtype",
        "Gradient dtype: bf16 fp16 fp32 (default --dtype; fp32 = Megatron-style accumulation)."),
    "optimizer": ("--optimizer",
        "Optimizer state: adamw (fp32 moments) | adam8bit | paged-adam8bit (bitsandbytes' paged 8-bit "
        "AdamW: its large states in host-paged unified memory) | adafactor | sgd-momentum | sgd."),
    "engine": ("--engine",
        "Training engine NAME[@VERSION] whose defaults to price (hf-trainer trl torchtune torchtitan megatron unsloth "
        "nanogpt ffnlab; data/engines.json; an unknown version is priced as the newest known, and says so); an "
        "explicit flag overrides its fact. Every answer names it, its version and the error measured for it on "
        "the published peaks (data/published_ranges.json). With fit --mode serve or size --gpu: the serving "
        "engine (vllm sglang llama.cpp; data/serving_engines.json)."),
    "pure_bf16": ("--pure-bf16/--mixed",
        "Pure bf16 training: bf16 weights, gradients and optimizer state, no fp32 master copy (the "
        "model cast to bf16 before the optimizer: torchtune's default)."),
    "offload": ("--offload",
        "CPU offload: none | optimizer (ZeRO-Offload: optimizer state, fp32 gradients and the step on the "
        "host; --zero 1-3) | params (also the weights: FSDP cpu_offload, DeepSpeed offload_param; "
        "--zero 3). The host memory it needs is shown."),
    "offload_activations": ("--offload-acts",
        "Activation offload: checkpointed layers' saved inputs in host memory (torchtune's "
        "enable_activation_offloading; "
        "data/offload.json). The host memory it needs is shown."),
    "fused_kernels": ("--fused-kernels",
        "A trainer's fused kernels in place of peft's and transformers' modules: none | unsloth (Unsloth "
        "2025.1.5's fused LoRA, RMSNorm, RoPE, flash-attn and Cut Cross Entropy Functions, priced from what each "
        "keeps: data/fused_kernels.json; --engine unsloth sets it). Needs a LoRA or QLoRA step with adapters on "
        "q, k, v, o, gate, up and down of a dense SwiGLU decoder on one GPU, --lora-dropout 0, --recompute full "
        "--offload-acts, --loss fused, --attention fused and --grad-accum 1."),
    "compile_loss": ("--compile-loss",
        "A compiled loss (torch.compile): it keeps the logits and 2 fp32 values per token, no fp32 log-softmax."),
    "dropout": ("--dropout/--no-dropout", "Training with dropout: count its masks."),
    "zero3": ("--zero3", "What ZeRO stage 3 runs as: fsdp (PyTorch fully_shard) | deepspeed."),
    "prefetch": ("--prefetch", "FSDP: layers whose all-gather runs ahead of use (FSDP2 default 1)."),
    "reshard_after_forward": ("--reshard/--no-reshard",
        "FSDP: free a layer's gathered weights after its forward (reshard_after_forward; off = "
        "SHARD_GRAD_OP)."),
    "loss": ("--loss",
        "Loss implementation: full (cross-entropy over all logits: transformers, torchtitan, "
        "nanoGPT) | chunked (torchtune) | fused (fused linear cross-entropy, Liger)."),
    "loss_chunks": ("--loss-chunks",
        "Chunks of --loss chunked (torchtune's default 8)."),
    "keep_logits": ("--keep-logits/--free-logits",
        "Whether the caller keeps the model's output (its logits) until the step ends (a plain loop, "
        "nanoGPT) or drops it before backward (model(**batch).loss.backward(): HF Trainer, torchtitan)."),
    "optimizer_impl": ("--optimizer-impl",
        "PyTorch optimizer implementation: foreach (default on GPU) | fused | for-loop."),
    "grad_accum": ("--grad-accum", "Micro-batches per optimizer step (gradients stay alive across them)."),
    "recompute_every": ("--recompute-every",
        "With --recompute full: checkpoint every N-th layer only (torchtitan's selective_ac_option "
        "N)."),
    "finetune": ("--finetune",
        "full (every weight trains) | lora | qlora (peft adapters on a frozen base: the fine-tuning"
        " step's peak)."),
    "lora_rank": ("--lora-rank", "LoRA rank r."),
    "lora_alpha": ("--lora-alpha", "LoRA alpha (scales the update; no effect on memory)."),
    "lora_dropout": ("--lora-dropout",
        "peft's lora_dropout P in [0, 1): above 0 each adapter keeps its own dropped-out copy of its "
        "input and a mask."),
    "lora_targets": ("--lora-targets",
        "all-linear | attention | ffn | attention,ffn | qv (the query and value projections only, the "
        "LoRA paper's choice; qv,ffn with the FFN)."),
    "bnb_keeps_inputs": ("--bnb-keeps-inputs",
        "QLoRA under bitsandbytes before 0.43.2: each 4-bit layer keeps its input for the graph's life "
        "(a caller that holds its logits keeps the previous step's until the next forward returns)."),
    "qlora_base": ("--qlora-base",
        "QLoRA's frozen base: nf4 (NF4, double quantisation) | int8 (bitsandbytes LLM.int8)."),
    "upcast_fp32": ("--upcast/--no-upcast",
        "QLoRA: the base's unquantised parameters (embeddings, head, norms) in fp32, as peft's "
        "prepare_model_for_kbit_training casts them (the hf-trainer engine's default)."),
}
# old spellings, still accepted and left out of --help (a 60-column flag squeezed every help text)
ALIASES: dict[str, str] = {"reshard_after_forward": "--reshard-after-forward/--no-reshard-after-forward"}
# with --finetune lora/qlora the model is spread data parallel only (--dp, --zero 0-3 shard the
# frozen base and the adapters' states): these are not modelled
NOT_WITH_ADAPTERS = ("tp", "pp", "ep", "sp", "grad_dtype", "pure_bf16", "offload")
LORA_ONLY = ("lora_rank", "lora_alpha", "lora_dropout", "lora_targets", "qlora_base", "upcast_fp32", "bnb_keeps_inputs")
# the flags that set an engine's facts, and the Workload field each sets
FLAG_FIELDS = {"keep_logits": "step.logits_held", "loss": "step.loss", "optimizer": "optimizer",
               "optimizer_impl": "step.optimizer_impl", "pure_bf16": "pure_bf16", "recompute": "recompute",
               "recompute_every": "step.recompute_every", "grad_dtype": "grad_dtype",
               "upcast_fp32": "finetune.upcast_fp32", "offload_activations": "step.offload_activations",
               "fused_kernels": "step.fused_kernels", "lora_dropout": "finetune.lora_dropout"}
FUSED_KERNELS_NONE = "none"  # --fused-kernels none: the eager modules


def activation_offload_stash(engine: str = "torchtune") -> int:
    """The forward stash of ``engine``'s activation offload (offloaded tensors kept on the GPU until
    their copy is done; ``data/offload.json``), torchtune's for an engine with no offload of its own
    (``--offload-acts`` prices torchtune's OffloadActivations)."""
    from ffnlab.sizing.memory.parallel import activation_offload

    own = activation_offload(engine.partition("@")[0])
    if own is not None:
        return int(own["forward_stash"])
    facts = activation_offload("torchtune")
    assert facts is not None, "data/offload.json keeps torchtune's activation offload"
    return int(facts["forward_stash"])


CTX = "memory_flags_context"  # the typer.Context parameter memory_flags adds
COMMAND_SETTINGS = ("seq_len", "dtype")  # the commands' own options an --engine-config may set
LAYOUT = ("dp", "tp", "pp", "ep", "zero", "sp")  # fit searches these itself


@dataclass(frozen=True)
class MemoryFlags:
    """The memory flags as given (defaults: those of :data:`OPTIONS`)."""

    batch: int = 1
    recompute: str = "none"
    attention: str = "fused"
    kv_dtype: str | None = None
    weights_dtype: str | None = None
    group_size: int | None = None
    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0
    sp: bool = False
    grad_dtype: str | None = None
    optimizer: str = "adamw"
    engine: str = "hf-trainer"
    pure_bf16: bool = False
    offload: str = "none"
    offload_activations: bool = False
    fused_kernels: str = "none"
    compile_loss: bool = False
    dropout: bool = False
    zero3: str = "fsdp"
    prefetch: int = 1
    reshard_after_forward: bool = True
    loss: str = "full"
    loss_chunks: int = 8
    keep_logits: bool = True
    optimizer_impl: str = "foreach"
    grad_accum: int = 1
    recompute_every: int = 1
    finetune: str = "full"
    lora_rank: int = 16
    lora_alpha: float | None = None
    lora_dropout: float = 0.0
    lora_targets: str = "all-linear"
    qlora_base: str = "nf4"
    upcast_fp32: bool = False
    bnb_keeps_inputs: bool = False
    given: frozenset[str] = frozenset()  # the flags given on the command line, even at their default

    def changed(self) -> list[str]:
        """The flags given a value other than their default, as ``--flag`` names."""
        return [flag(f.name) for f in fields(self) if f.name != "given" and getattr(self, f.name) != f.default]

    def workload(self, *, seq_len: int, dtype: str, mla: str = "latent", finetune: bool = True) -> Workload:
        """The workload flags as one :class:`ffnlab.sizing.memory.workload.Workload` (which checks
        each of them), at the command's ``seq_len``, ``dtype`` and ``mla``; ``finetune``: with the
        fine-tuning flags (:meth:`finetune_options`, checked after the others)."""
        from ffnlab.sizing.memory.fused_kernels import engines as kernel_engines
        from ffnlab.sizing.memory.step import StepOptions
        from ffnlab.sizing.memory.workload import Workload

        choice(self.fused_kernels, "--fused-kernels", (FUSED_KERNELS_NONE, *kernel_engines()))
        kernels = None if self.fused_kernels == FUSED_KERNELS_NONE else self.fused_kernels
        stash = activation_offload_stash(self.engine) if self.offload_activations else 0
        work = Workload(seq_len=seq_len, batch=self.batch, dtype=dtype, grad_dtype=self.grad_dtype,
                        kv_dtype=self.kv_dtype, weights_dtype=self.weights_dtype, group_size=self.group_size,
                        mla=mla, recompute=self.recompute, attention=self.attention, dropout=self.dropout,
                        optimizer=self.optimizer, pure_bf16=self.pure_bf16, offload=self.offload,
                        step=StepOptions(loss=self.loss, loss_chunks=self.loss_chunks, logits_held=self.keep_logits,
                                         optimizer_impl=self.optimizer_impl, grad_accum=self.grad_accum,
                                         recompute_every=self.recompute_every, loss_compiled=self.compile_loss,
                                         offload_activations=self.offload_activations, offload_stash=stash,
                                         fused_kernels=kernels))
        if finetune:
            ft = self.finetune_options()
            work = replace(work, finetune=ft) if ft.adapters else work
        from ffnlab.sizing.memory.engines import apply_engine

        explicit = frozenset(FLAG_FIELDS[k] for k in FLAG_FIELDS if k in self.given or getattr(self, k) != DEFAULTS[k])
        work = apply_engine(work, self.engine, explicit=explicit)
        if work.step.fused_kernels is not None:  # the step the kernels' lists describe, before any model is read
            from ffnlab.sizing.memory.fused_kernels import check_step

            check_step(work)
        return work

    def layout(self) -> Layout:
        """The layout flags as one :class:`ffnlab.sizing.memory.parallel.Layout` (which checks
        each of them), the ZeRO-3 engine's flags as its ``sharding``."""
        from ffnlab.sizing.memory.parallel import Layout
        from ffnlab.sizing.memory.sharding import Sharding

        return Layout(dp=self.dp, tp=self.tp, pp=self.pp, ep=self.ep, zero=self.zero, sp=self.sp,
                      sharding=Sharding(zero3=self.zero3, prefetch=self.prefetch,
                                        reshard_after_forward=self.reshard_after_forward))

    def finetune_options(self) -> FinetuneOptions:
        """The fine-tuning flags checked (:class:`ffnlab.sizing.finetune.FinetuneOptions`; mode
        ``full`` is ordinary training): the LoRA flags only with lora or qlora, ``--qlora-base``
        only with qlora, and no sharding or model-parallel flag with adapters."""
        from ffnlab.sizing.finetune import FINETUNE_MODES, FinetuneOptions, parse_targets

        choice(self.finetune, "--finetune", FINETUNE_MODES)
        given = [f for f in LORA_ONLY if getattr(self, f) != DEFAULTS[f]]
        if self.finetune == "full":
            require(not given, f"{_flags(given)} appl{'ies' if len(given) == 1 else 'y'} with --finetune lora or qlora")
        elif self.finetune == "lora":
            require(self.qlora_base == DEFAULTS["qlora_base"], "--qlora-base applies with --finetune qlora")
            require("upcast_fp32" not in self.given, "--upcast applies with --finetune qlora")
            require(not self.bnb_keeps_inputs, "--bnb-keeps-inputs applies with --finetune qlora")
        if self.finetune != "full":
            bad = [f for f in NOT_WITH_ADAPTERS if getattr(self, f) != DEFAULTS[f]]
            require(not bad, f"--finetune {self.finetune} is modelled data parallel (--dp, --zero 0-3 sharding "
                             f"the frozen base): {_flags(bad)} not modelled with it")
        opts = FinetuneOptions(mode=self.finetune, rank=self.lora_rank, targets=parse_targets(self.lora_targets),
                               alpha=self.lora_alpha, base_format=self.qlora_base,
                               upcast_fp32=self.upcast_fp32 and self.finetune == "qlora",
                               lora_dropout=self.lora_dropout, base_keeps_inputs=self.bnb_keeps_inputs)
        opts.check()
        return opts


def flag(name: str) -> str:
    """The flag of MemoryFlags field ``name`` as --help shows it (``reshard_after_forward``: ``--reshard``)."""
    return OPTIONS[name][0].split("/")[0] if name in OPTIONS else "--" + name.replace("_", "-")


def _flags(names: list[str]) -> str:
    return ", ".join(flag(n) for n in names)


TYPES = typing.get_type_hints(MemoryFlags)  # "given" is no flag
DEFAULTS = {f.name: f.default for f in fields(MemoryFlags)}


def _count_parser(name: str) -> dict[str, Any]:
    """An integer flag's ``parser``: the one count parser (``--batch 1k``, ``--lora-rank 1K``)."""
    from ffnlab.cli.app import counted

    return {"parser": counted(OPTIONS[name][0])} if TYPES[name] in (int, int | None) else {}


def memory_flags(*, without: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the command's ``mem: MemoryFlags`` parameter becomes the memory flags (all of
    :data:`OPTIONS` but ``without``, which keep their defaults), in place, and the command receives
    them as one :class:`MemoryFlags`."""
    names = [n for n in OPTIONS if n not in without]

    def wrap(command: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(command)
        params = list(sig.parameters.values())
        at = next(i for i, p in enumerate(params) if p.name == "mem")
        flags = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=TYPES[n],
                                   default=typer.Option(DEFAULTS[n], OPTIONS[n][0], help=OPTIONS[n][1],
                                                        **_count_parser(n)))
                 for n in names]
        aliases = {n: f"{n}__alias" for n in ALIASES if n in names}  # each old spelling: a hidden flag
        flags += [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=TYPES[n] | None,
                                    default=typer.Option(None, ALIASES[n], hidden=True))
                  for n, a in aliases.items()]
        # typer passes one context: the command's own parameter of that type, or one added here
        own = next((p.name for p in params if p.annotation in (typer.Context, "typer.Context")), None)
        ctx_name = own or CTX
        added = [] if own else [inspect.Parameter(CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            ctx = kwargs.get(ctx_name) if own else kwargs.pop(CTX, None)  # which flags the command line gave
            sources = {n: ctx.get_parameter_source(n) if ctx is not None else None for n in names}
            old = {n: v for n, a in aliases.items() if (v := kwargs.pop(a)) is not None}
            given = frozenset(n for n, s in sources.items() if s is not None and s.name != "DEFAULT") | set(old)
            if ctx is not None:  # the command's own --seq-len and --dtype, which a launch config may also set
                given |= {n for n in COMMAND_SETTINGS if n in ctx.params
                          and getattr(ctx.get_parameter_source(n), "name", "DEFAULT") != "DEFAULT"}
            mem = MemoryFlags(**{**{n: kwargs.pop(n) for n in names}, **old}, given=given)
            return command(*args, mem=mem, **kwargs)

        rest = [*params[at + 1:]]
        positional = [p for p in rest if p.kind != inspect.Parameter.KEYWORD_ONLY]
        keyword = [p for p in rest if p.kind == inspect.Parameter.KEYWORD_ONLY]
        typing.cast(Any, run).__signature__ = sig.replace(parameters=[*params[:at], *flags, *positional, *added,
                                                                       *keyword])
        run.__annotations__ = {**{k: v for k, v in command.__annotations__.items() if k != "mem"},
                               **{n: TYPES[n] for n in names},
                               **{a: TYPES[n] | None for n, a in aliases.items()},
                               **({} if own else {CTX: typer.Context})}
        return run
    return wrap


TRAINER_CONFIG_SUFFIXES = (".toml", ".yaml", ".yml", ".json")


def split_engine_config(path: str | None) -> tuple[str | None, str | None]:
    """``--engine-config FILE`` as (a serving engine's command line, a trainer's launch config):
    a .toml, .yaml, .yml or .json file is a trainer's config, any other file a ``vllm serve`` or
    ``sglang.launch_server`` line (the ones ``engine_spec.LAUNCH_LINES`` names)."""
    if path is None:
        return None, None
    from pathlib import Path

    trainer = Path(path).suffix.lower() in TRAINER_CONFIG_SUFFIXES
    return (None, path) if trainer else (path, None)


def apply_engine_config(mem: MemoryFlags, path: str | None, *, seq_len: int, dtype: str,
                        layout: bool = True) -> tuple[MemoryFlags, int, str]:
    """``--engine-config FILE``: the launch config's settings (:mod:`ffnlab.sizing.memory.engine_config`)
    applied under the command line's own flags, its engine under ``--engine``; the settings become
    explicit, so the engine's profile does not override them. ``layout`` False (``fit``, which
    searches layouts): its parallel sizes are left out. Says on stderr which keys it used, which the
    command line overrode and which it ignored, once the command is past its checks
    (:func:`ffnlab.cli.notes.say`). Returns the flags, ``seq_len`` and ``dtype``."""
    if path is None:
        return mem, seq_len, dtype
    from pathlib import Path

    from ffnlab.cli.notes import say
    from ffnlab.files import read_mapping
    from ffnlab.sizing.memory.engine_config import detect_format, read_engine_config

    suffix = Path(path).suffix
    detect_format({}, suffix)  # a bad suffix: one line, before the file is read
    cfg = read_engine_config(read_mapping(path, "launch config", empty_ok=True), suffix, path)
    changes: dict[str, Any] = {}
    over: list[str] = []
    left: list[str] = []
    for name, value in cfg.settings:
        if name in mem.given:
            over.append("--" + name.replace("_", "-"))
        elif name in LAYOUT and not layout:
            left.append(name)
        elif name == "seq_len":
            seq_len = int(str(value))
        elif name == "dtype":
            dtype = str(value)
        else:
            changes[name] = value
    if "engine" in mem.given:
        over.append("--engine")
    else:
        changes["engine"] = cfg.engine
    adapters = [n for n in LORA_ONLY if n in changes]
    if adapters and changes.get("finetune", mem.finetune) == "full":  # a LoRA key beside use_peft false, say
        unused = adapters
        changes = {k: v for k, v in changes.items() if k not in adapters}
    else:
        unused = []
    mem = replace(mem, **changes, given=mem.given | (set(changes) - {"engine"}))
    # the settings checked as the flags are before anything is said of them: a refused value is the
    # one error line, not the third line after what was "used"
    from ffnlab.sizing.memory.workload import check_seq_len

    check_seq_len(seq_len)
    mem.workload(seq_len=seq_len, dtype=dtype, finetune=False)
    used = "; ".join(f"{k} = {v} ({what})" for k, v, what in cfg.used) or "no key ffnlab reads"
    # said once the command is past its checks against the model too (a pipeline deeper than its
    # layers, adapters with no --from model): a refusal there is the one line, not the last of five
    say(f"engine config {path}: {cfg.title}, engine {cfg.engine}")
    say(f"  used: {used}")
    if over:
        say(f"  the command line's {', '.join(sorted(set(over)))} over the file's")
    if left:
        say(f"  left out: {', '.join(left)} (fit searches the layout itself: give --gpus)")
    if unused:
        say(f"  left out: {', '.join(unused)} (the run trains every weight: LoRA settings apply with "
            "--finetune lora or qlora)")
    unread = [k for k, why in cfg.ignored if why.startswith("not a memory setting")]
    odd = [f"{k} ({why})" for k, why in cfg.ignored if not why.startswith("not a memory setting")]
    if odd:
        say(f"  ignored, a value ffnlab does not model: {'; '.join(odd)}")
    if unread:
        say(f"  ignored, not a memory setting ({len(unread)}): {', '.join(unread)}")
    return mem, seq_len, dtype


def refuse_without_model(mem: MemoryFlags, **given: tuple[Any, Any]) -> None:
    """``size`` without ``--n-layers`` sizes one FFN: refuse the flags only a whole model uses
    (``given``: other such flags as ``name=(value, default)``)."""
    used = ["--" + k.replace("_", "-") for k, (v, default) in given.items() if v != default] + mem.changed()
    flags = ", ".join(used)
    require(not used, f"{flags} size{'s' if len(used) == 1 else ''} a whole model: give --n-layers "
                      "(without it, size gives the FFN width and its parameters only)")
