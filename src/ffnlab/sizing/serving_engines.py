"""Serving engines as profiles: how vLLM and SGLang size their KV cache, version by version, read
from the engines' own code (``data/serving_engines.json``, each fact with the file it was read from).

vLLM (``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory``): the engine may use
``gpu_memory_utilization`` of the total CUDA reports; the cache is that less torch's peak during the
profile run (the weights plus the activation peak of a dummy batch) and the memory allocated outside
torch (NCCL, the CUDA context). CUDA graphs are captured after the cache is sized. The cache is cut
into blocks of ``block_size`` tokens: ``blocks = cache // (block_size x bytes per token)``, and
vLLM's "Maximum concurrency" is ``blocks x block_size / max_model_len``.

SGLang (0.4.9.post2, ``model_runner.py`` ``profile_max_num_token``): the cache is what is free after the weights
less ``(1 - mem_fraction_static)`` of the total, in tokens of ``cell_size`` bytes.

These functions reproduce the engines' arithmetic from the parts. :func:`engine_estimate` also
predicts the parts for a model on a card: the weights (ffnlab's serving weights), the total CUDA
reports (``accelerators.json``), non-torch memory by parallel size and the activation peak of the
profile run (the sampler's logits for ``max_num_seqs`` sequences, a rule each profile keeps with
the logs it was fitted to), then the cache, its blocks and tokens and the concurrency at a length,
as the engine logs them. The knobs are the engine's own (:class:`EngineKnobs`);
:func:`read_engine_command` reads them from a ``vllm serve`` or ``sglang.launch_server`` line.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, TypedDict

from ffnlab.errors import FfnlabError, require
from ffnlab.render import GIB
from ffnlab.sizing.engine_spec import LAUNCH_LINES
from ffnlab.sizing.result import Result
from ffnlab.validation import show

if TYPE_CHECKING:
    from ffnlab.sizing.config import ModelConfig
    from ffnlab.sizing.memory.hardware import Accelerator


class NonTorchGib(TypedDict):
    """Memory allocated outside torch (NCCL, the CUDA context), GiB: on one GPU and with tp > 1."""

    tp1: float
    tp_gt_1: float


class ActivationRule(TypedDict):
    """vLLM's profile-run peak: ``max_num_seqs x vocabulary x bytes_per_logit + base_gib``."""

    rule: str
    bytes_per_logit: float
    base_gib: float
    source: str  # the logs it was fitted to


class _ServingProfile(TypedDict):
    cache: str  # how the engine sizes its cache, in words
    cache_source: str
    block_size: int


class ServingProfile(_ServingProfile, total=False):
    """One version of a serving engine (data/serving_engines.json): the facts its arithmetic reads
    and, beside each, the file it was read from (``*_source``)."""

    gpu_memory_utilization: float  # vLLM's default share of the total
    gpu_memory_utilization_source: str
    max_num_seqs: int
    max_num_batched_tokens: int
    defaults_source: str
    non_torch_gib: NonTorchGib
    non_torch_source: str
    activation: ActivationRule
    cuda_graphs_subtracted: bool  # whether the capture is subtracted before the cache is sized
    cuda_graphs_source: str
    cuda_graphs: str
    sampler_warmup: str
    blocks: str
    blocks_source: str
    concurrency: str
    concurrency_source: str
    sliding_window: str
    sliding_window_source: str
    mem_fraction_static_note: str  # SGLang
    cells: str  # llama.cpp: its cells, cache types' bytes per value, micro-batch and compute buffers
    cells_source: str
    type_bytes: dict[str, float]
    type_bytes_source: str
    n_ubatch: int
    compute_buffers: str


class ServingEngine(TypedDict):
    display: str
    default: str  # the version priced without @VERSION
    versions: dict[str, ServingProfile]


class ServingEnginesFile(TypedDict):
    """data/serving_engines.json."""

    note: str
    engines: dict[str, ServingEngine]


@lru_cache(maxsize=1)
def _data() -> ServingEnginesFile:
    data: ServingEnginesFile = json.loads(
        resources.files("ffnlab").joinpath("data/serving_engines.json").read_text())
    return data


