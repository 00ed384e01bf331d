"""One typed configuration for a training run: model + data + train.

Read from YAML, TOML or JSON; overridden on the command line with ``--set a.b.c=value``
(the value is parsed as YAML: ``4``, ``8/3``, ``true``, ``null``); saved with every run.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict, Union, cast

from ffnlab.errors import FfnlabError, require
from ffnlab.files import YamlRefused, load_yaml, read_mapping
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, check_trainable, validate
from ffnlab.sizing.kinds import DEFAULT_KIND, default_norm, default_positions
from ffnlab.sizing.widths import make_rule, resolve_d_ff
from ffnlab.validation import SEED_MAX, Check, above, between, build, choice, one_of, show

# Train settings that may change when a run is resumed (they do not alter the trajectory;
# max_steps is not among them: the cosine schedule depends on it).
RESUMABLE_CHANGES = frozenset({"eval_every", "log_every", "checkpoint_every", "keep_last", "device", "compile",
                               "threads", "tensorboard", "peak_flops", "progress"})
# Keys that say where files live, not what is trained: a run resumes and a sweep folder reopens when
# only these differ (runs saved before the corpus cache moved say data.cache_dir: data_cache).
LOCATION_KEYS = frozenset({"data.cache_dir"})

# A config as parsed from YAML, TOML or JSON (or a --set value), before any field is checked: the
# values those formats write (YAML and TOML also read dates and times). YAML's rarer tags (!!binary,
# !!set, !!omap) and non-text keys parse too; like the dates, the field checks refuse them.
ConfigValue = Union[None, bool, int, float, str, datetime.date, datetime.time, list["ConfigValue"],
                    dict[str, "ConfigValue"]]
ConfigTree = dict[str, ConfigValue]


class FFNSectionDict(TypedDict):
    """``model.ffn`` of :meth:`RunConfig.to_dict` (the fields of :class:`FFNSection`)."""

    kind: str
    rule: str
    ratio: Union[str, float, None]
    d_ff: Union[int, None]
    multiplier: Union[str, float, None]
    multiple_of: int
    rounding: str
    bias: bool
    n_experts: int
    top_k: int
    n_shared_experts: int
    aux_loss_coef: float


class ModelSectionDict(TypedDict):
    """``model`` of :meth:`RunConfig.to_dict` (the fields of :class:`ModelSection`)."""

    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: Union[int, None]
    head_dim: Union[int, None]
    norm: Union[str, None]
    positions: Union[str, None]
    tied_embeddings: bool
    bias: bool
    rope_theta: float
    norm_eps: float
    ffn: FFNSectionDict


class DataSectionDict(TypedDict):
    """``data`` of :meth:`RunConfig.to_dict` (the fields of :class:`DataSection`)."""

    corpus: str
    tokenizer: str
    bpe_vocab_size: int
    text_column: str
    max_chars: Union[int, None]
    cache_dir: Union[str, None]


class TrainSectionDict(TypedDict):
    """``train`` of :meth:`RunConfig.to_dict` (the fields of :class:`TrainSection`)."""

    seed: int
    seq_len: int
    batch_size: int
    grad_accum: int
    max_steps: int
    lr: float
    min_lr_ratio: float
    warmup_steps: int
    weight_decay: float
    beta1: float
    beta2: float
    grad_clip: float
    eval_every: int
    eval_tokens: int
    log_every: int
    checkpoint_every: int
    keep_last: int
    device: str
    dtype: str
    compile: bool
    threads: Union[int, None]
    tensorboard: bool
    peak_flops: Union[float, None]
    progress: Union[str, bool]


class RunConfigDict(TypedDict):
    """A run config as ``config.yaml`` holds it (:meth:`RunConfig.to_dict`)."""

    model: ModelSectionDict
    data: DataSectionDict
    train: TrainSectionDict


def without_locations(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of a config dict (``RunConfig.to_dict()``, or one a sweep record read back holds,
    whatever its JSON) without :data:`LOCATION_KEYS`."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in config.items()}
    for key in LOCATION_KEYS:
        section, name = key.split(".")
        if isinstance(out.get(section), dict):
            out[section].pop(name, None)
    return out


# Field bounds: wide enough for any model this trainer can fit, narrow enough that no value
# overflows an array size or a seed (the memory pre-check in ffnlab.training.memory refuses what
# is in bounds but cannot fit this machine).
WIDTH = between(1, 2**20)
PROGRESS_MODES = ("auto", "bar", "lines", "off")
COUNT = between(1, 10**9)
SMALL = between(0, 4096)


@dataclass
class FFNSection:
    kind: str = DEFAULT_KIND
    rule: Annotated[str, one_of("explicit", "ratio", "param-matched", "llama", "golden")] = "param-matched"
    ratio: Union[str, float, None] = 4  # checked exactly by the width rule (ffnlab.validation.fraction)
    d_ff: Union[Annotated[int, WIDTH], None] = None
    multiplier: Union[str, float, None] = None
    multiple_of: Annotated[int, between(1, 2**16)] = 1
    rounding: Annotated[str, one_of("up", "nearest", "down")] = "up"
    bias: bool = False
    n_experts: Annotated[int, SMALL] = 0
    top_k: Annotated[int, SMALL] = 0
    n_shared_experts: Annotated[int, SMALL] = 0
    aux_loss_coef: Annotated[float, between(0, 1e6)] = 0.01


@dataclass
class ModelSection:
    d_model: Annotated[int, WIDTH] = 128
    n_layers: Annotated[int, between(1, 10_000)] = 4
    n_heads: Annotated[int, between(1, 2**16)] = 4
    n_kv_heads: Union[Annotated[int, between(1, 2**16)], None] = None
    head_dim: Union[Annotated[int, between(1, 2**16)], None] = None
    norm: Union[str, None] = None  # None: by FFN kind, as `ffnlab size` assumes (sizing.kinds.DEFAULT_LAYOUT)
    positions: Union[str, None] = None  # None: by FFN kind (RoPE for gated, learned for plain)
    tied_embeddings: bool = True
    bias: bool = False
    rope_theta: Annotated[float, above(0, 1e12)] = 10000.0
    norm_eps: Annotated[float, above(0, 1)] = 1e-5
    ffn: FFNSection = field(default_factory=FFNSection)


@dataclass
class DataSection:
    corpus: str = "shakespeare"
    tokenizer: Annotated[str, one_of("byte", "bpe")] = "byte"
    bpe_vocab_size: Annotated[int, WIDTH] = 4096
    text_column: str = "text"
    max_chars: Union[Annotated[int, between(1, 2**50)], None] = None
    cache_dir: Union[str, None] = None  # None: the user's cache folder (ffnlab.training.corpus.prepare)


@dataclass
class TrainSection:
    seed: Annotated[int, between(0, SEED_MAX)] = 0
    seq_len: Annotated[int, WIDTH] = 128
    batch_size: Annotated[int, WIDTH] = 16  # sequences per micro-step, summed over all processes
    grad_accum: Annotated[int, WIDTH] = 1
    max_steps: Annotated[int, COUNT] = 300
    lr: Annotated[float, above(0)] = 3e-3
    min_lr_ratio: Annotated[float, between(0, 1)] = 0.1
    warmup_steps: Annotated[int, between(0, 10**9)] = 30
    weight_decay: Annotated[float, between(0, 1e6)] = 0.1
    beta1: Annotated[float, Check(lo=0, hi=1, hi_open=True)] = 0.9
    beta2: Annotated[float, Check(lo=0, hi=1, hi_open=True)] = 0.95
    grad_clip: Annotated[float, above(0)] = 1.0
    eval_every: Annotated[int, COUNT] = 100
    eval_tokens: Annotated[int, between(1, 2**40)] = 32768
    log_every: Annotated[int, COUNT] = 10
    checkpoint_every: Annotated[int, COUNT] = 100
    keep_last: Annotated[int, between(1, 10**6)] = 2
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: Annotated[str, one_of("auto", "fp32", "bf16")] = "auto"  # auto: bf16 on CUDA, fp32 on CPU
    compile: bool = False
    threads: Union[Annotated[int, between(1, 4096)], None] = None
    tensorboard: bool = True
    peak_flops: Union[Annotated[float, above(0)], None] = None  # device peak for MFU; measured when unset
    progress: Union[str, bool] = "auto"  # auto | bar | lines | off (YAML's off/false mean off)


@dataclass
class RunConfig:
    model: ModelSection = field(default_factory=ModelSection)
    data: DataSection = field(default_factory=DataSection)
    train: TrainSection = field(default_factory=TrainSection)

    def to_dict(self) -> RunConfigDict:
        return cast(RunConfigDict, asdict(self))  # RunConfigDict mirrors the sections' fields

    def tokens_per_step(self) -> int:
        t = self.train
        return t.batch_size * t.grad_accum * t.seq_len


# -- reading ---------------------------------------------------------------------------------

def compute_dtype(dtype: str, device: str) -> str:
    """The dtype ``train.dtype`` trains in on ``device``: auto is bf16 (autocast) on CUDA, fp32 elsewhere."""
    if dtype == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    return dtype


def from_dict(data: ConfigTree | RunConfigDict) -> RunConfig:
    """The run config a parsed mapping describes, every field checked (one error line)."""
    cfg: RunConfig = build(RunConfig, data, "", "config")
    check(cfg)
    return cfg


def read_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML, TOML or JSON run config into a dict (one clear error line on failure); also
    the reader of the capacity presets (:mod:`ffnlab.experiments.capacity.design`), which check
    their own keys."""
    return read_mapping(path, "config file", empty_ok=True)


