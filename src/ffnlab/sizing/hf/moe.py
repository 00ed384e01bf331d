"""Mixture-of-experts layouts shared by the MoE families: which layers route, and to what."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ffnlab.errors import require
from ffnlab.sizing.config import FFNSpec, ModelConfig
from ffnlab.sizing.hf.keys import ConfigKeys
from ffnlab.validation import show


def with_moe(
    cfg: ModelConfig, moe: FFNSpec, moe_layers: Iterable[int] | None = None
) -> ModelConfig:
    """Put the routed FFN ``moe`` in ``moe_layers`` (None = every layer) and keep ``cfg.ffn``,
    the dense FFN, in the others (``dense_layers``)."""
    n = cfg.n_layers
    chosen = set(range(n)) if moe_layers is None else {i for i in moe_layers if 0 <= i < n}
    if not chosen:
        return cfg
    dense = tuple(i for i in range(n) if i not in chosen)
    return replace(cfg, ffn=moe, dense_layers=dense, dense_ffn=cfg.ffn if dense else None)


def every_nth(n_layers: int, step: int, *, skip: Iterable[int] = ()) -> list[int]:
    """Layers i with (i + 1) % step == 0, less ``skip`` (Qwen-MoE decoder_sparse_step and
    mlp_only_layers)."""
    skipped = set(skip)
    return [i for i in range(n_layers) if (i + 1) % step == 0 and i not in skipped]


def layer_list(k: ConfigKeys, key: str) -> list[int] | None:
    """A config.json list of layer indices (None when absent), checked."""
    value = k.data.get(key)
    if value is None:
        return None
    ok = isinstance(value, list) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    )
    require(ok, f"config.json key {key!r} must be a list of layer indices, got {show(value)}")
    return list(value)