def engine_names() -> tuple[str, ...]:
    """The serving engines with a memory profile."""
    return tuple(_data()["engines"])


def engine_profile(spec: str) -> tuple[str, str, ServingProfile]:
    """The engine, version and facts of ``NAME[@VERSION]`` (the engine's default version without
    one); an unknown name or version is refused with the choices."""
    from ffnlab.sizing.engine_spec import split_engine

    name, given = split_engine(spec)  # NAME@ with no version: refused
    engines = _data()["engines"]
    if name not in engines:
        raise FfnlabError(f"unknown serving engine {show(name)}: choose one of {', '.join(engines)}")
    eng = engines[name]
    version = given or eng["default"]
    if version not in eng["versions"]:
        raise FfnlabError(f"{eng['display']} has no profile {show(version)}: choose one of "
                          f"{', '.join(eng['versions'])}")
    return name, version, eng["versions"][version].copy()


@dataclass(frozen=True)
class EngineCache:
    """What the engine's arithmetic gives: bytes for the cache, blocks and tokens."""

    cache_bytes: int
    blocks: int
    tokens: int


def knob_given(value: object) -> bool:
    """A knob that was set: not None and not a switch left off (by identity: ``0.0 == False``, and a
    share of 0 is a value, refused by its range check, never the engine's default)."""
    return value is not None and value is not False


def check_share(value: float, flag: str) -> float:
    """``value`` as a share of the total CUDA reports that the engine may use (vLLM's
    ``--gpu-memory-utilization``, SGLang's ``--mem-fraction-static``): in (0, 1]. The one rule for
    the flag, a launch line's value and :func:`engine_estimate`'s knob; ``flag`` names where it came
    from in the error."""
    require(math.isfinite(value) and 0 <= value <= 1, f"{flag} must be in (0, 1], got {show(value)}")
    require(value > 0, f"{flag} must be > 0 (a share in (0, 1]): a share of 0 leaves the engine no memory")
    return value


def vllm_cache_bytes(total_bytes: float, utilization: float, *, weights_bytes: float, activation_bytes: float,
                     non_torch_bytes: float) -> int:
    """vLLM's KV cache bytes: ``utilization x total - (weights + activation peak) - non-torch``."""
    return int(total_bytes * utilization - (weights_bytes + activation_bytes) - max(non_torch_bytes, 0.0))


def sglang_cache_bytes(total_bytes: float, mem_fraction_static: float, *, free_after_weights_bytes: float) -> int:
    """SGLang's KV cache bytes: what is free after the weights less ``(1 - fraction) x total``."""
    return int(free_after_weights_bytes - total_bytes * (1.0 - mem_fraction_static))