def apply_overrides(data: ConfigTree, overrides: list[str],
                    values: ConfigTree | None = None) -> ConfigTree:
    """Apply ``a.b.c=value`` overrides (values parsed as YAML), then ``values`` (dotted key ->
    a value already typed, such as a command-line flag's: set as given, never re-read as YAML, so
    ``--ratio 0x10`` stays the text the width rule refuses) to a nested dict copy."""
    import copy

    import yaml

    out = copy.deepcopy(data)
    for item in overrides:
        require("=" in item, f"--set takes KEY=VALUE (e.g. model.ffn.ratio=4), got {show(item)}")
        key, raw = item.split("=", 1)
        try:
            value = load_yaml(raw) if raw.strip() else ""  # duplicate keys and alias bombs refused too
        except YamlRefused as e:
            raise FfnlabError(f"--set {key}: {e}") from None
        except (yaml.YAMLError, ValueError, RecursionError):  # e.g. a 5,000-digit integer: kept as text
            value = raw
        _set_dotted(out, key, value)
    for key, value in (values or {}).items():
        _set_dotted(out, key, value)
    return out


def _set_dotted(out: ConfigTree, key: str, value: ConfigValue) -> None:
    """Set ``out[a][b][c] = value`` for the dotted ``key`` ``a.b.c``, making sections as needed."""
    parts = key.strip().split(".")
    require(all(parts), f"--set: bad key {show(key)}")
    node = out
    for part in parts[:-1]:
        inner = node.setdefault(part, {})
        if not isinstance(inner, dict):
            raise FfnlabError(f"--set: {key} goes through a value that is not a section")
        node = inner
    node[parts[-1]] = value


