"""Published peak memory of training steps, kept as data (``data/published_peaks.json``).

Each case is one figure a trainer published (its docs, a benchmark table or CSV) with its source,
the trainer's version, the quoted figure, how it was measured (allocated, active, reserved,
nvidia-smi, or a capacity: the largest setting that fit a card) and every setting needed to
reproduce it; a setting the source does not give is the string ``"unknown"``. The file's
``about`` field is the schema.

:func:`case_problems` says what a case lacks (the test keeps every case complete);
:func:`pricing` turns a case's settings into ffnlab's :class:`Workload` and :class:`Layout`,
with the settings ffnlab cannot express today (each a sentence) and the smaller approximations;
``benchmarks/memory_published.py`` prices every case with it. :func:`predicted_peak` is ffnlab's
peak for a case, :func:`predicted_capacity` its longest sequence that fits a capacity's card and
:func:`compared` the one ratio either gives (like with like); :func:`engine_ranges` the error
range per engine over the cases it expresses
(what ``benchmarks/memory_published.py --write-ranges`` keeps in ``data/published_ranges.json``
and every answer names beside its engine). Pure Python: no torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import TypedDict

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.finetune import FinetuneOptions, finetune_summary
from ffnlab.sizing.memory.parallel import Layout, activation_offload, memory_summary
from ffnlab.sizing.memory.published_ranges import CapacityRatio, CaseError, EngineRange
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.workload import Workload

DATA = "published_peaks.json"
UNKNOWN = "unknown"
SOURCE_KEYS = ("url", "where")  # and repo + path + commit for a file in a repository
FIGURE_KEYS = ("value", "unit", "bytes")
LAYOUT_KEYS = ("dp", "tp", "pp", "cp", "zero", "engine")
FINETUNE_KEYS = ("mode", "rank", "alpha", "targets", "base_format", "lora_dropout")
ATTENTION_MODULES = frozenset({"q", "k", "v", "o", "q_proj", "k_proj", "v_proj", "o_proj", "output_proj"})
FFN_MODULES = frozenset({"gate", "up", "down", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3"})
RECOMPUTE_MAP = {"none": "none", "full": "full", "selective-op": "op-selective"}
# torch.compile of each layer under checkpointing, priced eager, and why that holds
COMPILE_UNDER_CHECKPOINTING = {
    "full": ("torch.compile of each layer under full checkpointing priced eager: the checkpoint around the compiled "
             "layer keeps its input as in eager (torchtune compiles each layer, then wraps it; recipes/"
             "lora_finetune_single_device.py _setup_model), compile only changes the recomputed layer's own set"),
    "selective-op": ("torch.compile of each checkpointed block priced eager: the op-level policy fixes which op "
                     "outputs "
                     "are saved (compile honours it, torchtitan compiles each block after AC wrapping: "
                     "parallelize_llama.py at 9dec370; its loss is not compiled, train.py), compile fuses the "
                     "elementwise ops between them"),
}

# fms-acceleration's foak kernels under full checkpointing, priced eager, and why that holds
FOAK_UNDER_FULL_CHECKPOINTING = (
    "fms-acceleration's foak kernels priced eager under full checkpointing: the checkpoint keeps each layer's input "
    "as in eager, and inside the one recomputed layer the kernels keep less than the eager ops they replace (fused "
    "q/k/v/o LoRA: the input and each adapter's dropped input, where peft keeps the dropped inputs and their masks; "
    "RMSNorm: its bf16 input and one fp32 statistic per row, where eager keeps fp32 copies; RoPE: in place, cos and "
    "sin only); fast_loss true selects the custom-loss rule, not the fused linear cross-entropy: it upcasts the "
    "logits to fp32 as transformers does and keeps them for backward where eager keeps the same-sized fp32 "
    "log-softmax, so the full loss is priced (plugins/fused-ops-and-kernels at 24bdadb: "
    "framework_plugin_fast_kernels.py FILTER_MAP, models/mistral.py, fused_ops/unsloth_lora/bnb/fast_lora.py, "
    "kernels/unsloth/rms_layernorm.py, rope_embedding.py, cross_entropy_loss.py)")


class PeakSource(TypedDict, total=False):
    """Where a figure was published: ``url`` and ``where``, and ``repo``, ``path`` and ``commit``
    for a file in a repository."""

    url: str
    where: str
    repo: str
    path: str
    commit: str


class _PeakFigure(TypedDict):
    value: float  # as the source prints it, in ``unit``
    unit: str  # one of the file's ``units``
    bytes: int | None  # the value in bytes; None for a capacity


class PeakFigure(_PeakFigure, total=False):
    """The published figure."""

    unit_note: str  # where the source does not say which unit
    seq_len_fitting: int  # a capacity: the longest sequence that fit the card
    nvidia_smi_mib: int


class LayoutSettings(TypedDict):
    """A case's parallel layout (``engine``: how the trainer shards, in words)."""

    dp: int
    tp: int
    pp: int
    cp: int
    zero: int
    engine: str