def blocks_and_tokens(cache_bytes: float, bytes_per_token: float, block_size: int) -> EngineCache:
    """The cache cut into whole blocks of ``block_size`` tokens (SGLang: ``block_size`` 1)."""
    if bytes_per_token <= 0 or block_size < 1:
        raise FfnlabError("bytes per token must be > 0 and the block size >= 1")
    blocks = max(int(cache_bytes // (bytes_per_token * block_size)), 0)
    return EngineCache(cache_bytes=int(cache_bytes), blocks=blocks, tokens=blocks * block_size)


def gqa_bytes_per_token(layers: int, kv_heads: int, head_dim: int, *, tp: int = 1, element_bytes: float = 2) -> int:
    """K and V of one token over ``layers`` on one GPU: each GPU keeps ``ceil(kv_heads / tp)`` heads."""
    return int(2 * layers * math.ceil(kv_heads / tp) * head_dim * element_bytes)


def concurrency(tokens: int, max_model_len: int) -> float:
    """vLLM's "Maximum concurrency for L tokens per request": cache tokens / L."""
    return tokens / max_model_len


def hybrid_concurrency(blocks: int, block_size: int, max_model_len: int, *, window: int,
                       max_num_batched_tokens: int) -> float:
    """vLLM 0.19.0's "Maximum concurrency" for a model with one full and one sliding-window
    KV-cache group sharing ``blocks``: a request needs ``ceil(L / block_size)`` blocks for the full
    group and ``ceil(min(window - 1 + max_num_batched_tokens, L) / block_size) + 1`` for the
    windowed one (a chunk of prefill can reach back a window before it)."""
    full = math.ceil(max_model_len / block_size)
    windowed = math.ceil(min(window - 1 + max_num_batched_tokens, max_model_len) / block_size) + 1
    return blocks / (full + windowed)


@dataclass(frozen=True)
class LlamaCppCache:
    """llama.cpp's KV cache as it logs it: cells per sequence, sequences, layers and bytes (the
    full-attention layers' cache; ``swa_*`` for the sliding-window layers' own, 0 without)."""

    cells: int
    seqs: int
    layers: int
    k_bytes: int
    v_bytes: int
    swa_cells: int
    swa_layers: int
    swa_bytes: int

    @property
    def size_bytes(self) -> int:
        return self.k_bytes + self.v_bytes


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


def llamacpp_cache(cfg: ModelConfig, *, n_ctx: int, n_seq: int = 1, type_k: str = "f16", type_v: str = "f16",
                   unified: bool = False, swa_full: bool = False, n_ubatch: int | None = None,
                   version: str | None = None) -> LlamaCppCache:
    """The cache llama.cpp allocates for ``cfg`` (``-c n_ctx -np n_seq -ctk type_k -ctv type_v``):
    ``n_ctx`` split over the slots (one pool when ``unified``) in cells padded to 256, each cell a K
    and a V row per layer in the cache type's bytes (q8_0: 34 per 32 values); sliding-window layers
    in their own cache of ``PAD(min(cells, window x slots + n_ubatch), 256)`` cells (all cells with
    ``swa_full``)."""
    _, _, prof = engine_profile(f"llama.cpp@{version}" if version else "llama.cpp")
    sizes = prof["type_bytes"]
    for t, flag in ((type_k, "--cache-type-k"), (type_v, "--cache-type-v")):
        require(t in sizes, f"{flag} must be one of {', '.join(sizes)}, got {show(t)}")
    require(n_ctx >= 1 and n_seq >= 1, "n_ctx and n_seq must be >= 1")
    require(not cfg.is_mla, "llama.cpp's MLA cache is not modelled")
    ubatch = n_ubatch or prof["n_ubatch"]
    cells = _pad(n_ctx, 256) if unified else _pad(max(n_ctx // n_seq, 1), 256)
    streams = 1 if unified else n_seq
    row = cfg.n_kv_heads * cfg.head_dim
    kinds = cfg.attention_layers()
    full = sum(1 for k in kinds if k != "sliding")
    swa = len(kinds) - full
    window = cfg.attn.sliding_window or 0
    swa_cells = 0
    if swa:
        swa_cells = cells if swa_full else _pad(min(cells, window * (n_seq if unified else 1) + ubatch), 256)

    def part(n_cells: int, n_layers: int, t: str) -> int:
        return int(n_cells * streams * n_layers * row * sizes[t])

    swa_bytes = part(swa_cells, swa, type_k) + part(swa_cells, swa, type_v)
    return LlamaCppCache(cells=cells, seqs=n_seq, layers=full, k_bytes=part(cells, full, type_k),
                         v_bytes=part(cells, full, type_v), swa_cells=swa_cells, swa_layers=swa, swa_bytes=swa_bytes)


@dataclass(frozen=True)
class EngineKnobs:
    """The engine's own settings (None: the profile's default). vLLM reads the first five and
    ``max_model_len``; SGLang ``mem_fraction_static`` (and ``max_model_len`` as its context length)."""

    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    block_size: int | None = None
    enforce_eager: bool = False
    mem_fraction_static: float | None = None
    max_model_len: int | None = None
    tp: int | None = None


@dataclass(frozen=True)
class EngineEstimate(Result):
    """One GPU's memory as the engine sizes it, each part as the engine logs it (bytes)."""

    engine: str
    version: str
    display: str
    tp: int
    total_bytes: int
    total_source: str
    requested_bytes: int  # vLLM: utilization x total; SGLang: fraction x total
    weights_bytes: int
    non_torch_bytes: int
    activation_bytes: int  # vLLM's profile peak; SGLang: 0 (it does not profile)
    cuda_graphs: str
    cache_bytes: int
    bytes_per_token: int
    block_size: int
    blocks: int
    tokens: int
    max_model_len: int
    context_limit: int | None
    concurrency: float
    knobs: dict[str, float | int | bool]  # the EngineKnobs given (those not None or False)
    assumptions: tuple[str, ...] = field(default=())


def engine_estimate(cfg: ModelConfig, acc: Accelerator, spec: str, *, tp: int = 1, knobs: EngineKnobs | None = None,
                    weights_dtype: str = "bf16", kv_dtype: str = "bf16", context_limit: int | None = None,
                    group_size: int | None = None) -> EngineEstimate:
    """The KV cache ``spec`` (``vllm[@VERSION]``, ``sglang``) gives ``cfg`` on one GPU of ``acc``
    at tensor parallel ``tp``: each part, the cache, its blocks and tokens, and the concurrency at
    ``max_model_len`` (the knob, else the model's ``context_limit``, else 8,192)."""
    from ffnlab.sizing.memory.activations import kv_cache
    from ffnlab.sizing.memory.parallel import check_tp
    from ffnlab.sizing.memory.quant import weight_bytes

    knobs = knobs or EngineKnobs()
    name, version, prof = engine_profile(spec)
    tp = knobs.tp or tp
    require(tp >= 1, f"tensor parallel size must be >= 1, got {tp}")
    # a launch line's -tp / --tp-size is held to --tp's rule (the layout's tp was checked with its flag)
    check_tp(cfg, tp, "--engine-config: tensor parallel size" if knobs.tp is not None else "--tp")
    total = acc.cuda_total_bytes
    weights = math.ceil(weight_bytes(cfg, weights_dtype, group_size=group_size).total / tp)
    non_torch_gib = prof.get("non_torch_gib", {"tp1": 0.0, "tp_gt_1": 0.0})
    non_torch = int(non_torch_gib["tp1" if tp == 1 else "tp_gt_1"] * GIB)
    kv = kv_cache(cfg, batch=1, context=1, kv_dtype=kv_dtype, tp=tp)
    bpt = kv.bytes_per_token
    max_len = knobs.max_model_len or context_limit or 8192
    notes = [acc.cuda_total_assumption()]
    used = {k: v for k, v in asdict(knobs).items() if knob_given(v)}
    if name == "llama.cpp":  # -c max_model_len, one slot, the cache type nearest the KV dtype
        ctype = {"fp8": "q8_0", "int8": "q8_0", "fp32": "f32"}.get(kv_dtype, "f16")
        lc = llamacpp_cache(cfg, n_ctx=max_len, type_k=ctype, type_v=ctype, version=version)
        cache = lc.size_bytes + lc.swa_bytes
        notes.append(f"llama.cpp: -c {max_len:,} -np 1, cache type {ctype}; the weights as ffnlab prices "
                     f"{weights_dtype} (a GGUF's mixed quantisation differs); compute buffers not modelled "
                     f"({prof['compute_buffers']})")
        if lc.swa_layers:
            notes.append(f"sliding-window layers: {lc.swa_cells:,} cells ({prof['sliding_window_source']})")
        return EngineEstimate(
            engine=name, version=version, display=_data()["engines"][name]["display"], tp=1, total_bytes=total,
            total_source=acc.cuda_total_assumption(), requested_bytes=weights + cache, weights_bytes=weights,
            non_torch_bytes=0, activation_bytes=0, cuda_graphs="not modelled (compute buffers as logged)",
            cache_bytes=cache, bytes_per_token=bpt, block_size=1, blocks=lc.cells * lc.seqs,
            tokens=lc.cells * lc.seqs, max_model_len=max_len, context_limit=context_limit,
            concurrency=float(lc.seqs), knobs=used, assumptions=tuple(notes))
    if name == "sglang":
        frac = knobs.mem_fraction_static
        require(frac is not None, "SGLang picks its default --mem-fraction-static by a heuristic: give "
                                  "--mem-fraction-static")
        assert frac is not None
        check_share(frac, "--mem-fraction-static")
        free_after = total - weights - non_torch
        cache = max(sglang_cache_bytes(total, frac, free_after_weights_bytes=free_after), 0)
        block, act, graphs = 1, 0, "captured inside the (1 - mem_fraction_static) share left outside the cache"
        requested = int(total * frac)
        notes.append(f"SGLang: cache = free after the weights - (1 - {frac:g}) x total; no activation profile "
                     f"({prof['cache_source']}); non-torch memory before the weights assumed as vLLM logs it")
        blocks = cache // bpt
        tokens = blocks
        conc = tokens / max_len
    else:
        util = knobs.gpu_memory_utilization if knobs.gpu_memory_utilization is not None \
            else prof["gpu_memory_utilization"]
        check_share(util, "--gpu-memory-utilization")
        block = knobs.block_size or prof["block_size"]
        seqs = knobs.max_num_seqs or prof.get("max_num_seqs", 256)
        rule = prof.get("activation")
        if rule is None:
            raise FfnlabError(f"vLLM {version} has no activation rule on record: use vllm@0.19.0")
        act = int(seqs * cfg.vocab_size * rule["bytes_per_logit"] + rule["base_gib"] * GIB)
        requested = int(total * util)
        cache = max(vllm_cache_bytes(total, util, weights_bytes=weights, activation_bytes=act,
                                     non_torch_bytes=non_torch), 0)
        graphs = ("none (--enforce-eager)" if knobs.enforce_eager else
                  ("subtracted" if prof.get("cuda_graphs_subtracted") else
                   "captured after the cache is sized, not subtracted: memory in use grows beyond "
                   f"{util:g} x total by the capture (0.7-1.9 GiB in the logs)"))
        kinds = sorted(set(cfg.attention_layers()))
        groups = len(kinds)
        blocks = int(cache // (bpt / groups * block))
        tokens = blocks // groups * block
        if groups == 2 and cfg.attn.sliding_window:
            mbt = knobs.max_num_batched_tokens or prof.get("max_num_batched_tokens", 8192)
            conc = hybrid_concurrency(blocks, block, max_len, window=cfg.attn.sliding_window,
                                      max_num_batched_tokens=mbt)
            notes.append(f"sliding-window layers sized as full layers in {groups} KV-cache groups sharing the blocks "
                         f"({prof.get('sliding_window', 'as this version does')})")
        else:
            conc = concurrency(tokens, max_len)
        notes.append(f"activation peak = {seqs:,} sequences x {cfg.vocab_size:,} vocabulary x "
                     f"{rule['bytes_per_logit']:g} B + {rule['base_gib']:g} GiB ({rule['source']}); "
                     "MoE models use more (a fused-MoE workspace not counted)")
    return EngineEstimate(
        engine=name, version=version, display=_data()["engines"][name]["display"], tp=tp, total_bytes=total,
        total_source=acc.cuda_total_assumption(), requested_bytes=requested, weights_bytes=weights,
        non_torch_bytes=non_torch, activation_bytes=act, cuda_graphs=graphs, cache_bytes=int(cache),
        bytes_per_token=bpt, block_size=block, blocks=int(blocks), tokens=int(tokens), max_model_len=max_len,
        context_limit=context_limit, concurrency=conc, knobs=used, assumptions=tuple(notes))


# the command-line flags each engine's launcher takes, and the knob each sets
_VLLM_ARGS = {"--gpu-memory-utilization": "gpu_memory_utilization",
              "--max-num-batched-tokens": "max_num_batched_tokens",
              "--max-num-seqs": "max_num_seqs", "--block-size": "block_size", "--enforce-eager": "enforce_eager",
              "--max-model-len": "max_model_len", "--tensor-parallel-size": "tp", "-tp": "tp"}
_SGLANG_ARGS = {"--mem-fraction-static": "mem_fraction_static", "--tp": "tp", "--tp-size": "tp",
                "--tensor-parallel-size": "tp", "--context-length": "max_model_len"}
_FLOAT_KNOBS = {"gpu_memory_utilization", "mem_fraction_static"}


@dataclass(frozen=True)
class EngineCommand:
    """What :func:`read_engine_command` took from a launch line."""

    engine: str
    knobs: EngineKnobs
    used: tuple[str, ...]
    ignored: tuple[str, ...]
    model: str | None


MAX_LAUNCH_WORD = 4096  # characters of one word of a launch line


def read_engine_command(text: str) -> EngineCommand:
    """The engine and its knobs from a ``vllm serve MODEL --flag v`` or ``python -m
    sglang.launch_server --model-path M --flag v`` line (backslash continuations and ``#``
    comments allowed); the flags it knows are used, the rest listed as ignored."""
    lines = [ln.split("#", 1)[0] if not ln.lstrip().startswith("#") else "" for ln in text.splitlines()]
    # shlex builds each word a character at a time (quadratic in its length): no flag or value of a
    # launch line is near this long, so a longer run of non-blanks is refused before it is split
    longest = max((len(w) for w in " ".join(lines).split()), default=0)
    require(longest <= MAX_LAUNCH_WORD, f"--engine-config: a word of {longest:,} characters (at most "
                                        f"{MAX_LAUNCH_WORD:,}): not a launch line")
    try:
        words = shlex.split(" ".join(ln.rstrip().rstrip("\\") for ln in lines))
    except ValueError as e:
        raise FfnlabError(f"--engine-config: cannot read the command line: {e}") from None
    words = [w for w in words if "=" not in w or w.startswith("-")]  # drop leading VAR=value
    if "serve" in words and any(w.endswith("vllm") for w in words[: words.index("serve")]):
        engine, table, rest = "vllm", _VLLM_ARGS, words[words.index("serve") + 1:]
    elif any("sglang.launch_server" in w or w.endswith("sglang") for w in words):
        engine, table = "sglang", _SGLANG_ARGS
        start = next(i for i, w in enumerate(words) if "sglang.launch_server" in w or w.endswith("sglang"))
        rest = words[start + 1:]
        if rest[:1] == ["serve"]:
            rest = rest[1:]
    else:
        raise FfnlabError(f"--engine-config: expected {LAUNCH_LINES} command line")
    values: dict[str, Any] = {}  # EngineKnobs' fields, named by the flag tables at run time (EngineKnobs(**values))
    used: list[str] = []
    ignored: list[str] = []
    model = None
    i = 0
    while i < len(rest):
        w = rest[i]
        flag, eq, inline = w.partition("=")
        flag = flag.replace("_", "-") if flag.startswith("--") else flag
        if not flag.startswith("-"):
            model = model or w
            ignored.append(f"{w} (the model: the command's TARGET names it)")
            i += 1
            continue
        takes_value = flag != "--enforce-eager" and not eq and i + 1 < len(rest) and not rest[i + 1].startswith("--")
        value = inline if eq else (rest[i + 1] if takes_value else None)
        i += 2 if takes_value else 1
        if flag in ("--model", "--model-path"):
            model = value
            ignored.append(f"{flag} {value} (the model: the command's TARGET names it)")
            continue
        knob = table.get(flag)
        if knob is None:
            ignored.append(flag if value is None else f"{flag} {value}")
            continue
        if knob == "enforce_eager":
            values[knob] = True
        else:
            try:  # only the parse: the range checks' FfnlabError is a ValueError too, and says more
                values[knob] = float(str(value)) if knob in _FLOAT_KNOBS else int(str(value))
            except ValueError:
                raise FfnlabError(f"--engine-config: {flag} needs a number, got {show(value)}") from None
            if knob in _FLOAT_KNOBS:
                check_share(values[knob], f"--engine-config: {flag}")
            else:
                require(1 <= values[knob] <= 2**40, f"--engine-config: {flag} must be in [1, 2**40], got "
                                                    f"{show(values[knob])}")
        used.append(flag if knob == "enforce_eager" else f"{flag} {value}")
    return EngineCommand(engine=engine, knobs=EngineKnobs(**values), used=tuple(used), ignored=tuple(ignored),
                         model=model)


__all__ = ["EngineCommand", "EngineEstimate", "EngineKnobs", "LlamaCppCache", "check_share", "engine_estimate",
           "engine_names", "knob_given",
           "llamacpp_cache", "read_engine_command", "GIB", "EngineCache", "blocks_and_tokens", "concurrency",
           "engine_profile", "hybrid_concurrency", "gqa_bytes_per_token",
           "sglang_cache_bytes", "vllm_cache_bytes"]
