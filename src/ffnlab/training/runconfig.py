"""One typed configuration for a training run: model + data + train.

Read from YAML, TOML or JSON; overridden on the command line with ``--set a.b.c=value``
(the value is parsed as YAML: ``4``, ``8/3``, ``true``, ``null``); saved with every run.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import types
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Union

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, check_trainable, validate
from ffnlab.sizing.widths import make_rule, resolve_d_ff

# Train settings that may change when a run is resumed (they do not alter the trajectory;
# max_steps is not among them: the cosine schedule depends on it).
RESUMABLE_CHANGES = frozenset({"eval_every", "log_every", "checkpoint_every", "keep_last", "device", "compile",
                               "threads", "tensorboard", "peak_flops", "progress"})


@dataclass
class FFNSection:
    kind: str = "swiglu"
    rule: str = "param-matched"  # explicit | ratio | param-matched | llama | golden
    ratio: Union[str, float, None] = 4
    d_ff: Union[int, None] = None
    multiplier: Union[str, float, None] = None
    multiple_of: int = 1
    rounding: str = "up"
    bias: bool = False
    n_experts: int = 0
    top_k: int = 0
    n_shared_experts: int = 0
    aux_loss_coef: float = 0.01


@dataclass
class ModelSection:
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: Union[int, None] = None
    head_dim: Union[int, None] = None
    norm: str = "rmsnorm"
    positions: str = "rope"
    tied_embeddings: bool = True
    bias: bool = False
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    ffn: FFNSection = field(default_factory=FFNSection)


@dataclass
class DataSection:
    corpus: str = "shakespeare"
    tokenizer: str = "byte"
    bpe_vocab_size: int = 4096
    text_column: str = "text"
    max_chars: Union[int, None] = None
    cache_dir: str = "data_cache"


@dataclass
class TrainSection:
    seed: int = 0
    seq_len: int = 128
    batch_size: int = 16  # sequences per micro-step, summed over all processes
    grad_accum: int = 1
    max_steps: int = 300
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 30
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    eval_every: int = 100
    eval_tokens: int = 32768
    log_every: int = 10
    checkpoint_every: int = 100
    keep_last: int = 2
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto (bf16 on CUDA, fp32 on CPU) | fp32 | bf16
    compile: bool = False
    threads: Union[int, None] = None
    tensorboard: bool = True
    peak_flops: Union[float, None] = None  # device peak for MFU; measured when unset
    progress: Union[str, bool] = "auto"  # auto | bar | lines | off (YAML's off/false mean off)


@dataclass
class RunConfig:
    model: ModelSection = field(default_factory=ModelSection)
    data: DataSection = field(default_factory=DataSection)
    train: TrainSection = field(default_factory=TrainSection)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def tokens_per_step(self) -> int:
        t = self.train
        return t.batch_size * t.grad_accum * t.seq_len


# -- reading ---------------------------------------------------------------------------------

def _type_ok(value: Any, tp: Any) -> tuple[bool, Any]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            ok, v = _type_ok(value, arg)
            if ok:
                return True, v
        return False, value
    if tp is type(None):
        return value is None, value
    if tp is bool:
        return isinstance(value, bool), value
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, float(value)
        if isinstance(value, str):  # YAML 1.1 reads 3e-4 as a string
            try:
                return True, float(value)
            except ValueError:
                return False, value
        return False, value
    if tp is str:
        return isinstance(value, str), value
    return False, value


def _describe(tp: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}
    if typing.get_origin(tp) in (Union, types.UnionType):
        return " or ".join(names.get(a, str(a)) for a in typing.get_args(tp))
    return names.get(tp, str(tp))


def _build(cls: type, data: Any, path: str) -> Any:
    require(isinstance(data, dict), f"config: {path or 'the top level'} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            raise FfnlabError(f"config: unknown key {where}" + (f" (did you mean {close[0]}?)" if close else ""))
        tp = hints[key]
        if dataclasses.is_dataclass(tp):
            kwargs[key] = _build(tp, value, where)
            continue
        ok, v = _type_ok(value, tp)
        require(ok, f"config: {where} must be {_describe(tp)}, got {value!r}")
        kwargs[key] = v
    return cls(**kwargs)


def from_dict(data: dict[str, Any]) -> RunConfig:
    cfg = _build(RunConfig, data, "")
    check(cfg)
    return cfg


def read_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML, TOML or JSON file into a dict (one clear error line on failure)."""
    p = Path(path)
    require(p.is_file(), f"config file not found: {p}")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        elif p.suffix == ".toml":
            try:
                import tomllib
            except ImportError:  # pragma: no cover - Python 3.10
                import tomli as tomllib  # type: ignore[no-redef]
            data = tomllib.loads(text)
        elif p.suffix == ".json":
            data = json.loads(text)
        else:
            raise FfnlabError(f"{p}: config files must end in .yaml, .yml, .toml or .json")
    except FfnlabError:
        raise
    except Exception as e:  # parser errors differ per format; all are the user's file
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FfnlabError(f"{p}: cannot parse ({first})") from None
    if data is None:
        data = {}
    require(isinstance(data, dict), f"{p}: the top level must be a mapping")
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``a.b.c=value`` overrides (values parsed as YAML) to a nested dict copy."""
    import copy

    import yaml

    out = copy.deepcopy(data)
    for item in overrides:
        require("=" in item, f"--set takes KEY=VALUE (e.g. model.ffn.ratio=4), got {item!r}")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        require(all(parts), f"--set: bad key {key!r}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            require(isinstance(node, dict), f"--set: {key} goes through a value that is not a section")
        node[parts[-1]] = value
    return out


def load(path: str | Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    data = read_file(path) if path else {}
    return from_dict(apply_overrides(data, overrides or []))


def save(cfg: RunConfig, path: str | Path) -> None:
    import yaml

    Path(path).write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False), encoding="utf-8")


# -- checking and resolving ------------------------------------------------------------------

def check(cfg: RunConfig) -> None:
    t, m = cfg.train, cfg.model
    for name in ("seq_len", "batch_size", "grad_accum", "max_steps", "eval_every", "eval_tokens",
                 "log_every", "checkpoint_every", "keep_last"):
        require(getattr(t, name) >= 1, f"config: train.{name} must be >= 1, got {getattr(t, name)}")
    require(t.lr > 0, f"config: train.lr must be > 0, got {t.lr}")
    require(0 <= t.min_lr_ratio <= 1, "config: train.min_lr_ratio must be in [0, 1]")
    require(t.warmup_steps >= 0, "config: train.warmup_steps must be >= 0")
    require(t.dtype in ("auto", "fp32", "bf16"), f"config: train.dtype must be auto, fp32 or bf16, got {t.dtype!r}")
    require(0 <= t.beta1 < 1 and 0 <= t.beta2 < 1, "config: train.beta1 and train.beta2 must be in [0, 1)")
    require(t.weight_decay >= 0 and t.grad_clip > 0, "config: train.weight_decay must be >= 0 and train.grad_clip > 0")
    require(re.fullmatch(r"auto|cpu|cuda(:\d+)?", t.device) is not None,
            f"config: train.device must be auto, cpu, cuda or cuda:N, got {t.device!r}")
    if isinstance(t.progress, bool):
        t.progress = "auto" if t.progress else "off"
    require(t.progress in ("auto", "bar", "lines", "off"), "config: train.progress must be auto, bar, lines or off")
    require(t.threads is None or t.threads >= 1, "config: train.threads must be >= 1")
    require(cfg.data.tokenizer in ("byte", "bpe"), f"config: data.tokenizer must be byte or bpe, got {cfg.data.tokenizer!r}")
    require(m.ffn.aux_loss_coef >= 0, "config: model.ffn.aux_loss_coef must be >= 0")
    check_trainable(model_config(cfg, vocab_size=256))  # shape errors surface before any data work


def prepare_data(data: DataSection, *, progress: bool = True) -> Any:
    """Tokenise (or reuse) the corpus a run config names; returns ``corpus.PreparedData``."""
    from ffnlab.training.corpus import prepare

    return prepare(data.corpus, data.tokenizer, cache_dir=data.cache_dir, bpe_vocab_size=data.bpe_vocab_size,
                   text_column=data.text_column, max_chars=data.max_chars, progress=progress)


def model_config(cfg: RunConfig, vocab_size: int) -> ModelConfig:
    """The architecture this run trains, with d_ff resolved by the width rule."""
    m, f = cfg.model, cfg.model.ffn
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
        norm=m.norm, positions=m.positions, max_positions=cfg.train.seq_len,
        tied_embeddings=m.tied_embeddings, name=f"{f.kind}-{f.rule}"))
