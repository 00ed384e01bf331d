"""Audit real models: ratios, FFN share, parameter totals, alignment and a one-line verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.hf import SUPPORTED_MODEL_TYPES, load_hf_config
from ffnlab.sizing.hf_fallback import Counter, audit_untranslated
from ffnlab.sizing.widths import alignment, param_matched_ratio
from ffnlab.sizing.zoo import ZooEntry, find, is_zoo_name

CONVENTION = 4  # the plain-MLP ratio of Vaswani et al. 2017, and the seed's "golden" law
PARITY_TOLERANCE = 0.02


def verdict(cfg: ModelConfig) -> str:
    """One line on how this FFN compares with a 4x plain MLP."""
    f = cfg.ffn
    raw = f.d_ff / cfg.d_model
    pm = float(param_matched_ratio(cfg.d_model, f.d_ff, f.gated))
    dev = pm / CONVENTION - 1
    what = f"{f.kind} {'gated ' if f.gated else ''}FFN at {raw:.3g}x"
    if f.gated:
        what += f" (= {pm:.3g}x in plain-MLP parameters)"
    if abs(dev) <= PARITY_TOLERANCE:
        line = f"{what}: matches the 4x convention in FFN parameters ({dev:+.1%})"
    else:
        line = f"{what}: {abs(dev):.0%} {'more' if dev > 0 else 'fewer'} FFN parameters than a 4x MLP"
    if f.is_moe:
        line += f"; MoE {f.n_experts} experts, top-{f.top_k} active"
    if f.d_ff % 128:
        line += f"; width not a multiple of 128 (largest power-of-two divisor {f.d_ff & -f.d_ff})"
    return line


def audit_config(cfg: ModelConfig, *, name: str, model_type: str | None, source: str | None = None,
                 family: str = "", note: str | None = None) -> dict[str, Any]:
    c = count_params(cfg)
    f = cfg.ffn
    raw = f.d_ff / cfg.d_model
    pm = float(param_matched_ratio(cfg.d_model, f.d_ff, f.gated))
    return {
        "name": name, "family": family, "model_type": model_type, "d_model": cfg.d_model, "d_ff": f.d_ff,
        "ffn_kind": f.kind, "gated": f.gated, "n_layers": cfg.n_layers + cfg.encoder_layers,
        "n_heads": cfg.attn.n_heads, "n_kv_heads": cfg.n_kv_heads, "vocab_size": cfg.vocab_size,
        "n_experts": f.n_experts, "top_k": f.top_k,
        "params_total": c.total, "params_non_embedding": c.non_embedding, "params_ffn": c.ffn,
        "params_active": c.total_active, "ffn_share": c.ffn_share,
        "ratio_raw": raw, "ratio_param_matched": pm,
        "deviation_raw": raw / CONVENTION - 1, "deviation_param_matched": pm / CONVENTION - 1,
        "alignment": alignment(f.d_ff), "verdict": verdict(cfg), "source": source, "note": note,
    }


def audit_entry(e: ZooEntry) -> dict[str, Any]:
    cfg = e.config()
    if cfg is not None:
        return audit_config(cfg, name=e.name, model_type=e.model_type, source=e.source, family=e.family,
                            note=e.note)
    est = e.estimate or {}
    d, ff = est.get("d_model"), est.get("d_ff")
    raw = ff / d if d and ff else None
    return {
        "name": e.name, "family": e.family, "model_type": None, "d_model": d, "d_ff": ff, "ffn_kind": None,
        "gated": None, "n_layers": None, "n_heads": None, "n_kv_heads": None, "vocab_size": None,
        "n_experts": None, "top_k": None, "params_total": None, "params_non_embedding": None,
        "params_ffn": None, "params_active": None, "ffn_share": None, "ratio_raw": raw,
        "ratio_param_matched": None, "deviation_raw": raw / CONVENTION - 1 if raw else None,
        "deviation_param_matched": None, "alignment": alignment(ff) if ff else None,
        "verdict": "unverifiable: no published architecture (estimate from a secondary text)",
        "source": e.source, "note": e.note,
    }


def audit(target: str, counter: Counter | None = None) -> dict[str, Any]:
    """Audit a zoo name or a path to a config.json (or a folder holding one).

    ``counter`` counts a config.json whose model_type has no translator (the ``audit`` command
    passes :func:`ffnlab.training.hf_count.count_with_transformers`); without one such a config
    is an error naming the supported types.
    """
    if is_zoo_name(target):
        return audit_entry(find(target))
    p = Path(target)
    if p.exists() or target.endswith(".json") or "/" in target:
        try:
            cfg, raw = load_hf_config(p)
        except FfnlabError:  # a model_type without a translator: transformers counts it
            row = audit_untranslated(p, SUPPORTED_MODEL_TYPES, counter)
            if row is None:
                raise
            return row
        return audit_config(cfg, name=cfg.name, model_type=raw.get("model_type"), source=str(p))
    return audit_entry(find(target))  # not a file either: find() names close zoo names