class _LoraSettings(TypedDict):
    mode: str  # lora or qlora
    rank: int
    alpha: int | str  # "unknown" where the source does not say
    targets: list[str]  # the modules as the source names them
    base_format: str | None
    lora_dropout: float | str


class LoraSettings(_LoraSettings, total=False):
    """A LoRA / QLoRA case's adapters; the notes say where a value comes from."""

    adapter_dtype: str
    double_quant: bool
    prepare: str  # the model preparation the trainer runs (prepare_model_for_kbit_training)
    bnb_saves_input: bool  # a bitsandbytes that keeps each 4-bit layer's input
    head_quantized: bool  # the LM head quantised to 4 bits too (Lightning's BitsandbytesPrecision)
    # the dtype the 4-bit weights were quantised from ("fp16", "bf16"), which dequantize_4bit returns
    bnb_quant_dtype: str
    adapter_note: str
    base_note: str
    bnb_note: str
    head_note: str
    targets_note: str


class _PeakSettings(TypedDict):
    # the file's ``required_settings``; a setting the source does not give is "unknown"
    model: str  # a zoo entry
    hf_id: str
    gpu: str
    gpus: int
    layout: LayoutSettings
    micro_batch: int
    seq_len: int
    precision: str
    optimizer: str
    optimizer_impl: str
    activation_checkpointing: str
    recompute: str
    finetune: LoraSettings | None  # None: full training
    loss: str
    logits_freed: bool | str
    torch_compile: bool
    float8: bool
    attention: str
    activation_offload: bool
    optimizer_in_backward: bool
    grad_accum: int | str


class PeakSettings(_PeakSettings, total=False):
    """Every setting needed to reproduce a case; the optional ones and the notes."""

    loss_chunks: int
    loss_compiled: bool
    fused_kernels: str
    fused_kernels_engine: str  # a data/fused_kernels.json engine whose kept tensors ffnlab prices
    framework_config: str
    dropout: bool
    ac_note: str
    attention_note: str
    batch_note: str
    compile_note: str
    logits_note: str
    loss_note: str
    offload_note: str
    optimizer_note: str
    precision_note: str
    seq_note: str
    qkv_fused: bool  # the trainer builds one q|k|v projection
    qkv_note: str
    # the output projection's input is a copy of the attention kernel's output (q head-major in memory)
    attn_out_copied: bool
    attn_out_note: str


class PeakCase(TypedDict):
    """One published figure (the file's ``about`` says what each field holds)."""

    id: str
    trainer: str  # one of the file's ``trainers``
    trainer_version: str
    source: PeakSource
    quoted: str
    figure: PeakFigure
    memory_kind: str  # one of the file's ``memory_kinds``
    memory_kind_note: str
    settings: PeakSettings
    unknown: list[str]
    inferred: list[str]


class PeaksFile(TypedDict):
    """data/published_peaks.json: the schema, its prose and vocabularies, and the cases."""

    schema: int
    about: str
    trainers: list[str]
    memory_kinds: list[str]
    units: list[str]
    required_settings: list[str]
    cases: list[PeakCase]


@lru_cache(maxsize=1)
def load() -> PeaksFile:
    """The whole file: schema, about, vocabularies and cases."""
    text = resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8")
    data: PeaksFile = json.loads(text)
    return data