def load(path: str | Path | None = None, overrides: list[str] | None = None,
         values: ConfigTree | None = None) -> RunConfig:
    data = read_file(path) if path else {}
    return from_dict(apply_overrides(data, overrides or [], values))


def save(cfg: RunConfig, path: str | Path) -> None:
    import yaml

    from ffnlab.files import write_atomic

    write_atomic(Path(path), yaml.safe_dump(cfg.to_dict(), sort_keys=False))


# -- checking and resolving ------------------------------------------------------------------

def check(cfg: RunConfig) -> None:
    """Checks across fields (each field's type and range were checked when it was read); the
    norm and positions left unset are filled in from the FFN kind."""
    t, m = cfg.train, cfg.model
    resolve_layout(m)
    require(re.fullmatch(r"auto|cpu|cuda(:\d{1,3})?", t.device) is not None,
            f"config: train.device must be auto, cpu, cuda or cuda:N, got {show(t.device)}")
    if isinstance(t.progress, bool):
        t.progress = "auto" if t.progress else "off"
    choice(t.progress, "config: train.progress", PROGRESS_MODES)
    require(m.ffn.top_k <= max(m.ffn.n_experts, 0), f"config: model.ffn.top_k must be <= model.ffn.n_experts="
            f"{m.ffn.n_experts}, got {m.ffn.top_k}")
    check_trainable(model_config(cfg, vocab_size=256))  # shape errors surface before any data work
    corpus = cfg.data.corpus.strip() if isinstance(cfg.data.corpus, str) else ""
    if corpus.startswith("facts:"):  # its bounds checked with the config, before torch or any data work
        from ffnlab.training.corpus.facts import parse_spec

        parse_spec(corpus)


