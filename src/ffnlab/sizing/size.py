"""``ffnlab size``: one width rule applied to one d_model, and optionally a whole decoder.

:func:`size_summary` builds the documented JSON object (``d_ff``, ``ratio_raw``,
``ratio_param_matched``, ``ffn_params_per_layer``, ``alignment`` and, with ``n_layers``, a
``model`` object with parameters, FLOPs per token and training memory). The CLI only renders it.
"""

from __future__ import annotations

from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import FFNSpec, make_config, validate
from ffnlab.sizing.counting import count_params, ffn_params
from ffnlab.sizing.flops import flops_per_token, training_memory
from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.parallel import memory_summary
from ffnlab.sizing.widths import (
    WidthRule,
    alignment,
    check_width,
    param_matched_ratio,
    resolve_d_ff,
)


def size_summary(d_model: int, kind: str, rule: WidthRule, *, n_layers: int | None = None,
                 n_heads: int | None = None, n_kv_heads: int | None = None, vocab_size: int = 50257,
                 seq_len: int = 2048, n_experts: int = 0, top_k: int = 2, bias: bool = False,
                 dtype: str = "bf16", memory: dict[str, Any] | None = None) -> dict[str, Any]:
    """The width ``rule`` gives for ``d_model`` and ``kind``, and what it costs (``memory``: the
    keyword arguments of :func:`ffnlab.sizing.parallel.memory_summary` for ``model.memory``)."""
    check_width(d_model, "d_model")
    width = resolve_d_ff(d_model, kind, rule)
    gated = get_kind(kind).gated
    require(n_experts >= 0, f"--experts must be >= 0, got {n_experts}")
    require(not n_experts or 1 <= top_k <= n_experts, f"--top-k must be between 1 and --experts={n_experts}")
    spec = FFNSpec(kind=kind, d_ff=width, bias=bias, n_experts=n_experts, top_k=top_k if n_experts else 0)
    out: dict[str, Any] = {
        "d_model": d_model, "ffn_kind": kind, "gated": gated, "rule": rule.describe(), "d_ff": width,
        "ratio_raw": width / d_model, "ratio_param_matched": float(param_matched_ratio(d_model, width, gated)),
        "ffn_params_per_layer": ffn_params(d_model, spec),
        "alignment": alignment(width),
    }
    if n_experts:
        out["ffn_params_per_layer_active"] = ffn_params(d_model, spec, active=True)
    if n_layers is None:
        return out
    check_width(n_layers, "n_layers")
    heads = n_heads if n_heads is not None else d_model // 64
    require(heads >= 1, "d_model < 64: give --n-heads")
    cfg = validate(make_config(d_model, n_layers, heads, width, kind=kind, vocab_size=vocab_size,
                               n_kv_heads=n_kv_heads, bias=bias, n_experts=n_experts,
                               top_k=top_k if n_experts else 0, max_positions=seq_len))
    out["model"] = {
        "n_layers": n_layers, "n_heads": heads, "n_kv_heads": cfg.n_kv_heads, "vocab_size": vocab_size,
        "norm": cfg.norm, "positions": cfg.positions, "params": count_params(cfg).as_dict(),
        "flops_per_token": flops_per_token(cfg, seq_len).as_dict(), "seq_len": seq_len,
        "training_memory_bytes": training_memory(cfg, dtype).as_dict(), "dtype": dtype,
    }
    if memory is not None:
        out["model"]["memory"] = memory_summary(cfg, seq_len=seq_len, dtype=dtype, **memory)
    return out