def cases() -> list[PeakCase]:
    return load()["cases"]


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def case_problems(case: PeakCase, doc: PeaksFile | None = None) -> list[str]:
    """What ``case`` lacks or gets wrong against the file's vocabularies (``doc``: the file;
    default the kept one); empty when complete. Every key is read with ``get`` and every value
    checked: a case being written may lack any of them."""
    doc = doc or load()
    cid = case.get("id") or "<no id>"
    out: list[str] = []

    def bad(msg: str) -> None:
        out.append(f"{cid}: {msg}")

    for key in ("id", "trainer", "trainer_version", "quoted", "memory_kind", "memory_kind_note"):
        if _blank(case.get(key)):
            bad(f"no {key}")
    if case.get("trainer") not in doc["trainers"]:
        bad(f"trainer {case.get('trainer')!r} is not one of {doc['trainers']}")
    if case.get("memory_kind") not in doc["memory_kinds"]:
        bad(f"memory_kind {case.get('memory_kind')!r} is not one of {doc['memory_kinds']}")
    src = case.get("source") or {}
    for key in SOURCE_KEYS:
        if _blank(src.get(key)):
            bad(f"source has no {key}")
    if src.get("repo") and any(_blank(src.get(k)) for k in ("path", "commit")):
        bad("a repository source needs its path and commit")
    fig = case.get("figure") or {}
    for key in FIGURE_KEYS:
        if key not in fig:
            bad(f"figure has no {key}")
    if fig.get("unit") not in doc["units"]:
        bad(f"unit {fig.get('unit')!r} is not one of {doc['units']}")
    if case.get("memory_kind") == "capacity":
        if not isinstance(fig.get("seq_len_fitting"), int):
            bad("a capacity figure needs seq_len_fitting")
    elif not isinstance(n_bytes := fig.get("bytes"), int) or n_bytes <= 0:
        bad("a peak needs its figure in bytes")
    if not isinstance(fig.get("value"), (int, float)) or fig.get("value", 0) <= 0:
        bad("figure value must be a positive number")
    settings = case.get("settings") or {}
    for key in doc["required_settings"]:
        if key not in settings:
            bad(f"settings has no {key} (give 'unknown' when the source does not say)")
        elif key != "finetune" and _blank(settings.get(key)):
            bad(f"setting {key} is empty (give 'unknown' when the source does not say)")
    lay = settings.get("layout")
    if isinstance(lay, dict):
        out += [f"{cid}: layout has no {k}" for k in LAYOUT_KEYS if k not in lay]
    ft = settings.get("finetune")
    if isinstance(ft, dict):
        out += [f"{cid}: finetune has no {k}" for k in FINETUNE_KEYS if k not in ft]
    unknown = case.get("unknown")
    if not isinstance(unknown, list) or not isinstance(case.get("inferred"), list):
        bad("unknown and inferred must be lists")
    elif any(v == UNKNOWN for v in settings.values()) and not unknown:
        bad("a setting is unknown but the unknown list is empty")
    return out


def problems(doc: PeaksFile | None = None) -> list[str]:
    """Every case's problems, and duplicate ids."""
    doc = doc or load()
    out = [p for c in doc["cases"] for p in case_problems(c, doc)]
    ids = [c.get("id") for c in doc["cases"]]
    out += [f"{i}: duplicate id" for i in sorted({i for i in ids if ids.count(i) > 1}, key=str)]
    return out


@dataclass(frozen=True)
class Pricing:
    """A case as ffnlab prices it: the model, the workload, the layout, the API that prices it, what
    ffnlab cannot express (each a sentence; the nearest setting is priced instead) and the smaller
    approximations."""

    model: str
    work: Workload
    layout: Layout
    api: str  # "memory_summary" (full training) or "finetune_summary" (LoRA / QLoRA)
    not_expressible: tuple[str, ...] = ()
    approximations: tuple[str, ...] = field(default=())
    qkv_fused: bool = False  # the trainer builds one q|k|v projection (settings' qkv_fused)

    @property
    def expressible(self) -> bool:
        return not self.not_expressible


def _targets(names: list[str]) -> tuple[tuple[str, ...], str | None]:
    got = {n.lower() for n in names}
    groups: list[str] = []
    note = None
    attn, ffn = got & ATTENTION_MODULES, got & FFN_MODULES
    projections = {n.removesuffix("_proj").replace("output", "o") for n in attn}
    if projections == {"q", "v"}:  # the LoRA paper's query and value (--lora-targets qv)
        groups.append("qv")
    elif attn:
        groups.append("attention")
        if len(projections) < 4:
            note = (f"LoRA on {', '.join(sorted(attn))} only: ffnlab adapts all four attention projections "
                    "(a few adapter parameters more)")
    if ffn:
        groups.append("ffn")
    return tuple(groups) or ("attention",), note