def resolve_layout(m: ModelSection) -> None:
    """Fill an unset model.norm / model.positions with the FFN kind's default."""
    if m.norm is None:
        m.norm = default_norm(m.ffn.kind)
    if m.positions is None:
        m.positions = default_positions(m.ffn.kind)


# The model settings config.yaml holds, besides those of the ModelConfig (model_config), that change
# the built model's function: build_model's keyword arguments. model.json records them under "build"
# (ffnlab.training.runfiles.check_run_model compares them with config.yaml's); train.seq_len, the
# other keyword, is the ModelConfig's max_positions.
BUILD_KEYS = ("rope_theta", "norm_eps")


def build_settings(cfg: RunConfig) -> dict[str, float]:
    """The settings of :data:`BUILD_KEYS` this run's model is built with."""
    return {key: float(getattr(cfg.model, key)) for key in BUILD_KEYS}


def prepare_data(data: DataSection, *, progress: bool = True) -> Any:
    """Tokenise (or reuse) the corpus a run config names; returns ``corpus.PreparedData``."""
    from ffnlab.training.corpus import prepare

    return prepare(data.corpus, data.tokenizer, cache_dir=data.cache_dir, bpe_vocab_size=data.bpe_vocab_size,
                   text_column=data.text_column, max_chars=data.max_chars, progress=progress)


def model_config(cfg: RunConfig, vocab_size: int) -> ModelConfig:
    """The architecture this run trains, with d_ff resolved by the width rule."""
    m, f = cfg.model, cfg.model.ffn
    resolve_layout(m)
    rule = make_rule(f.rule, ratio=f.ratio if f.rule in ("ratio", "param-matched", "llama") else None,
                     d_ff=f.d_ff if f.rule == "explicit" else None, multiplier=f.multiplier,
                     multiple_of=f.multiple_of if f.multiple_of != 1 else None, rounding=f.rounding)
    d_ff = resolve_d_ff(m.d_model, f.kind, rule)
    return validate(ModelConfig(
        d_model=m.d_model, n_layers=m.n_layers, vocab_size=vocab_size,
        ffn=FFNSpec(kind=f.kind, d_ff=d_ff, bias=f.bias, n_experts=f.n_experts, top_k=f.top_k,
                    n_shared_experts=f.n_shared_experts),
        attn=AttentionSpec(n_heads=m.n_heads, n_kv_heads=m.n_kv_heads, head_dim=m.head_dim,
                           qkv_bias=m.bias, out_bias=m.bias),
        norm=str(m.norm), positions=str(m.positions), max_positions=cfg.train.seq_len,
        tied_embeddings=m.tied_embeddings, name=f"{f.kind}-{f.rule}"))