def pricing(case: PeakCase) -> Pricing:
    """The case's settings as ffnlab's workload and layout, with what it cannot express."""
    s = case["settings"]
    lay_s = s["layout"]
    nx: list[str] = []
    approx: list[str] = []
    ft = s["finetune"]
    # pure bf16 LoRA (torchtune): the adapters, their gradients and AdamW moments in bf16
    bf16_adapters = s["precision"] == "pure-bf16" and ft is not None and ft.get("adapter_dtype") == "bf16"
    if s["precision"] == "pure-bf16" and ft is not None and not bf16_adapters:
        approx.append("pure bf16 with a frozen bf16 base: the adapters, their gradients and AdamW states in bf16 "
                      "(ffnlab counts fp32 adapters and an fp32 copy of each adapter's input, as peft keeps them)")
    if s["recompute"] == UNKNOWN:
        nx.append("activation checkpointing not stated (priced with full)")
    if s["torch_compile"] is True and s["recompute"] in COMPILE_UNDER_CHECKPOINTING:
        approx.append(COMPILE_UNDER_CHECKPOINTING[s["recompute"]])
    elif s["torch_compile"] is True:
        nx.append("torch.compile (its fused kernels change the saved activations; priced eager)")
    if s.get("loss_compiled") is True:
        approx.append("the compiled loss's saved tensors (the logits and two fp32 statistics per token) as torch "
                      "2.13's "
                      "partitioner picks them on CPU (tests/sizing/memory/test_memory_offload.py), not at the run's "
                      "torch")
    if s["float8"] is True:
        nx.append("float8 linear layers")
    offload = activation_offload(case["trainer"]) if s["activation_offload"] is True else None
    if s["activation_offload"] is True and offload is None:
        nx.append(f"activations offloaded to CPU by {case['trainer']}, whose offload ffnlab has no facts for (priced "
                  f"on the GPU)")
    elif offload is not None and offload["forward_stash"]:
        approx.append(f"{case['trainer']}'s forward stash ({offload['forward_stash']} offloaded tensors waiting for "
                      f"their "
                      "copy at forward end) counted as the final norm's saved tensors and the last layer's input")
    if s["optimizer_in_backward"] is True:
        nx.append("optimizer step fused into backward")
    if int(lay_s.get("cp", 1)) > 1:
        nx.append("context parallelism")
    kernels = s.get("fused_kernels_engine")
    if s.get("fused_kernels") and kernels is None:
        nx.append(f"{s['fused_kernels']}: fused kernels keep other tensors than the modules ffnlab prices")
    elif kernels is not None:
        approx.append(f"{kernels}'s fused kernels priced from what each of its autograd Functions keeps, read from "
                      f"its source (data/fused_kernels.json; research/unsloth_e3162dc.md)")
    if "foak" in str(s.get("framework_config", "")) and s["recompute"] == "full":
        approx.append(FOAK_UNDER_FULL_CHECKPOINTING)
    elif "foak" in str(s.get("framework_config", "")):
        nx.append("fms-acceleration's fused LoRA, norm, RoPE and cross-entropy kernels (foak)")
    upcast = ft is not None and "prepare_model_for_kbit_training" in str(ft.get("prepare", ""))
    if upcast:
        approx.append("prepare_model_for_kbit_training's fp32 upcast: ffnlab prices the fp32 embedding, norms, head "
                      "and residual stream, and behind the fp32 norms the adapters' input and a dense FFN's hidden "
                      "tensors in fp32 (bitsandbytes returns a projection's output in its input's dtype), the "
                      "attention kernel's in bf16")
    if s["optimizer"] == "paged-adamw":
        approx.append("bitsandbytes' PagedAdamW keeps the fp32 states of each tensor of 1e5 values or more in CUDA "
                      "unified memory (cudaMallocManaged), which max_memory_allocated does not count; ffnlab counts "
                      "AdamW's states on the GPU")
    for key in ("optimizer", "precision"):
        if s[key] == UNKNOWN:
            nx.append(f"{key} not stated (priced with {'AdamW' if key == 'optimizer' else 'mixed bf16'})")
    if case["memory_kind"] == "reserved":
        approx.append("published is reserved memory (the caching allocator's peak); ffnlab predicts allocated")
    if case["memory_kind"] == "active":
        approx.append("published is active memory (allocated up to block rounding)")
    if "FSDP1" in str(lay_s.get("engine", "")):
        approx.append("FSDP1 (FullyShardedDataParallel) priced with ffnlab's FSDP2 working terms")
    if s["precision"] == "mixed-bf16-fsdp2":
        approx.append("FSDP2 keeps fp32 sharded parameters and gradients; ffnlab counts bf16 weights and "
                      "gradients plus an fp32 master: the same 16 B per parameter with AdamW")

    step = StepOptions(loss=s["loss"] if s["loss"] in ("full", "chunked", "fused") else "full",
                       loss_chunks=int(s.get("loss_chunks", 8)),
                       logits_held=s["logits_freed"] is not True,
                       optimizer_impl=s["optimizer_impl"] if s["optimizer_impl"] in ("foreach", "fused") else "foreach",
                       grad_accum=s["grad_accum"] if isinstance(s["grad_accum"], int) else 1,
                       loss_compiled=s.get("loss_compiled") is True, offload_activations=offload is not None,
                       offload_stash=offload["forward_stash"] if offload else 0, fused_kernels=kernels)
    if s["logits_freed"] == UNKNOWN:
        approx.append("whether the trainer frees its logits is not stated (priced as held)")
    finetune = None
    if ft is not None:
        targets, note = _targets(ft["targets"])
        if note:
            approx.append(note)
        if ft.get("adapter_dtype") == "bf16" and s["precision"] != "pure-bf16":
            approx.append("bf16 adapters (ffnlab counts fp32 adapters, as peft keeps them)")
        if ft.get("double_quant") is False:
            approx.append("NF4 without double quantisation (ffnlab counts bitsandbytes' double-quantised scales)")
        alpha = given if isinstance(given := ft.get("alpha"), (int, float)) else None
        keeps = ft["mode"] == "qlora" and ft.get("bnb_saves_input") is True
        # MatMul4Bit dequantises to the dtype the weight was quantised from, then casts to the input's
        quant_from, compute = ft.get("bnb_quant_dtype"), "bf16"
        dropout = float(p) if isinstance(p := ft.get("lora_dropout"), (int, float)) else 0.0
        finetune = FinetuneOptions(mode=ft["mode"], rank=int(ft["rank"]), targets=targets, alpha=alpha,
                                   base_format=ft["base_format"] or "nf4", upcast_fp32=upcast and ft["mode"] == "qlora",
                                   adapter_dtype="bf16" if bf16_adapters else "fp32",
                                   lora_dropout=dropout,
                                   base_keeps_inputs=keeps,
                                   attn_out_copied=keeps and s.get("attn_out_copied") is True,
                                   head_4bit=ft["mode"] == "qlora" and ft.get("head_quantized") is True,
                                   dequant_copies=2 if quant_from not in (None, compute) else 1)
    optimizer = {"adamw": "adamw", "adam8bit": "adam8bit", "paged-adamw": "adamw"}.get(s["optimizer"], "adamw")
    work = Workload(seq_len=int(s["seq_len"]), batch=int(s["micro_batch"]), dtype="bf16",
                    recompute=RECOMPUTE_MAP.get(s["recompute"], "full"),
                    attention="fused" if s["attention"] == "fused" else "eager",
                    optimizer=optimizer, step=step, finetune=finetune,
                    pure_bf16=s["precision"] == "pure-bf16" and finetune is None)
    layout = Layout(dp=int(lay_s["dp"]), tp=int(lay_s["tp"]), pp=int(lay_s["pp"]), zero=int(lay_s["zero"]))
    return Pricing(model=s["model"], work=work, layout=layout,
                   api="finetune_summary" if finetune is not None else "memory_summary",
                   not_expressible=tuple(nx), approximations=tuple(approx), qkv_fused=s.get("qkv_fused") is True)


def priced_config(price: Pricing) -> ModelConfig:
    """The zoo model's architecture as the case's trainer builds it (``qkv_fused``: one q|k|v
    projection, as LitGPT's ``CausalSelfAttention.attn`` is)."""
    from dataclasses import replace

    from ffnlab.sizing.zoo import find

    cfg = find(price.model).config()
    assert cfg is not None, price.model
    return replace(cfg, attn=replace(cfg.attn, qkv_fused=True)) if price.qkv_fused else cfg


def predicted_peak(case: PeakCase) -> tuple[int, Pricing]:
    """ffnlab's peak bytes per GPU for the case's settings (the nearest it can express) and how it
    priced them: ``memory_summary`` for full training, ``finetune_summary`` for LoRA / QLoRA."""
    price = pricing(case)
    cfg = priced_config(price)
    if price.api == "finetune_summary":
        return finetune_summary(cfg, price.work, price.layout).peak.peak_bytes, price
    peak = memory_summary(cfg, price.work, price.layout).peak_bytes
    assert peak is not None
    return peak, price


CAPACITY_CARDS = {"A100 80GB": "A100"}  # the card a capacity names, as ffnlab's accelerator table calls it


def card_budget(case: PeakCase) -> int:
    """The allocated peak the capacity's card holds: the memory the device reports, less the
    caching allocator's assumed reserved share (what ``fit`` allows, without fit's reserve: the
    published run went up to where it ran out of memory)."""
    from ffnlab.sizing.memory.allocator import allocated_budget
    from ffnlab.sizing.memory.hardware import find_accelerator

    gpu = case["settings"]["gpu"]
    name = next(v for k, v in CAPACITY_CARDS.items() if gpu.startswith(k))
    return allocated_budget(find_accelerator(name).memory_bytes)


def predicted_capacity(case: PeakCase) -> tuple[int, Pricing]:
    """ffnlab's longest sequence (every other setting the case's) whose peak fits the card of a
    capacity case (:func:`card_budget`): a bisection on the sequence length, the peak rising with it."""
    from dataclasses import replace

    assert case["memory_kind"] == "capacity", case["id"]
    budget = card_budget(case)
    price = pricing(case)

    def peak_at(seq_len: int) -> int:
        at: PeakCase = {**case, "settings": {**case["settings"], "seq_len": seq_len}}
        return predicted_peak(at)[0]

    lo, hi = 0, 2 * int(case["figure"]["seq_len_fitting"])
    while peak_at(hi) <= budget:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if peak_at(mid) <= budget else (lo, mid)
    return lo, replace(price, work=replace(price.work, seq_len=max(1, lo)))


def peak_bytes(case: PeakCase) -> int:
    """The published peak in bytes (a capacity has none)."""
    found = case["figure"]["bytes"]
    assert found is not None, f"{case['id']}: a capacity has no peak bytes"
    return found


def compared(case: PeakCase) -> tuple[float, Pricing]:
    """ffnlab against the published figure, like with like: a peak as ffnlab's allocated peak over
    the published bytes; a capacity as ffnlab's longest fitting sequence over the published one."""
    if case["memory_kind"] == "capacity":
        length, price = predicted_capacity(case)
        return length / case["figure"]["seq_len_fitting"], price
    ours, price = predicted_peak(case)
    return ours / peak_bytes(case), price


def engine_ranges(engines: tuple[str, ...]) -> dict[str, EngineRange]:
    """Per engine name: ffnlab's error (predicted / published - 1, rounded to 1e-4) on each
    published peak of that trainer that ffnlab expresses (capacities left out: they are not a
    peak), the lowest and highest, how many of its cases ffnlab cannot express and (a key only
    where there are any) the capacities it expresses, each as ffnlab's longest fitting length over
    the published one (:func:`compared`, rounded to 1e-4)."""
    out: dict[str, EngineRange] = {}
    for name in engines:
        errors: list[CaseError] = []
        capacities: list[CapacityRatio] = []
        left_out = 0
        for case in cases():
            if case["trainer"] != name:
                continue
            ours, price = predicted_peak(case)
            if price.expressible and case["memory_kind"] == "capacity":
                capacities.append({"id": case["id"], "ratio": round(compared(case)[0], 4)})
                continue
            if not price.expressible or case["memory_kind"] == "capacity":
                left_out += 1
                continue
            errors.append({"id": case["id"], "error": round(ours / peak_bytes(case) - 1, 4)})
        values = [e["error"] for e in errors]
        entry: EngineRange = {"cases": errors, "low": min(values, default=None), "high": max(values, default=None),
                              "not_expressible": left_out}
        if capacities:
            entry["capacities"] = capacities
        out[name] = entry
    return out


__all__ = ["DATA", "LayoutSettings", "LoraSettings", "PeakCase", "PeakFigure", "PeakSettings", "PeakSource",
           "PeaksFile", "Pricing", "activation_offload", "card_budget", "case_problems", "cases", "compared",
           "engine_ranges", "load", "peak_bytes", "predicted_capacity", "predicted_peak", "pricing", "problems"]
